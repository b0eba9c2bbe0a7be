/**
 * The Live tap page's data: the page's URL query as a tap API request (checked with the tap component's own
 * validation) plus the filters the proxies cannot apply (status, identity), and the tap API's per-event
 * lines folded into one row per request (method, path, status, identities, latency). Pure.
 */
import type { TapEventJson, TapLine } from "../tap/event_json.ts";
import { parseTapRequest, TapRequestError } from "../tap/request.ts";

/** Requests shown per tap when the query names no limit, and the most one may ask for. */
export const DEFAULT_LIMIT = 1000;
export const MAX_LIMIT = 10_000;
/** How long a tap runs when the query names no duration, and the longest allowed (seconds). */
export const DEFAULT_DURATION_S = 60;
export const MAX_DURATION_S = 600;
/** Requests waiting for their response; beyond, the oldest is forgotten (a hostile or stuck peer). */
export const MAX_PENDING = 2000;

const PARAMS = [
  "ns",
  "resource",
  "to",
  "toNamespace",
  "path",
  "method",
  "authority",
  "status",
  "identity",
  "limit",
  "duration",
];

export class TapQueryError extends Error {
  override name = "TapQueryError";
}

export interface RowFilters {
  /** `200` exactly, or a class such as `5xx`. */
  status?: string;
  /** Part of the client or server identity. */
  identity?: string;
}

export interface TapQuery {
  /** The tap API's request body. */
  body: Record<string, unknown>;
  filters: RowFilters;
  durationS: number;
}

function whole(text: string | null, name: string, dflt: number, max: number): number {
  if (text === null || text === "") return dflt;
  if (!/^\d+$/.test(text) || Number(text) < 1) {
    throw new TapQueryError(`${name}: "${text}" is not a whole number of at least 1`);
  }
  const n = Number(text);
  if (n > max) throw new TapQueryError(`${name}: ${n} is above the maximum ${max}`);
  return n;
}

/** `?ns=…&resource=deploy/web&path=/api&method=GET&status=5xx&identity=web.&limit=100&duration=30`. */
export function parseTapQuery(q: URLSearchParams): TapQuery {
  for (const k of q.keys()) {
    if (!PARAMS.includes(k)) throw new TapQueryError(`${k}: unknown parameter (known: ${PARAMS.join(", ")})`);
  }
  const get = (k: string) => q.get(k) || undefined;
  const status = get("status");
  if (status !== undefined && !/^[1-5](\d\d|xx)$/.test(status)) {
    throw new TapQueryError(`status: "${status}" is not an HTTP status (200) or class (5xx)`);
  }
  const identity = get("identity");
  if (identity !== undefined && (identity.length > 253 || !/^[a-z0-9.-]+$/.test(identity))) {
    throw new TapQueryError(`identity: "${identity.slice(0, 60)}" is not part of a mesh identity`);
  }
  const resource = get("resource");
  if (!resource) throw new TapQueryError("resource: required, e.g. deploy/web");
  const body: Record<string, unknown> = {
    namespace: get("ns") ?? "default",
    resource,
    limit: whole(q.get("limit"), "limit", DEFAULT_LIMIT, MAX_LIMIT),
  };
  for (
    const [param, field] of [["to", "to"], ["toNamespace", "toNamespace"], ["path", "path"], [
      "method",
      "method",
    ], [
      "authority",
      "authority",
    ]]
  ) {
    const v = get(param);
    if (v !== undefined) body[field] = v;
  }
  try {
    parseTapRequest(body);
  } catch (e) {
    if (e instanceof TapRequestError) throw new TapQueryError(e.message);
    throw e;
  }
  return {
    body,
    filters: { ...(status ? { status } : {}), ...(identity ? { identity } : {}) },
    durationS: whole(q.get("duration"), "duration", DEFAULT_DURATION_S, MAX_DURATION_S),
  };
}

export interface TapRow {
  /** The tap's stream id (`base:stream`), unique within one tap. */
  id: string;
  /** `ns/name` of the pod whose proxy saw it. */
  pod: string;
  direction: TapEventJson["direction"];
  method: string;
  authority: string;
  path: string;
  src: string;
  dst: string;
  /** The client's identity (seen by a server proxy) and the server's (verified by a client proxy), or "". */
  srcIdentity: string;
  dstIdentity: string;
  /** TLS of the remote side as the proxy recorded it (`true`, or why not). */
  tls: string;
  status?: number;
  latencyUs?: number;
  durationUs?: number;
  responseBytes?: number;
  grpcStatus?: number;
  /** True once the request's last event arrived. */
  done: boolean;
}

export function statusMatches(filter: string, status: number | undefined): boolean {
  if (status === undefined) return false;
  const s = String(status);
  return filter.endsWith("xx") ? s[0] === filter[0] : s === filter;
}

export function rowMatches(f: RowFilters, r: TapRow): boolean {
  if (f.status !== undefined && !statusMatches(f.status, r.status)) return false;
  if (
    f.identity !== undefined && !r.srcIdentity.includes(f.identity) && !r.dstIdentity.includes(f.identity)
  ) {
    return false;
  }
  return true;
}

/**
 * Folds the tap API's lines into rows. A request becomes a row when its response head arrives (the status
 * filter needs it) or, for a request that failed without one, at its end; its end updates the row. Returns
 * the rows to send for each line (none while a request waits, or when the filters leave it out).
 */
export class TapRows {
  readonly #pending = new Map<string, TapRow>();
  /** Rows shown and not yet ended, so the end of a row left out is not sent either. */
  readonly #shown = new Map<string, TapRow>();

  constructor(readonly filters: RowFilters, readonly maxPending = MAX_PENDING) {}

  get pending(): number {
    return this.#pending.size + this.#shown.size;
  }

  push(line: TapLine): TapRow[] {
    if (!("event" in line)) return [];
    const e = line.event;
    const h = e.http;
    const key = `${e.pod} ${h.id}`;
    if (h.kind === "request") {
      this.#remember(this.#pending, key, {
        id: h.id,
        pod: e.pod,
        direction: e.direction,
        method: h.method,
        authority: h.authority,
        path: h.path,
        src: e.source,
        dst: e.destination,
        srcIdentity: e.sourceLabels.client_id ?? "",
        dstIdentity: e.destinationLabels.server_id ?? "",
        tls: (e.direction === "outbound" ? e.destinationLabels.tls : e.sourceLabels.tls) ?? "",
        done: false,
      });
      return [];
    }
    if (h.kind === "response") {
      const r = this.#pending.get(key);
      if (!r) return [];
      this.#pending.delete(key);
      r.status = h.status;
      r.latencyUs = h.sinceRequestInitUs;
      if (!rowMatches(this.filters, r)) return [];
      this.#remember(this.#shown, key, r);
      return [{ ...r }];
    }
    const r = this.#shown.get(key) ?? this.#pending.get(key);
    if (!r) return [];
    const wasShown = this.#shown.delete(key);
    this.#pending.delete(key);
    r.done = true;
    r.durationUs = h.sinceRequestInitUs;
    r.responseBytes = h.responseBytes;
    if (h.grpcStatus !== undefined) r.grpcStatus = h.grpcStatus;
    if (wasShown || rowMatches(this.filters, r)) return [{ ...r }];
    return [];
  }

  #remember(m: Map<string, TapRow>, key: string, r: TapRow): void {
    m.set(key, r);
    // Maps iterate in insertion order: the first key is the oldest.
    while (m.size > this.maxPending) m.delete(m.keys().next().value!);
  }
}
