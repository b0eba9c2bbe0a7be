/**
 * The HTTP metric families: labelled handles (`RequestMetrics`, `CounterHandle`) that the stacks
 * keep, and the families that render them at scrape time and drop series idle past the retention.
 */
import type { MetricFamily, MetricSample, MetricSnapshot, Registry } from "./registry.ts";
import { isGrpcFailure, type ResponseClassification, type ResponseClassifier } from "./response_class.ts";
import { keyOf, type Labels } from "./http_labels.ts";
import { RequestRecorder } from "./http_recorder.ts";

/**
 * `response_latency_ms` bucket upper bounds in whole milliseconds (inclusive), as linkerd2-proxy's
 * `linkerd/metrics/src/latency.rs` (current version; older proxies had 25 buckets 1..50000).
 * Latencies are truncated to whole milliseconds before bucketing, as Linkerd does.
 */
export const LATENCY_BOUNDS_MS: readonly number[] = [1, 10, 50, 100, 200, 300, 400, 500, 1000, 5000, 10000];

/** Linkerd's default `LINKERD2_PROXY_METRICS_RETAIN_IDLE`. */
export const DEFAULT_RETAIN_IDLE_MS = 10 * 60_000;

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
export class Family implements MetricFamily {
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

export function register(registry: Registry, f: Family): void {
  registry.registerMetric(f);
}

/** Counters keyed by label set, with idle eviction at scrape. */
export class CounterFamily {
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
export class StatusSeries {
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

/** request_total / response_latency_ms / response_total under one prefix. */
export class RequestFamilies {
  readonly handles = new Map<string, RequestMetrics>();

  constructor(
    registry: Registry,
    readonly prefix: string,
    readonly withLatency: boolean,
    readonly now: () => number,
    private readonly retainIdleMs: number,
  ) {
    const what = prefix === ""
      ? ""
      : prefix === "route_"
      ? " per route"
      : prefix === "control_"
      ? " to the control plane"
      : " per route attempt";
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
