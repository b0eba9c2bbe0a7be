/**
 * Inbound policies the proxy could not compile. Such a port denies every connection and request
 * (Linkerd's invalid server policy), so these say why a port stopped serving:
 *
 * - `inbound_policy_invalid_total{port, reason}`: Server messages rejected, by port and by the
 *   part that failed (`reason`: protocol, metadata, network, authentication, route_match,
 *   route_filter, rate_limit, malformed).
 * - `inbound_policy_invalid{port, reason}`: 1 while the port denies everything because its
 *   latest message was invalid; the series goes away when a valid message arrives.
 */
import { type Registry } from "./registry.ts";
import { Counter, Gauge } from "./instruments.ts";

export class InboundPolicyMetrics {
  readonly invalidTotal: Counter;
  readonly invalid: Gauge;
  /** The reason each port's gauge series carries now. */
  readonly #current = new Map<number, string>();

  constructor(registry: Registry) {
    const registers = [registry];
    this.invalidTotal = new Counter({
      name: "inbound_policy_invalid_total",
      help: "Inbound Server policies the proxy could not compile (the port then denies everything)",
      labelNames: ["port", "reason"],
      registers,
    });
    this.invalid = new Gauge({
      name: "inbound_policy_invalid",
      help: "1 while a port denies every connection because its latest inbound policy is invalid",
      labelNames: ["port", "reason"],
      registers,
    });
  }

  /** Whether `port`'s latest policy was invalid. */
  isInvalid(port: number): boolean {
    return this.#current.has(port);
  }

  rejected(port: number, reason: string): void {
    const labels = { port: String(port), reason };
    this.invalidTotal.inc(labels);
    const before = this.#current.get(port);
    if (before !== undefined && before !== reason) this.invalid.remove({ port: labels.port, reason: before });
    this.invalid.set(labels, 1);
    this.#current.set(port, reason);
  }

  recovered(port: number): void {
    const before = this.#current.get(port);
    if (before === undefined) return;
    this.invalid.remove({ port: String(port), reason: before });
    this.#current.delete(port);
  }
}
