/**
 * Linkerd's `outbound_http_route_request_statuses_total` for requests routed by an outbound policy:
 * parent (what the request was addressed to: a Service, or an EgressNetwork for egress), route,
 * the request's hostname, and the response status (or the error when there was none). gRPC routes
 * are counted here too, by HTTP status (Linkerd's gRPC family, by gRPC status, is not built yet).
 */
import { Counter } from "./instruments.ts";
import { l4RouteLabels, type L4RouteRef } from "./l4_route_metrics.ts";
import type { Registry } from "./registry.ts";

export class HttpRouteMetrics {
  readonly #statuses: Counter;

  constructor(registry: Registry) {
    this.#statuses = new Counter({
      name: "outbound_http_route_request_statuses_total",
      help: "Completed request-response streams",
      labelNames: [
        "parent_group",
        "parent_kind",
        "parent_namespace",
        "parent_name",
        "parent_port",
        "parent_section_name",
        "route_group",
        "route_kind",
        "route_namespace",
        "route_name",
        "hostname",
        "http_status",
        "error",
      ],
      registers: [registry],
    });
  }

  /** Counts one request's outcome: a status, or an error kind when no response came. */
  record(
    parent: L4RouteRef,
    route: L4RouteRef,
    authority: string,
    status: number | undefined,
    error = "",
  ): void {
    const labels = l4RouteLabels(parent, route, hostOf(authority));
    this.#statuses.inc({ ...labels, http_status: status === undefined ? "" : String(status), error });
  }
}

/** The host of an authority (`host[:port]`, `[v6]:port`), lowercase. */
export function hostOf(authority: string): string {
  let h = authority;
  if (h.startsWith("[")) {
    const end = h.indexOf("]");
    return (end > 0 ? h.slice(1, end) : h).toLowerCase();
  }
  const i = h.lastIndexOf(":");
  if (i >= 0 && /^[0-9]*$/.test(h.slice(i + 1))) h = h.slice(0, i);
  return h.toLowerCase();
}
