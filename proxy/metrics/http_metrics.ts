/**
 * Linkerd's proxy HTTP metrics, with Linkerd's names, labels and latency buckets so its dashboards,
 * `linkerd viz stat` queries and alerts work unchanged:
 *
 *   request_total, response_total, response_latency_ms            per endpoint (both directions)
 *   route_request_total, route_response_total, route_response_latency_ms   per profile route
 *   route_actual_request_total, route_actual_response_total        per attempt (retries included)
 *   route_retryable_total (+ skipped="no_budget")                  retryable responses
 *   inbound_http_authz_allow_total, inbound_http_authz_deny_total, inbound_http_route_not_found_total
 *   inbound_http_errors_total, outbound_http_errors_total          requests the proxy failed itself
 *
 * Hot path: the stacks resolve a labelled handle (`RequestMetrics`, `CounterHandle`) once per
 * endpoint / route / connection and keep it; a request then costs one small recorder object and a
 * few number increments. Label objects and text are built only when a handle is created and at
 * scrape time. Series idle longer than `retainIdleMs` (Linkerd's default: 10 minutes) are dropped
 * at scrape, so client-chosen authorities cannot grow memory without bound.
 */
import type { MetricFamily, MetricSample, MetricSnapshot, Registry } from "./registry.ts";
import type { Body, HeaderList, HttpRequest, HttpResponse, HttpService } from "../http/message.ts";
import { isGrpc } from "../http/message.ts";
import { BodyTap } from "../http/body_tap.ts";
import {
  isGrpcFailure,
  ResponseClassification,
  type ResponseClassifier,
  streamErrorLabel,
} from "./response_class.ts";

/**
 * `response_latency_ms` bucket upper bounds in whole milliseconds (inclusive), as linkerd2-proxy's
 * `linkerd/metrics/src/latency.rs` (current version; older proxies had 25 buckets 1..50000).
 * Latencies are truncated to whole milliseconds before bucketing, as Linkerd does.
 */
export const LATENCY_BOUNDS_MS: readonly number[] = [1, 10, 50, 100, 200, 300, 400, 500, 1000, 5000, 10000];

/** Linkerd's default `LINKERD2_PROXY_METRICS_RETAIN_IDLE`. */
export const DEFAULT_RETAIN_IDLE_MS = 10 * 60_000;

/** A policy resource reference as it appears in labels (`srv_*`, `route_*`, `authz_*`). */
export interface PolicyRef {
  readonly group: string;
  readonly kind: string;
  readonly name: string;
}

/**
 * TLS labels of the connection, as the TCP metrics build them: `{tls: "true", client_id}` /
 * `{tls: "true", server_id}` or `{tls: "no_identity", no_tls_reason}`. Order is kept.
 */
export type TlsLabels = Readonly<Record<string, string>>;

export interface InboundLabels {
  /** Host / :authority of the request; omitted from the labels when empty. */
  authority?: string;
  /** The original destination, "ip:port" or "[v6]:port". */
  targetAddr: string;
  tls: TlsLabels;
  server: PolicyRef;
  route: PolicyRef;
  authz: PolicyRef;
}

export interface OutboundLabels {
  authority?: string;
  targetAddr: string;
  tls: TlsLabels;
  /**
   * The endpoint's metric labels from Destination (address-set labels merged with the address's
   * own), unprefixed: `{namespace, service, pod, serviceaccount, …}` → `dst_namespace`, ….
   */
  dst?: Readonly<Record<string, string>>;
}

export interface RouteLabels {
  direction: "inbound" | "outbound";
  /** The logical destination (profile name with port, e.g. "web.ns.svc.cluster.local:80"). */
  dst: string;
  /** The profile route's `metrics_labels` (e.g. `{route: "GET /books"}`), exported as `rt_<key>`. */
  labels?: Readonly<Record<string, string>>;
}

type Labels = Record<string, string>;

function targetLabels(out: Labels, targetAddr: string): void {
  const i = targetAddr.lastIndexOf(":");
  let ip = i < 0 ? targetAddr : targetAddr.slice(0, i);
  if (ip.startsWith("[") && ip.endsWith("]")) ip = ip.slice(1, -1);
  out.target_addr = targetAddr;
  out.target_ip = ip;
  out.target_port = i < 0 ? "" : targetAddr.slice(i + 1);
}

function policyLabels(out: Labels, prefix: string, ref: PolicyRef): void {
  out[`${prefix}_group`] = ref.group;
  out[`${prefix}_kind`] = ref.kind;
  out[`${prefix}_name`] = ref.name;
}

function copyInto(out: Labels, from: Readonly<Record<string, string>>): void {
  for (const k in from) out[k] = from[k];
}

function sortedPrefixed(
  out: Labels,
  prefix: string,
  from: Readonly<Record<string, string>> | undefined,
): void {
  if (!from) return;
  for (const k of Object.keys(from).sort()) out[`${prefix}${k}`] = from[k];
}

function keyOf(labels: Labels): string {
  let k = "";
  for (const n in labels) k += `${n}\u0000${labels[n]}\u0001`;
  return k;
}

/** A counter for one label set; `inc` is a field increment. */
export class CounterHandle {
  value = 0;
  lastUpdate = 0;
  /** @internal */ evicted = false;
  readonly labels: Readonly<Labels>;
  #family: CounterFamily;

  constructor(family: CounterFamily, labels: Labels) {
    this.#family = family;
    this.labels = labels;
  }

  inc(n = 1): void {
    if (this.evicted) this.#family.revive(this);
    this.value += n;
    this.lastUpdate = this.#family.now();
  }
}

/** A metric family read straight from handles at scrape time. */
class Family implements MetricFamily {
  constructor(
    readonly name: string,
    readonly help: string,
    readonly type: "counter" | "histogram",
    private readonly collect: () => MetricSample[],
  ) {}

  get(): MetricSnapshot {
    return { name: this.name, help: this.help, type: this.type, values: this.collect() };
  }
}

function register(registry: Registry, f: Family): void {
  registry.registerMetric(f);
}

/** Counters keyed by label set, with idle eviction at scrape. */
class CounterFamily {
  readonly handles = new Map<string, CounterHandle>();

  constructor(
    registry: Registry,
    name: string,
    help: string,
    readonly now: () => number,
    private readonly retainIdleMs: number,
  ) {
    register(registry, new Family(name, help, "counter", () => this.#values()));
  }

  get(labels: Labels): CounterHandle {
    const key = keyOf(labels);
    let h = this.handles.get(key);
    if (!h) {
      h = new CounterHandle(this, labels);
      h.lastUpdate = this.now();
      this.handles.set(key, h);
    }
    return h;
  }

  /** An evicted handle counts again: export it again (with the counts of any re-created twin). */
  revive(h: CounterHandle): void {
    h.evicted = false;
    const key = keyOf(h.labels as Labels);
    const cur = this.handles.get(key);
    if (cur !== undefined && cur !== h) {
      h.value += cur.value;
      cur.evicted = true;
    }
    this.handles.set(key, h);
  }

  #values(): MetricSample[] {
    const out: MetricSample[] = [];
    const idleBefore = this.now() - this.retainIdleMs;
    for (const [key, h] of this.handles) {
      if (h.lastUpdate < idleBefore) {
        h.evicted = true;
        this.handles.delete(key);
        continue;
      }
      if (h.value > 0) out.push({ value: h.value, labels: h.labels });
    }
    return out;
  }
}

/** Response counts and latency for one status code of one target. */
class StatusSeries {
  readonly latency: Float64Array;
  latencySum = 0;
  latencyCount = 0;
  success = 0;
  failure = 0;
  /** grpc[code] for codes 0..16, indexes success/failure by isGrpcFailure. */
  readonly grpc = new Float64Array(17);
  otherGrpc: Map<number, number> | undefined;
  errors: Map<string, number> | undefined;

  constructor(readonly status: number, withLatency: boolean) {
    this.latency = new Float64Array(withLatency ? LATENCY_BOUNDS_MS.length + 1 : 0);
  }
}

/**
 * The labelled handle for one target label set (an endpoint × authority, or a route). Keep it
 * and call `start` per request.
 */
export class RequestMetrics {
  readonly labels: Readonly<Labels>;
  requests = 0;
  lastUpdate = 0;
  /** @internal */ evicted = false;
  #family: RequestFamilies;
  #statuses = new Map<number, StatusSeries>();
  #last: StatusSeries | undefined;

  constructor(family: RequestFamilies, labels: Labels) {
    this.#family = family;
    this.labels = labels;
  }

  /**
   * Counts the request and returns its recorder. `grpc` is whether the request is gRPC
   * (`isGrpc(req.headers)`); `classifier` is the profile route's response classes, if any; `at`
   * is the time the request's head was read, when the caller has it already (saves a clock read).
   */
  start(grpc: boolean, classifier?: ResponseClassifier, at?: number): RequestRecorder {
    const now = at ?? this.#family.now();
    if (this.evicted) this.#family.revive(this);
    this.requests++;
    this.lastUpdate = now;
    return new RequestRecorder(this, now, grpc, classifier);
  }

  /** @internal */
  now(): number {
    return this.#family.now();
  }

  /** @internal */
  status(code: number): StatusSeries {
    const last = this.#last;
    if (last !== undefined && last.status === code) return last;
    let s = this.#statuses.get(code);
    if (!s) {
      s = new StatusSeries(code, this.#family.withLatency);
      this.#statuses.set(code, s);
    }
    this.#last = s;
    return s;
  }

  /** @internal */
  observeLatency(status: number, ms: number): void {
    const s = this.status(status);
    // Whole milliseconds, compared inclusively against each bound (as Linkerd's Ms histogram).
    const v = Math.floor(ms);
    const bounds = LATENCY_BOUNDS_MS;
    let i = 0;
    while (i < bounds.length && v > bounds[i]) i++;
    s.latency[i]++;
    s.latencySum += v;
    s.latencyCount++;
  }

  /** @internal */
  countResponse(c: ResponseClassification): void {
    const s = this.status(c.status);
    if (c.error !== "") {
      const m = s.errors ??= new Map();
      m.set(c.error, (m.get(c.error) ?? 0) + 1);
    } else if (c.grpcStatus >= 0) {
      if (c.grpcStatus < 17) s.grpc[c.grpcStatus]++;
      else {
        const m = s.otherGrpc ??= new Map();
        m.set(c.grpcStatus, (m.get(c.grpcStatus) ?? 0) + 1);
      }
    } else if (c.failure) s.failure++;
    else s.success++;
  }

  /** @internal */
  get statuses(): Iterable<StatusSeries> {
    return this.#statuses.values();
  }

  /** @internal Adds another handle's counts (same labels) into this one. */
  absorb(o: RequestMetrics): void {
    this.requests += o.requests;
    for (const src of o.statuses) {
      const dst = this.status(src.status);
      for (let i = 0; i < dst.latency.length; i++) dst.latency[i] += src.latency[i];
      dst.latencySum += src.latencySum;
      dst.latencyCount += src.latencyCount;
      dst.success += src.success;
      dst.failure += src.failure;
      for (let i = 0; i < 17; i++) dst.grpc[i] += src.grpc[i];
      for (const [k, v] of src.otherGrpc ?? []) {
        (dst.otherGrpc ??= new Map()).set(k, (dst.otherGrpc.get(k) ?? 0) + v);
      }
      for (const [k, v] of src.errors ?? []) (dst.errors ??= new Map()).set(k, (dst.errors.get(k) ?? 0) + v);
    }
  }
}

/**
 * One request's measurement: `head` when the response head arrives, `firstByte` at the first body
 * chunk (time to first byte: `response_latency_ms`), then `end(trailers)` or `streamError`/`fail`.
 * `end`/`streamError` record the latency too when `firstByte` was not called (empty bodies). A
 * failure before any response (`fail` without `head`) counts a response with `status_code=""`
 * and no latency, as Linkerd does. Calls after the end are ignored.
 */
export class RequestRecorder extends ResponseClassification {
  #m: RequestMetrics;
  #t0: number;
  #latencyDone = false;
  #done = false;

  constructor(m: RequestMetrics, t0: number, grpc: boolean, classifier: ResponseClassifier | undefined) {
    super(grpc, classifier);
    this.#m = m;
    this.#t0 = t0;
  }

  /** `at`: the time the first chunk arrived, when the caller has it already. */
  firstByte(at?: number): void {
    if (this.#latencyDone || this.status === 0) return;
    this.#latencyDone = true;
    const now = at ?? this.#m.now();
    this.#m.lastUpdate = now;
    this.#m.observeLatency(this.status, now - this.#t0);
  }

  override end(trailers: HeaderList | undefined): void {
    if (this.#done) return;
    super.end(trailers);
    this.#finish();
  }

  override streamError(label: string): void {
    if (this.#done) return;
    super.streamError(label);
    this.#finish();
  }

  /** `streamError` with the label derived from a thrown value (see `streamErrorLabel`). */
  fail(e: unknown): void {
    if (!this.#done) this.streamError(streamErrorLabel(e));
  }

  get done(): boolean {
    return this.#done;
  }

  #finish(): void {
    this.#done = true;
    if (this.status !== 0 && !this.#latencyDone) this.firstByte();
    this.#m.countResponse(this);
  }
}

/** request_total / response_latency_ms / response_total under one prefix. */
class RequestFamilies {
  readonly handles = new Map<string, RequestMetrics>();

  constructor(
    registry: Registry,
    readonly prefix: string,
    readonly withLatency: boolean,
    readonly now: () => number,
    private readonly retainIdleMs: number,
  ) {
    const what = prefix === "" ? "" : prefix === "route_" ? " per route" : " per route attempt";
    register(
      registry,
      new Family(`${prefix}request_total`, `HTTP requests${what}.`, "counter", () => this.#requests()),
    );
    if (withLatency) {
      register(
        registry,
        new Family(
          `${prefix}response_latency_ms`,
          `Time from a request's head to its response's first body byte${what}, in milliseconds.`,
          "histogram",
          () => this.#latencies(),
        ),
      );
    }
    register(
      registry,
      new Family(
        `${prefix}response_total`,
        `HTTP responses${what}, classified.`,
        "counter",
        () => this.#responses(),
      ),
    );
  }

  get(labels: Labels): RequestMetrics {
    const key = keyOf(labels);
    let h = this.handles.get(key);
    if (!h) {
      h = new RequestMetrics(this, labels);
      h.lastUpdate = this.now();
      this.handles.set(key, h);
    }
    return h;
  }

  /** An evicted handle came back into use: export it again (merged if it was re-created meanwhile). */
  revive(h: RequestMetrics): void {
    h.evicted = false;
    const key = keyOf(h.labels as Labels);
    const cur = this.handles.get(key);
    if (cur === undefined) this.handles.set(key, h);
    else if (cur !== h) {
      h.absorb(cur);
      this.handles.set(key, h);
      cur.evicted = true;
    }
  }

  #evictIdle(): void {
    const idleBefore = this.now() - this.retainIdleMs;
    for (const [key, h] of this.handles) {
      if (h.lastUpdate < idleBefore) {
        h.evicted = true;
        this.handles.delete(key);
      }
    }
  }

  #requests(): MetricSample[] {
    this.#evictIdle();
    const out: MetricSample[] = [];
    for (const h of this.handles.values()) {
      if (h.requests > 0) out.push({ value: h.requests, labels: h.labels });
    }
    return out;
  }

  #latencies(): MetricSample[] {
    const out: MetricSample[] = [];
    const bucket = `${this.prefix}response_latency_ms_bucket`;
    const sum = `${this.prefix}response_latency_ms_sum`;
    const count = `${this.prefix}response_latency_ms_count`;
    for (const h of this.handles.values()) {
      for (const s of h.statuses) {
        if (s.latencyCount === 0) continue;
        const base = { ...h.labels, status_code: String(s.status) };
        let acc = 0;
        for (let i = 0; i < LATENCY_BOUNDS_MS.length; i++) {
          acc += s.latency[i];
          out.push({ metricName: bucket, value: acc, labels: { ...base, le: LATENCY_BOUNDS_MS[i] } });
        }
        out.push({ metricName: bucket, value: s.latencyCount, labels: { ...base, le: "+Inf" } });
        out.push({ metricName: sum, value: s.latencySum, labels: base });
        out.push({ metricName: count, value: s.latencyCount, labels: base });
      }
    }
    return out;
  }

  #responses(): MetricSample[] {
    const out: MetricSample[] = [];
    for (const h of this.handles.values()) {
      for (const s of h.statuses) {
        const status = s.status === 0 ? "" : String(s.status);
        const push = (value: number, classification: string, grpc: string, error: string) => {
          if (value > 0) {
            out.push({
              value,
              labels: { ...h.labels, status_code: status, classification, grpc_status: grpc, error },
            });
          }
        };
        push(s.success, "success", "", "");
        push(s.failure, "failure", "", "");
        for (let code = 0; code < 17; code++) {
          push(s.grpc[code], isGrpcFailure(code) ? "failure" : "success", String(code), "");
        }
        for (const [code, v] of s.otherGrpc ?? []) {
          push(v, isGrpcFailure(code) ? "failure" : "success", String(code), "");
        }
        for (const [error, v] of s.errors ?? []) push(v, "failure", "", error);
      }
    }
    return out;
  }
}

/** A profile route's handles: route_* for the logical request, route_actual_* per attempt. */
export class RouteMetrics {
  readonly requests: RequestMetrics;
  readonly actual: RequestMetrics;
  #retryable: CounterHandle;
  #noBudget: CounterHandle;

  constructor(
    requests: RequestMetrics,
    actual: RequestMetrics,
    retryable: CounterHandle,
    noBudget: CounterHandle,
  ) {
    this.requests = requests;
    this.actual = actual;
    this.#retryable = retryable;
    this.#noBudget = noBudget;
  }

  /** A response the route's retry policy considers retryable; `hasBudget` false when the budget said no. */
  retryable(hasBudget: boolean): void {
    this.#retryable.inc();
    if (!hasBudget) this.#noBudget.inc();
  }
}

/** Per connection (or endpoint): handles by authority, so a request costs one Map lookup. */
export class OutboundScope {
  #m: HttpMetrics;
  #labels: Omit<OutboundLabels, "authority">;
  #byAuthority = new Map<string, RequestMetrics>();

  constructor(m: HttpMetrics, labels: Omit<OutboundLabels, "authority">) {
    this.#m = m;
    this.#labels = labels;
  }

  get(authority: string): RequestMetrics {
    let h = this.#byAuthority.get(authority);
    if (h === undefined || h.evicted) {
      // Bounded: a client cycling through Host values must not grow a connection's cache.
      if (this.#byAuthority.size >= SCOPE_CACHE_MAX) this.#byAuthority.clear();
      h = this.#m.outbound({ ...this.#labels, authority });
      this.#byAuthority.set(authority, h);
    }
    return h;
  }
}

/** Per inbound connection: handles by (route, authz, authority); route and authz are the policy's objects. */
export class InboundScope {
  #m: HttpMetrics;
  #labels: Omit<InboundLabels, "authority" | "route" | "authz">;
  #cache = new WeakMap<PolicyRef, WeakMap<PolicyRef, Map<string, RequestMetrics>>>();

  constructor(m: HttpMetrics, labels: Omit<InboundLabels, "authority" | "route" | "authz">) {
    this.#m = m;
    this.#labels = labels;
  }

  get(authority: string, route: PolicyRef, authz: PolicyRef): RequestMetrics {
    let byAuthz = this.#cache.get(route);
    if (!byAuthz) this.#cache.set(route, byAuthz = new WeakMap());
    let byAuthority = byAuthz.get(authz);
    if (!byAuthority) byAuthz.set(authz, byAuthority = new Map());
    let h = byAuthority.get(authority);
    if (h === undefined || h.evicted) {
      if (byAuthority.size >= SCOPE_CACHE_MAX) byAuthority.clear();
      h = this.#m.inbound({ ...this.#labels, authority, route, authz });
      byAuthority.set(authority, h);
    }
    return h;
  }
}

const SCOPE_CACHE_MAX = 64;

/** `inbound_http_errors_total` / `outbound_http_errors_total` `error` values Linkerd uses. */
export const HTTP_ERROR_KIND = {
  failfast: "failfast",
  loadshed: "loadshed",
  responseTimeout: "response timeout",
  unauthorized: "unauthorized",
  identityRequired: "identity required",
  io: "i/o",
  unexpected: "unexpected",
} as const;

/**
 * The `error` label for a request the proxy itself failed (Linkerd's spellings): failfast and
 * load shedding from the balancer queue, response timeouts, refusals, I/O to the peer, else
 * unexpected.
 */
export function httpErrorKind(e: unknown): string {
  const reason = (e as { reason?: unknown })?.reason;
  switch (reason) {
    case "failfast":
    case "no_endpoints":
      return HTTP_ERROR_KIND.failfast;
    case "queue_full":
      return HTTP_ERROR_KIND.loadshed;
    case "timeout":
      return HTTP_ERROR_KIND.responseTimeout;
    case "unauthorized":
      return HTTP_ERROR_KIND.unauthorized;
    case "connect_failed":
    case "connection_lost":
    case "reset":
    case "refused":
    case "closed":
      return HTTP_ERROR_KIND.io;
    default:
      return (e as { status?: unknown })?.status === 502 ? HTTP_ERROR_KIND.io : HTTP_ERROR_KIND.unexpected;
  }
}

export interface HttpMetricsOptions {
  /** Monotonic milliseconds (default `performance.now`). */
  now?: () => number;
  retainIdleMs?: number;
}

export class HttpMetrics {
  readonly now: () => number;
  #endpoint: RequestFamilies;
  #route: RequestFamilies;
  #actual: RequestFamilies;
  #retryable: CounterFamily;
  #authzAllow: CounterFamily;
  #authzDeny: CounterFamily;
  #routeNotFound: CounterFamily;
  #inboundErrors: CounterFamily;
  #outboundErrors: CounterFamily;

  constructor(registry: Registry, o: HttpMetricsOptions = {}) {
    const now = this.now = o.now ?? (() => performance.now());
    const retain = o.retainIdleMs ?? DEFAULT_RETAIN_IDLE_MS;
    this.#endpoint = new RequestFamilies(registry, "", true, now, retain);
    this.#route = new RequestFamilies(registry, "route_", true, now, retain);
    this.#actual = new RequestFamilies(registry, "route_actual_", false, now, retain);
    const counter = (name: string, help: string) => new CounterFamily(registry, name, help, now, retain);
    this.#retryable = counter("route_retryable_total", "Retryable HTTP responses per route.");
    this.#authzAllow = counter(
      "inbound_http_authz_allow_total",
      "Inbound HTTP requests an authorization allowed.",
    );
    this.#authzDeny = counter(
      "inbound_http_authz_deny_total",
      "Inbound HTTP requests refused because no authorization of their route allows them.",
    );
    this.#routeNotFound = counter(
      "inbound_http_route_not_found_total",
      "Inbound HTTP requests that matched no route of their server.",
    );
    this.#inboundErrors = counter(
      "inbound_http_errors_total",
      "Inbound HTTP requests the proxy failed itself, by error.",
    );
    this.#outboundErrors = counter(
      "outbound_http_errors_total",
      "Outbound HTTP requests the proxy failed itself, by error.",
    );
  }

  /** Endpoint-level handle for inbound requests (labels in Linkerd's order). */
  inbound(l: InboundLabels): RequestMetrics {
    const labels: Labels = { direction: "inbound" };
    if (l.authority) labels.authority = l.authority;
    targetLabels(labels, l.targetAddr);
    copyInto(labels, l.tls);
    policyLabels(labels, "srv", l.server);
    policyLabels(labels, "route", l.route);
    policyLabels(labels, "authz", l.authz);
    return this.#endpoint.get(labels);
  }

  /** Endpoint-level handle for outbound requests to one endpoint. */
  outbound(l: OutboundLabels): RequestMetrics {
    const labels: Labels = { direction: "outbound" };
    if (l.authority) labels.authority = l.authority;
    targetLabels(labels, l.targetAddr);
    copyInto(labels, l.tls);
    sortedPrefixed(labels, "dst_", l.dst);
    return this.#endpoint.get(labels);
  }

  inboundScope(l: Omit<InboundLabels, "authority" | "route" | "authz">): InboundScope {
    return new InboundScope(this, l);
  }

  outboundScope(l: Omit<OutboundLabels, "authority">): OutboundScope {
    return new OutboundScope(this, l);
  }

  /** Handles for one profile route (Linkerd labels: direction, dst, rt_*). */
  route(l: RouteLabels): RouteMetrics {
    const labels: Labels = { direction: l.direction, dst: l.dst };
    sortedPrefixed(labels, "rt_", l.labels);
    return new RouteMetrics(
      this.#route.get(labels),
      this.#actual.get({ ...labels }),
      this.#retryable.get({ ...labels }),
      this.#retryable.get({ ...labels, skipped: "no_budget" }),
    );
  }

  /** Counter of requests allowed by `authz` on `route` of `server`. */
  authzAllow(
    l: { targetAddr: string; tls: TlsLabels; server: PolicyRef; route: PolicyRef; authz: PolicyRef },
  ): CounterHandle {
    const labels: Labels = {};
    targetLabels(labels, l.targetAddr);
    policyLabels(labels, "srv", l.server);
    policyLabels(labels, "route", l.route);
    policyLabels(labels, "authz", l.authz);
    copyInto(labels, l.tls);
    return this.#authzAllow.get(labels);
  }

  authzDeny(l: { targetAddr: string; tls: TlsLabels; server: PolicyRef; route: PolicyRef }): CounterHandle {
    const labels: Labels = {};
    targetLabels(labels, l.targetAddr);
    policyLabels(labels, "srv", l.server);
    policyLabels(labels, "route", l.route);
    copyInto(labels, l.tls);
    return this.#authzDeny.get(labels);
  }

  routeNotFound(l: { targetAddr: string; tls: TlsLabels; server: PolicyRef }): CounterHandle {
    const labels: Labels = {};
    targetLabels(labels, l.targetAddr);
    policyLabels(labels, "srv", l.server);
    copyInto(labels, l.tls);
    return this.#routeNotFound.get(labels);
  }

  /** `error` from HTTP_ERROR_KIND. */
  inboundError(error: string): CounterHandle {
    return this.#inboundErrors.get({ error });
  }

  outboundError(error: string): CounterHandle {
    return this.#outboundErrors.get({ error });
  }
}

/**
 * Wraps a response body so the recorder sees the first chunk, the end with its trailers, a failed
 * read, and a reader that cancels (counted as ended without trailers, as Linkerd counts a dropped
 * body). Upgrades (101) end at the head. Returns `rsp` with its body replaced.
 */
export function instrumentResponse(rec: RequestRecorder, rsp: HttpResponse): HttpResponse {
  rec.head(rsp.status, rsp.headers);
  if (rsp.upgrade !== undefined) {
    rec.end(undefined);
    return rsp;
  }
  rsp.body = new RecordedBody(rsp.body, rec);
  return rsp;
}

/** Reports the response body's first byte, end, failure or cancel to the recorder. */
class RecordedBody extends BodyTap {
  readonly #rec: RequestRecorder;

  constructor(inner: Body, rec: RequestRecorder) {
    super(inner);
    this.#rec = rec;
  }

  protected onChunk(): void {
    this.#rec.firstByte();
  }

  protected onEnd(trailers: HeaderList | undefined): void {
    this.#rec.end(trailers);
  }

  protected onError(e: unknown): void {
    this.#rec.fail(e);
  }

  protected onCancel(): void {
    this.#rec.end(undefined);
  }
}

/**
 * A metrics layer: records every request through `inner` into the handle `target(req)` returns.
 * A rejection counts as a stream failure (its `error` label from `streamErrorLabel`).
 */
export function recordRequests(
  inner: HttpService,
  target: (req: HttpRequest) => RequestMetrics,
  classifier?: (req: HttpRequest) => ResponseClassifier | undefined,
): HttpService {
  return async (req, signal) => {
    const rec = target(req).start(isGrpc(req.headers), classifier?.(req));
    let rsp: HttpResponse;
    try {
      rsp = await inner(req, signal);
    } catch (e) {
      rec.fail(e);
      throw e;
    }
    return instrumentResponse(rec, rsp);
  };
}
