/**
 * Linkerd's `outbound_http_balancer_endpoints{parent_*, backend_*, endpoint_state}`: the endpoints
 * in each policy backend's balancer, `ready` (in rotation) and `pending` (known but not taking
 * requests: ejected by failure accrual or waiting for a probe). Read from the balancers at
 * scrape time, so keeping it costs requests nothing.
 */
import type { MetricFamily, MetricSample, MetricSnapshot, Registry } from "./registry.ts";
import type { L4RouteRef } from "./l4_route_metrics.ts";
import { metaLabels } from "./http_route_metrics.ts";

/** What the gauge reads from a balancer. */
export interface EndpointCounts {
  readonly size: number;
  readonly readyCount: number;
}

interface Entry {
  readonly key: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly counts: EndpointCounts;
}

export class BalancerMetrics implements MetricFamily {
  readonly name = "outbound_http_balancer_endpoints";
  readonly #live = new Set<Entry>();

  constructor(registry: Registry) {
    registry.registerMetric(this);
  }

  /** Counts `counts`' endpoints under the parent and backend until the returned function is called. */
  add(parent: L4RouteRef, backend: L4RouteRef, counts: EndpointCounts): () => void {
    const labels = metaLabels(metaLabels({}, "parent", parent), "backend", backend);
    let key = "";
    for (const k in labels) key += `${labels[k]}\u0000`;
    const e: Entry = { key, labels, counts };
    this.#live.add(e);
    return () => this.#live.delete(e);
  }

  get(): MetricSnapshot {
    // Balancers with the same labels (one backend reached through two keys) are summed.
    const sums = new Map<
      string,
      { labels: Readonly<Record<string, string>>; ready: number; pending: number }
    >();
    for (const e of this.#live) {
      const ready = e.counts.readyCount;
      const pending = Math.max(0, e.counts.size - ready);
      const s = sums.get(e.key);
      if (s) {
        s.ready += ready;
        s.pending += pending;
      } else sums.set(e.key, { labels: e.labels, ready, pending });
    }
    const values: MetricSample[] = [];
    for (const s of sums.values()) {
      values.push({ value: s.pending, labels: { ...s.labels, endpoint_state: "pending" } });
    }
    for (const s of sums.values()) {
      values.push({ value: s.ready, labels: { ...s.labels, endpoint_state: "ready" } });
    }
    return {
      name: this.name,
      help: "The number of endpoints currently in a HTTP request balancer",
      type: "gauge",
      values,
    };
  }
}
