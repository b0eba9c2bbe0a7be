/**
 * Multicluster gateway metrics (issue 23), in the style of the inbound TCP families:
 *
 * - `inbound_gateway_open_total{client_id, target_name}`: connections a gateway forwarded (after
 *   authorization, resolution and the upstream connect);
 * - `inbound_gateway_open_connections{target_name}`: those still open;
 * - `inbound_gateway_errors_total{error, target_name}`: connections refused or failed, by reason
 *   (`target_name` is empty before the caller is authorized, so unauthorized peers cannot add series);
 * - `inbound_forwarded_identity_total{gateway_id, client_id}`: on a target proxy, connections whose
 *   client identity a trusted gateway forwarded (the gateway stays visible here; policy, metrics
 *   and `l5d-client-id` use the forwarded identity).
 */
import type { Registry } from "./registry.ts";
import { Counter, Gauge } from "./instruments.ts";

/** Why a gateway refused or failed a connection (the `error` label). */
export type GatewayError =
  | "bad_name"
  | "forwarded_chain"
  | "unauthorized"
  | "discovery"
  | "no_endpoints"
  | "loop"
  | "target_not_meshed"
  | "connect";

export class GatewayMetrics {
  readonly openTotal: Counter;
  readonly open: Gauge;
  readonly errors: Counter;
  readonly forwardedIdentity: Counter;

  constructor(registry: Registry) {
    const registers = [registry];
    this.openTotal = new Counter({
      name: "inbound_gateway_open_total",
      help: "Connections a multicluster gateway forwarded to a target endpoint",
      labelNames: ["client_id", "target_name"],
      registers,
    });
    this.open = new Gauge({
      name: "inbound_gateway_open_connections",
      help: "Gateway-forwarded connections currently open",
      labelNames: ["target_name"],
      registers,
    });
    this.errors = new Counter({
      name: "inbound_gateway_errors_total",
      help: "Connections a multicluster gateway refused or could not forward, by reason",
      labelNames: ["error", "target_name"],
      registers,
    });
    this.forwardedIdentity = new Counter({
      name: "inbound_forwarded_identity_total",
      help: "Inbound connections whose client identity a trusted gateway forwarded",
      labelNames: ["gateway_id", "client_id"],
      registers,
    });
  }
}
