/** Injector metrics, with Linkerd's names so existing dashboards keep working. */
import { Counter, type Registry } from "prom-client";

export class InjectorMetrics {
  readonly requests: Counter;
  readonly responses: Counter;

  constructor(registry: Registry) {
    this.requests = new Counter({
      name: "proxy_inject_admission_requests_total",
      help: "Admission requests received by the proxy injector.",
      labelNames: ["owner_kind", "namespace", "annotation_at"],
      registers: [registry],
    });
    this.responses = new Counter({
      name: "proxy_inject_admission_responses_total",
      help: "Admission responses sent by the proxy injector, by whether injection was skipped and why.",
      labelNames: ["owner_kind", "namespace", "annotation_at", "skip", "skip_reason"],
      registers: [registry],
    });
  }
}
