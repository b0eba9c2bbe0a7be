/**
 * Linkerd's per-route families of outbound policy routes (linkerd2-proxy's
 * `outbound_{http,grpc}_route_*`):
 *
 * - `…_request_duration_seconds` (histogram, buckets 0.05, 0.5, 1, 10) and
 *   `…_request_statuses_total` per parent × route × hostname: one per logical request, from its
 *   arrival to the end of its response stream, retries included;
 * - `…_backend_requests_total`, `…_backend_response_duration_seconds` (buckets 0.025 … 10) and
 *   `…_backend_response_statuses_total` per parent × route × backend: one per attempt sent to a
 *   backend;
 * - `…_retry_{requests,successes,limit_exceeded,overflow}_total` per parent × route × hostname,
 *   exported (zeros included) for routes with a retry policy.
 *
 * Statuses carry `http_status` (gRPC: `grpc_status` by name) or, when the proxy failed the stream
 * itself, `error` with Linkerd's values (FAIL_FAST, LOAD_SHED, …). Handles are looked up once per
 * route, hostname and backend and kept by the caller, so a request costs field increments and no
 * label work.
 */
import type { MetricSample, Registry } from "./registry.ts";
import { Family } from "./http_families.ts";
import type { L4RouteRef } from "./l4_route_metrics.ts";
import type { HeaderList } from "../http/message.ts";

export const ROUTE_REQUEST_BUCKETS_S: readonly number[] = [0.05, 0.5, 1, 10];
export const ROUTE_BACKEND_RESPONSE_BUCKETS_S: readonly number[] = [0.025, 0.05, 0.1, 0.25, 0.5, 1, 10];

/** tonic's names of the gRPC codes (0..16); any other code is UNKNOWN, as in Linkerd. */
const GRPC_NAMES = [
  "OK",
  "CANCELLED",
  "UNKNOWN",
  "INVALID_ARGUMENT",
  "DEADLINE_EXCEEDED",
  "NOT_FOUND",
  "ALREADY_EXISTS",
  "PERMISSION_DENIED",
  "RESOURCE_EXHAUSTED",
  "FAILED_PRECONDITION",
  "ABORTED",
  "OUT_OF_RANGE",
  "UNIMPLEMENTED",
  "INTERNAL",
  "UNAVAILABLE",
  "DATA_LOSS",
  "UNAUTHENTICATED",
];
const GRPC_UNKNOWN = 2;

/** The `error` label for a stream the proxy failed itself (Linkerd's route error values). */
export function routeErrorLabel(e: unknown): string {
  switch ((e as { reason?: unknown })?.reason) {
    case "failfast":
    case "no_endpoints":
      return "FAIL_FAST";
    case "queue_full":
      return "LOAD_SHED";
    case "timeout":
      return "REQUEST_TIMEOUT";
    case "reset":
      return "RESET";
    case "refused":
      return "REFUSED";
    case "cancelled":
    case "cancel":
      return "CANCEL";
    case "connect_failed":
    case "connection_lost":
    case "closed":
      return "IO";
    default:
      return "UNKNOWN";
  }
}

type LabelMap = Record<string, string>;

/** `<scope>_group/kind/namespace/name/port/section_name`, as Linkerd writes service metadata. */
export function metaLabels(out: LabelMap, scope: string, m: L4RouteRef): LabelMap {
  out[`${scope}_group`] = m.group;
  out[`${scope}_kind`] = m.kind;
  out[`${scope}_namespace`] = m.namespace;
  out[`${scope}_name`] = m.name;
  out[`${scope}_port`] = m.port ? String(m.port) : "";
  out[`${scope}_section_name`] = m.section ?? "";
  return out;
}

/** Parent labels, then the route's group, kind, namespace and name (Linkerd gives routes no port). */
function routeLabels(parent: L4RouteRef, route: L4RouteRef): LabelMap {
  const out = metaLabels({}, "parent", parent);
  out.route_group = route.group;
  out.route_kind = route.kind;
  out.route_namespace = route.namespace;
  out.route_name = route.name;
  return out;
}

/** The histogram and status counts of one label set. */
export class StreamSeries {
  /** Per-bucket counts (not cumulative); the last slot is +Inf. */
  readonly buckets: Float64Array;
  sum = 0;
  count = 0;
  /** Backend families only: attempts dispatched. */
  requests = 0;
  /** By status code (HTTP status, or gRPC code); -1 is "no status". */
  readonly statuses = new Map<number, number>();
  /** Failed streams: `${status}\u0000${error}` → count (rare, so a string key is fine). */
  errors: Map<string, number> | undefined;
  /** Route families only: the route has a retry policy (its retry series are exported). */
  retryable = false;
  readonly retries = { requests: 0, successes: 0, limit_exceeded: 0, overflow: 0 };

  constructor(
    readonly labels: Readonly<LabelMap>,
    readonly bounds: readonly number[],
    readonly grpc: boolean,
  ) {
    this.buckets = new Float64Array(bounds.length + 1);
  }

  /** One ended stream: `status` (HTTP or gRPC code, -1 none), `error` ("" none), `seconds` long. */
  record(status: number, error: string, seconds: number): void {
    const b = this.bounds;
    let i = 0;
    while (i < b.length && seconds > b[i]) i++;
    this.buckets[i]++;
    this.sum += seconds;
    this.count++;
    if (error === "") this.statuses.set(status, (this.statuses.get(status) ?? 0) + 1);
    else {
      const m = this.errors ??= new Map();
      const k = `${status}\u0000${error}`;
      m.set(k, (m.get(k) ?? 0) + 1);
    }
  }

  /** Ends a stream from its response: HTTP status, or the gRPC status of headers or trailers. */
  recordResponse(
    httpStatus: number,
    trailers: HeaderList | undefined,
    headers: HeaderList,
    seconds: number,
  ): void {
    this.record(this.grpc ? grpcCode(trailers, headers) : httpStatus, "", seconds);
  }

  /** Ends a stream that failed (no response, or an HTTP body that failed after `status`). */
  recordError(e: unknown, seconds: number, status = -1): void {
    this.record(this.grpc ? -1 : status, routeErrorLabel(e), seconds);
  }
}

function grpcCode(trailers: HeaderList | undefined, headers: HeaderList): number {
  const v = trailers?.get("grpc-status") ?? headers.get("grpc-status");
  if (v === undefined) return GRPC_UNKNOWN;
  const n = Number(v);
  return Number.isInteger(n) && n >= 0 && n < GRPC_NAMES.length ? n : GRPC_UNKNOWN;
}

/** One protocol's route families (`outbound_http_route_*` or `outbound_grpc_route_*`). */
class RouteFamilies {
  readonly routes = new Map<string, StreamSeries>();
  readonly backends = new Map<string, StreamSeries>();

  constructor(registry: Registry, readonly prefix: string, readonly grpc: boolean) {
    const statusOf = grpc
      ? (code: number, error: string): LabelMap => ({ grpc_status: GRPC_NAMES[code] ?? "UNKNOWN", error })
      : (code: number, error: string): LabelMap => ({ http_status: code < 0 ? "" : String(code), error });
    const reg = (name: string, help: string, type: "counter" | "histogram", f: () => MetricSample[]) =>
      registry.registerMetric(new Family(`${prefix}_${name}`, help, type, f));
    reg(
      "request_duration_seconds",
      "The time between request initialization and response completion",
      "histogram",
      () => histogram(`${prefix}_request_duration_seconds`, this.routes),
    );
    reg(
      "request_statuses_total",
      "Completed request-response streams",
      "counter",
      () => statuses(this.routes, statusOf),
    );
    const retryHelp: [keyof StreamSeries["retries"], string][] = [
      ["limit_exceeded", "Retryable requests not sent due to retry limits"],
      ["overflow", "Retryable requests not sent due to circuit breakers"],
      ["requests", "Retry requests emitted"],
      ["successes", "Successful responses to retry requests"],
    ];
    for (const [k, help] of retryHelp) {
      reg(`retry_${k}_total`, help, "counter", () => {
        const out: MetricSample[] = [];
        for (const s of this.routes.values()) {
          if (s.retryable) out.push({ value: s.retries[k], labels: s.labels });
        }
        return out;
      });
    }
    reg("backend_requests_total", "The total number of requests dispatched", "counter", () => {
      const out: MetricSample[] = [];
      for (const s of this.backends.values()) {
        if (s.requests > 0) out.push({ value: s.requests, labels: s.labels });
      }
      return out;
    });
    reg(
      "backend_response_duration_seconds",
      "The time between request completion and response completion",
      "histogram",
      () => histogram(`${prefix}_backend_response_duration_seconds`, this.backends),
    );
    reg(
      "backend_response_statuses_total",
      "Completed responses",
      "counter",
      () => statuses(this.backends, statusOf),
    );
  }
}

function histogram(name: string, series: Map<string, StreamSeries>): MetricSample[] {
  const out: MetricSample[] = [];
  for (const s of series.values()) {
    if (s.count === 0) continue;
    let acc = 0;
    for (let i = 0; i < s.bounds.length; i++) {
      acc += s.buckets[i];
      out.push({
        metricName: `${name}_bucket`,
        value: acc,
        labels: { ...s.labels, le: String(s.bounds[i]) },
      });
    }
    out.push({ metricName: `${name}_bucket`, value: s.count, labels: { ...s.labels, le: "+Inf" } });
    out.push({ metricName: `${name}_sum`, value: s.sum, labels: s.labels });
    out.push({ metricName: `${name}_count`, value: s.count, labels: s.labels });
  }
  return out;
}

function statuses(
  series: Map<string, StreamSeries>,
  statusOf: (code: number, error: string) => LabelMap,
): MetricSample[] {
  const out: MetricSample[] = [];
  for (const s of series.values()) {
    for (const [code, n] of s.statuses) {
      out.push({ value: n, labels: { ...s.labels, ...statusOf(code, "") } });
    }
    for (const [k, n] of s.errors ?? []) {
      const i = k.indexOf("\u0000");
      out.push({ value: n, labels: { ...s.labels, ...statusOf(Number(k.slice(0, i)), k.slice(i + 1)) } });
    }
  }
  return out;
}

function keyOf(labels: LabelMap): string {
  let k = "";
  for (const n in labels) k += `${labels[n]}\u0000`;
  return k;
}

export class HttpRouteMetrics {
  readonly #http: RouteFamilies;
  readonly #grpc: RouteFamilies;

  constructor(registry: Registry) {
    this.#http = new RouteFamilies(registry, "outbound_http_route", false);
    this.#grpc = new RouteFamilies(registry, "outbound_grpc_route", true);
  }

  /** The series of a route for requests to `hostname` (the request's host, lowercase). */
  route(parent: L4RouteRef, route: L4RouteRef, hostname: string, grpc: boolean): StreamSeries {
    const f = grpc ? this.#grpc : this.#http;
    const labels = routeLabels(parent, route);
    labels.hostname = hostname;
    const key = keyOf(labels);
    let s = f.routes.get(key);
    if (!s) f.routes.set(key, s = new StreamSeries(labels, ROUTE_REQUEST_BUCKETS_S, grpc));
    return s;
  }

  /** The series of one backend of a route. */
  backend(parent: L4RouteRef, route: L4RouteRef, backend: L4RouteRef, grpc: boolean): StreamSeries {
    const f = grpc ? this.#grpc : this.#http;
    const labels = metaLabels(routeLabels(parent, route), "backend", backend);
    const key = keyOf(labels);
    let s = f.backends.get(key);
    if (!s) f.backends.set(key, s = new StreamSeries(labels, ROUTE_BACKEND_RESPONSE_BUCKETS_S, grpc));
    return s;
  }
}

/** The host of an authority (`host[:port]`, `[v6]:port`), lowercase. */
export function hostOf(authority: string): string {
  let h = authority;
  if (h.startsWith("[")) {
    const end = h.indexOf("]");
    return (end > 0 ? h.slice(1, end) : h).toLowerCase();
  }
  const i = h.lastIndexOf(":");
  if (i >= 0 && /^[0-9]*$/.test(h.slice(i + 1))) h = h.slice(0, i);
  return h.toLowerCase();
}
