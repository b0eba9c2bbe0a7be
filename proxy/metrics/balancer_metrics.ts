/**
 * Linkerd's `outbound_http_balancer_*` families, labelled `parent_*` and `backend_*` as
 * linkerd2-proxy labels them:
 *
 * - `…_endpoints{endpoint_state}` — endpoints `ready` (in rotation) and `pending` (known but not
 *   taking requests: ejected by failure accrual or waiting for a probe);
 * - `…_p2c_endpoints`, `…_p2c_updates_total{op}` — endpoints in the balancer and the endpoint set
 *   changes it applied (`Add` per endpoint added or changed, `Remove` per endpoint removed);
 * - `…_queue_length`, `…_queue_requests_total`, `…_queue_latency_seconds` — requests waiting for an
 *   endpoint, requests that entered the queue, and the time they spent there (Linkerd's buckets);
 * - `…_queue_gate_{open,shut}_total`, `…_queue_gate_{open,shut}_time_seconds`,
 *   `…_queue_gate_timeout_seconds` — the failfast gate: openings (at creation and on leaving
 *   failfast), shuttings (on entering it), when the last happened, and the failfast timeout.
 *
 * Gauges are read from the live balancers at scrape time; counters are `BalancerStats` fields the
 * balancers increment in place, one stats object per label set, kept for the proxy's life so a
 * rebuilt balancer continues its series (as Linkerd's families keep theirs). A request pays field
 * increments, never a label object.
 */
import type { MetricFamily, MetricSample, MetricSnapshot, Registry } from "./registry.ts";
import type { L4RouteRef } from "./l4_route_metrics.ts";
import { metaLabels } from "./http_route_metrics.ts";
import { BalancerStats, QUEUE_LATENCY_BOUNDS } from "./balancer_stats.ts";

/** What the gauges read from a live balancer. */
export interface BalancerView {
  readonly size: number;
  readonly readyCount: number;
  readonly waiting: number;
}

type Labels = Readonly<Record<string, string>>;

interface Series {
  readonly labels: Labels;
  readonly stats: BalancerStats;
  readonly live: Set<BalancerView>;
}

const PREFIX = "outbound_http_balancer";

/** linkerd2-proxy's meta for an unknown parent or backend (a `default` resource named `unknown`). */
const UNKNOWN: L4RouteRef = { group: "", kind: "default", namespace: "", name: "unknown", section: "" };

/**
 * The parent or backend of a ServiceProfile balancer, as linkerd2-proxy derives it from an authority:
 * `<name>.<namespace>.svc.…:<port>` is that Service, anything else is `unknown`.
 */
export function profileServiceRef(authority: string): L4RouteRef {
  const colon = authority.lastIndexOf(":");
  const port = colon < 0 ? NaN : Number(authority.slice(colon + 1));
  const parts = (colon < 0 ? authority : authority.slice(0, colon)).split(".");
  if (!(port > 0 && port < 65536) || parts.length < 3 || parts[2].toLowerCase() !== "svc") return UNKNOWN;
  if (!parts[0] || !parts[1]) return UNKNOWN;
  return { group: "core", kind: "Service", namespace: parts[1], name: parts[0], port, section: "" };
}

class Family implements MetricFamily {
  constructor(
    readonly name: string,
    readonly help: string,
    readonly type: "counter" | "gauge" | "histogram",
    private readonly collect: () => MetricSample[],
  ) {}

  get(): MetricSnapshot {
    return { name: this.name, help: this.help, type: this.type, values: this.collect() };
  }
}

export class BalancerMetrics {
  readonly #series = new Map<string, Series>();

  constructor(registry: Registry) {
    const series = () => this.#series.values();
    const reg = (
      name: string,
      help: string,
      type: "counter" | "gauge" | "histogram",
      collect: () => MetricSample[],
    ) => registry.registerMetric(new Family(`${PREFIX}_${name}`, help, type, collect));
    const each = (value: (s: Series) => number) => () => {
      const out: MetricSample[] = [];
      for (const s of series()) out.push({ value: value(s), labels: s.labels });
      return out;
    };
    const sumLive = (s: Series, f: (v: BalancerView) => number) => {
      let n = 0;
      for (const v of s.live) n += f(v);
      return n;
    };

    reg("endpoints", "The number of endpoints currently in a HTTP request balancer", "gauge", () => {
      const out: MetricSample[] = [];
      for (const state of ["pending", "ready"] as const) {
        for (const s of series()) {
          const ready = sumLive(s, (v) => v.readyCount);
          const value = state === "ready" ? ready : Math.max(0, sumLive(s, (v) => v.size) - ready);
          out.push({ value, labels: { ...s.labels, endpoint_state: state } });
        }
      }
      return out;
    });
    reg(
      "p2c_endpoints",
      "The number of endpoints currently in the balancer",
      "gauge",
      each((s) => sumLive(s, (v) => v.size)),
    );
    reg(
      "p2c_updates_total",
      "The total number of service discovery updates received by a balancer",
      "counter",
      () => {
        const out: MetricSample[] = [];
        for (const s of series()) {
          // Reset: weft's balancers take whole endpoint sets and count them as adds and removes.
          out.push({ value: 0, labels: { op: "Reset", ...s.labels } });
          out.push({ value: s.stats.updatesAdd, labels: { op: "Add", ...s.labels } });
          out.push({ value: s.stats.updatesRemove, labels: { op: "Remove", ...s.labels } });
        }
        return out;
      },
    );
    reg(
      "queue_length",
      "The current count of requests waiting in the queue",
      "gauge",
      each((s) => sumLive(s, (v) => v.waiting)),
    );
    reg(
      "queue_requests_total",
      "The total number of requests that have entered the queue",
      "counter",
      each((s) => s.stats.queueRequests),
    );
    const latency = `${PREFIX}_queue_latency_seconds`;
    reg(
      "queue_latency_seconds",
      "The distribution of durations that requests have spent in the queue",
      "histogram",
      () => {
        const out: MetricSample[] = [];
        for (const s of series()) {
          const counts = s.stats.queueLatency;
          let acc = 0;
          for (let i = 0; i < QUEUE_LATENCY_BOUNDS.length; i++) {
            acc += counts[i];
            out.push({
              metricName: `${latency}_bucket`,
              value: acc,
              labels: { ...s.labels, le: String(QUEUE_LATENCY_BOUNDS[i]) },
            });
          }
          acc += counts[QUEUE_LATENCY_BOUNDS.length];
          out.push({ metricName: `${latency}_bucket`, value: acc, labels: { ...s.labels, le: "+Inf" } });
          out.push({ metricName: `${latency}_sum`, value: s.stats.queueLatencySum, labels: s.labels });
          out.push({ metricName: `${latency}_count`, value: acc, labels: s.labels });
        }
        return out;
      },
    );
    reg(
      "queue_gate_open_total",
      "The total number of gate state changes to open",
      "counter",
      each((s) => s.stats.gateOpens),
    );
    reg(
      "queue_gate_shut_total",
      "The total number of gate state changes from open to shut",
      "counter",
      each((s) => s.stats.gateShuts),
    );
    reg(
      "queue_gate_open_time_seconds",
      "The time at which the gate was opened",
      "gauge",
      each((s) => s.stats.gateOpenTime),
    );
    reg(
      "queue_gate_shut_time_seconds",
      "The time at which the gate was shut",
      "gauge",
      each((s) => s.stats.gateShutTime),
    );
    reg(
      "queue_gate_timeout_seconds",
      "Indicates the request timeout after which the gate will shut and enter failfast",
      "gauge",
      each((s) => s.stats.gateTimeout),
    );
  }

  #get(parent: L4RouteRef, backend: L4RouteRef): Series {
    const labels = metaLabels(metaLabels({}, "parent", parent), "backend", backend);
    let key = "";
    for (const k in labels) key += `${labels[k]}\u0000`;
    let s = this.#series.get(key);
    if (!s) this.#series.set(key, s = { labels, stats: new BalancerStats(), live: new Set() });
    return s;
  }

  /** The counters a balancer of this parent and backend increments (shared by every such balancer). */
  stats(parent: L4RouteRef, backend: L4RouteRef): BalancerStats {
    return this.#get(parent, backend).stats;
  }

  /** Counts `view`'s endpoints and queue under the parent and backend until the returned function is called. */
  add(parent: L4RouteRef, backend: L4RouteRef, view: BalancerView): () => void {
    const live = this.#get(parent, backend).live;
    live.add(view);
    return () => live.delete(view);
  }
}
