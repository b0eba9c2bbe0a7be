/** The proxy's identity metrics, on the proxy's Registry. */
import { type Registry } from "../metrics/registry.ts";
import { Counter, Gauge } from "../metrics/instruments.ts";

export class ProxyIdentityMetrics {
  readonly expiration: Gauge;
  readonly refreshes: Counter;

  constructor(registry: Registry) {
    this.expiration = new Gauge({
      name: "identity_cert_expiration_timestamp_seconds",
      help: "Expiry of the proxy's current certificate, Unix seconds.",
      registers: [registry],
    });
    this.refreshes = new Counter({
      name: "identity_cert_refresh_total",
      help: "Certificate refresh attempts, by result (success or failure).",
      labelNames: ["result"],
      registers: [registry],
    });
  }
}
