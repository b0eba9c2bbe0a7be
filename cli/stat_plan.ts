/**
 * What `weft stat` asks Prometheus, following Linkerd's viz StatSummary: without `--from`/`--to` the
 * selected resources' inbound traffic (as their own proxies saw it); with `--to` the selected resources'
 * outbound traffic to the destination; with `--from` the traffic the source sent to the selected
 * resources; Services are always seen from the clients' side (`dst_service`). Pure.
 */
import type { Kind, Target } from "./kinds.ts";
import {
  by,
  latencyQuery,
  type Matcher,
  QUANTILES,
  responsesQuery,
  selector,
  tcpBytesQuery,
  tcpOpenQuery,
} from "./promql.ts";

export interface StatRequest {
  target: Target;
  from?: Target;
  to?: Target;
  /** Prometheus duration text, e.g. `1m`. */
  window: string;
}

export type StatQueryName =
  | "responses"
  | "p50"
  | "p95"
  | "p99"
  | "tcp"
  | "read"
  | "write"
  | "routeHttp"
  | "routeGrpc";

export interface StatPlan {
  /** The series labels naming a row: [namespace label, name label] (one for namespaces). */
  groupBy: string[];
  queries: Record<StatQueryName, string>;
  /** Rows come only from metrics (a `--from`/`--to` view), not from every object of the kind. */
  rowsFromMetrics: boolean;
  /**
   * Services: the clients' logical requests per parent Service (`outbound_*_route_request_statuses_total`),
   * which count the answers the client proxy gives itself (an invalid backend's 500, fail-fast) that never
   * reach an endpoint and so are missing from `response_total`. Grouped by these labels.
   */
  routeGroupBy?: string[];
}

/** Labels naming a resource as the source side of a series (its own proxy). */
function sourceMatchers(t: Target): Matcher[] {
  if (t.kind.label === "namespace") return t.name ? [{ label: "namespace", value: t.name }] : [];
  const m: Matcher[] = [];
  if (t.namespace) m.push({ label: "namespace", value: t.namespace });
  m.push(t.name ? { label: t.kind.label, value: t.name } : { label: t.kind.label, op: "!=", value: "" });
  return m;
}

/** Labels naming a resource as the destination of a client's series (`dst_*`, from Destination). */
function dstMatchers(t: Target): Matcher[] {
  if (t.kind.label === "namespace") return t.name ? [{ label: "dst_namespace", value: t.name }] : [];
  const m: Matcher[] = [];
  if (t.namespace) m.push({ label: "dst_namespace", value: t.namespace });
  const l = `dst_${t.kind.label}`;
  m.push(t.name ? { label: l, value: t.name } : { label: l, op: "!=", value: "" });
  return m;
}

function groupBy(kind: Kind, dst: boolean): string[] {
  const ns = dst ? "dst_namespace" : "namespace";
  return kind.label === "namespace" ? [ns] : [ns, dst ? `dst_${kind.label}` : kind.label];
}

export function planStat(r: StatRequest): StatPlan {
  const { target, from, to, window } = r;
  if (from && to) throw new Error("--from and --to cannot be used together");
  if (from?.kind.label === "service") throw new Error("--from svc is not supported: a Service sends nothing");
  let matchers: Matcher[];
  let g: string[];
  let peer: "src" | "dst";
  if (target.kind.label === "service") {
    matchers = [
      { label: "direction", value: "outbound" },
      ...(from ? sourceMatchers(from) : []),
      ...dstMatchers(target),
    ];
    g = groupBy(target.kind, true);
    peer = "dst";
  } else if (to) {
    matchers = [{ label: "direction", value: "outbound" }, ...sourceMatchers(target), ...dstMatchers(to)];
    g = groupBy(target.kind, false);
    peer = "dst";
  } else if (from) {
    matchers = [{ label: "direction", value: "outbound" }, ...sourceMatchers(from), ...dstMatchers(target)];
    g = groupBy(target.kind, true);
    peer = "dst";
  } else {
    matchers = [{ label: "direction", value: "inbound" }, ...sourceMatchers(target)];
    g = groupBy(target.kind, false);
    peer = "src";
  }
  const sel = selector(matchers);
  const isSvc = target.kind.label === "service";
  const routeGroupBy = ["parent_namespace", "parent_name"];
  const routeSel = selector([
    ...(from ? sourceMatchers(from) : []),
    { label: "parent_kind", value: "Service" },
    ...(target.namespace ? [{ label: "parent_namespace", value: target.namespace }] : []),
    target.name
      ? { label: "parent_name", value: target.name }
      : { label: "parent_name", op: "!=", value: "" },
  ] as Matcher[]);
  const routeQuery = (proto: "http" | "grpc") =>
    isSvc
      ? `sum(increase(outbound_${proto}_route_request_statuses_total${routeSel}[${window}])) by ${
        by([...routeGroupBy, proto === "http" ? "http_status" : "grpc_status", "error"])
      }`
      : "";
  const tcpSel = selector([...matchers, { label: "peer", value: peer }]);
  const [p50, p95, p99] = QUANTILES.map((q) => latencyQuery(q, sel, window, g));
  return {
    groupBy: g,
    rowsFromMetrics: from !== undefined || to !== undefined,
    ...(isSvc ? { routeGroupBy } : {}),
    queries: {
      responses: responsesQuery(sel, window, g),
      p50,
      p95,
      p99,
      tcp: tcpOpenQuery(tcpSel, g),
      read: tcpBytesQuery("read", tcpSel, window, g),
      write: tcpBytesQuery("write", tcpSel, window, g),
      routeHttp: routeQuery("http"),
      routeGrpc: routeQuery("grpc"),
    },
  };
}
