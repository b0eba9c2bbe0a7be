/** The proxy's identity metrics, on the proxy's prom-client Registry. */
import { Counter, Gauge, type Registry } from "prom-client";

export class ProxyIdentityMetrics {
  readonly expiration: Gauge;
  readonly refreshes: Counter<"result">;

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
