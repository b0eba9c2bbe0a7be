/**
 * The service mirror's metrics, named as Linkerd's service mirror names them where it has them
 * (`gateway_alive`, `gateway_probe_latency_ms`), with the target cluster as a label.
 */
import { Counter, Gauge, Histogram, type Registry } from "prom-client";

export class ServiceMirrorMetrics {
  readonly gatewayAlive: Gauge;
  readonly probeLatency: Histogram;
  readonly probeFailures: Counter;
  readonly probes: Counter;
  readonly mirrored: Gauge;
  readonly reconcileErrors: Counter;
  readonly queueDepth: Gauge;
  readonly queueDropped: Counter;

  constructor(registry: Registry) {
    const registers = [registry];
    this.gatewayAlive = new Gauge({
      name: "gateway_alive",
      help: "1 when the last probe of the link's gateway succeeded, else 0.",
      labelNames: ["target_cluster_name"],
      registers,
    });
    this.probeLatency = new Histogram({
      name: "gateway_probe_latency_ms",
      help: "Latency of successful probes of the link's gateway, in milliseconds.",
      labelNames: ["target_cluster_name"],
      buckets: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000],
      registers,
    });
    this.probeFailures = new Counter({
      name: "gateway_probe_failures_total",
      help: "Probes of the link's gateway that failed (error, timeout or non-2xx answer).",
      labelNames: ["target_cluster_name"],
      registers,
    });
    this.probes = new Counter({
      name: "gateway_probes_total",
      help: "Probes of the link's gateway sent.",
      labelNames: ["target_cluster_name"],
      registers,
    });
    this.mirrored = new Gauge({
      name: "service_mirror_mirrored_services",
      help: "Remote services this link mirrors, by mode: gateway, flat (remote discovery) or federated.",
      labelNames: ["target_cluster_name", "mode"],
      registers,
    });
    this.reconcileErrors = new Counter({
      name: "service_mirror_reconcile_errors_total",
      help: "Reconciles of a remote service that failed (retried with backoff).",
      labelNames: ["target_cluster_name"],
      registers,
    });
    this.queueDepth = new Gauge({
      name: "service_mirror_queue_depth",
      help: "Remote services waiting to be reconciled.",
      labelNames: ["target_cluster_name"],
      registers,
    });
    this.queueDropped = new Counter({
      name: "service_mirror_queue_dropped_total",
      help: "Keys dropped because the work queue was full (a full resync follows).",
      labelNames: ["target_cluster_name"],
      registers,
    });
  }
}
