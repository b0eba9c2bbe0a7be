/**
 * Linkerd's per-route connection metrics of the outbound opaque and TLS stacks:
 * `outbound_tcp_route_open_total` / `outbound_tcp_route_close_total` and the `outbound_tls_route_*`
 * pair (with `hostname`, the SNI). The parent labels say what the traffic was addressed to, so
 * egress traffic carries `parent_kind="EgressNetwork"`; a refused connection closes with
 * `error="forbidden"` (or `invalid_backend`, `no_route`, `connect`).
 */
import { Counter } from "./instruments.ts";
import type { Registry } from "./registry.ts";

export interface L4RouteRef {
  readonly group: string;
  readonly kind: string;
  readonly namespace: string;
  readonly name: string;
  readonly section?: string;
  readonly port?: number;
}

const PARENT_ROUTE = [
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
];

export type L4RouteLabels = Record<string, string>;

export function l4RouteLabels(parent: L4RouteRef, route: L4RouteRef, hostname?: string): L4RouteLabels {
  const out: L4RouteLabels = {
    parent_group: parent.group,
    parent_kind: parent.kind,
    parent_namespace: parent.namespace,
    parent_name: parent.name,
    parent_port: parent.port ? String(parent.port) : "",
    parent_section_name: parent.section ?? "",
    route_group: route.group,
    route_kind: route.kind,
    route_namespace: route.namespace,
    route_name: route.name,
  };
  if (hostname !== undefined) out.hostname = hostname;
  return out;
}

class Pair {
  readonly open: Counter;
  readonly close: Counter;
  constructor(registry: Registry, prefix: string, extra: string[]) {
    const registers = [registry];
    this.open = new Counter({
      name: `${prefix}_open_total`,
      help: "The number of connections opened",
      labelNames: [...PARENT_ROUTE, ...extra],
      registers,
    });
    this.close = new Counter({
      name: `${prefix}_close_total`,
      help: "The number of connections closed",
      labelNames: [...PARENT_ROUTE, ...extra, "error"],
      registers,
    });
  }
}

export class L4RouteMetrics {
  readonly #tcp: Pair;
  readonly #tls: Pair;

  constructor(registry: Registry) {
    this.#tcp = new Pair(registry, "outbound_tcp_route", []);
    this.#tls = new Pair(registry, "outbound_tls_route", ["hostname"]);
  }

  /** Counts an open; the returned function counts the close (once), with its error or "". */
  open(protocol: "opaque" | "tls", labels: L4RouteLabels): (error?: string) => void {
    const p = protocol === "tls" ? this.#tls : this.#tcp;
    p.open.inc(labels);
    let closed = false;
    return (error) => {
      if (closed) return;
      closed = true;
      p.close.inc({ ...labels, error: error ?? "" });
    };
  }
}
