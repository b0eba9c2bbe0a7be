/**
 * The data behind the route page's charts: the route-labelled families the proxies export (the same ones
 * `weft routes` reads, cli/routes.ts) as Prometheus range queries, shaped on the chart grid. Pure.
 *
 *   outbound  HTTPRoute/GRPCRoute on a Service (or EgressNetwork) parent, as the clients sent it:
 *             `outbound_{http,grpc}_route_request_statuses_total` and `…_request_duration_seconds`
 *             (Linkerd's names), by route_kind/route_namespace/route_name (and route_group);
 *   inbound   a policy route on a Server, as the server proxies answered it: `response_total` and
 *             `response_latency_ms` with `direction="inbound"` and the route labels;
 *   profile   a ServiceProfile's routes: `route_response_total` / `route_response_latency_ms` by `dst` (the
 *             profile's authority) and `rt_route`.
 */
import type { PromRangeSeries } from "../../cli/prometheus.ts";
import { isSuccess, type RouteSource } from "../../cli/routes.ts";
import { type Matcher, QUANTILES, regexLiteral, selector } from "../../cli/promql.ts";
import { type DirectionSeries, directionSeries, type Grid } from "./series.ts";

export type RouteDirection = "outbound" | "inbound" | "profile";

/** Which route the charts are of. */
export interface RouteRef {
  kind: "HTTPRoute" | "GRPCRoute" | "ServiceProfile";
  namespace: string;
  name: string;
  /** The API group of an HTTPRoute/GRPCRoute, when known (the proxies label `route_group` with it). */
  group?: string;
  /** A ServiceProfile: one of its routes (`rt_route`), else all of them. */
  rtRoute?: string;
}

export interface RouteQueries {
  responses: string;
  p50: string;
  p95: string;
  p99: string;
}

/** The series of one direction: the status counts and the three quantiles (ms). */
export function routeQueries(r: RouteRef, direction: RouteDirection, rateWindow: string): RouteQueries {
  const q = (qt: number, bucket: string, sel: string, scale = "") =>
    `histogram_quantile(${qt}, sum(rate(${bucket}${sel}[${rateWindow}])) by (le))${scale}`;
  const quantiles = (bucket: string, sel: string, scale = "") => ({
    p50: q(QUANTILES[0], bucket, sel, scale),
    p95: q(QUANTILES[1], bucket, sel, scale),
    p99: q(QUANTILES[2], bucket, sel, scale),
  });
  if (direction === "profile") {
    if (r.kind !== "ServiceProfile") throw new Error(`a ${r.kind} has no profile series`);
    const m: Matcher[] = [
      { label: "direction", value: "outbound" },
      // The profile's name is the authority; the proxies write `dst` with the port.
      { label: "dst", op: "=~", value: `${regexLiteral(r.name)}(:\\d+)?` },
    ];
    if (r.rtRoute !== undefined) m.push({ label: "rt_route", value: r.rtRoute });
    const sel = selector(m);
    return {
      responses: `sum(increase(route_response_total${sel}[${rateWindow}])) by (classification)`,
      ...quantiles("route_response_latency_ms_bucket", sel),
    };
  }
  if (r.kind === "ServiceProfile") throw new Error(`a ServiceProfile has only profile series`);
  const route: Matcher[] = [
    { label: "route_kind", value: r.kind },
    { label: "route_name", value: r.name },
  ];
  if (direction === "inbound") {
    const sel = selector([
      { label: "direction", value: "inbound" },
      { label: "namespace", value: r.namespace },
      ...route,
    ]);
    return {
      responses: `sum(increase(response_total${sel}[${rateWindow}])) by (classification)`,
      ...quantiles("response_latency_ms_bucket", sel),
    };
  }
  const sel = selector([
    ...route,
    { label: "route_namespace", value: r.namespace },
    ...(r.group ? [{ label: "route_group", value: r.group }] : []),
  ]);
  const fam = r.kind === "GRPCRoute" ? "outbound_grpc_route" : "outbound_http_route";
  const status = r.kind === "GRPCRoute" ? "grpc_status" : "http_status";
  return {
    responses: `sum(increase(${fam}_request_statuses_total${sel}[${rateWindow}])) by (${status}, error)`,
    ...quantiles(`${fam}_request_duration_seconds_bucket`, sel, " * 1000"),
  };
}

/** How `weft routes` judges one status series of the direction (cli/routes.ts isSuccess). */
function sourceOf(r: RouteRef, direction: RouteDirection): RouteSource {
  if (direction === "profile") return "profile";
  if (direction === "inbound") return "inbound";
  return r.kind === "GRPCRoute" ? "policy-grpc" : "policy-http";
}

/**
 * The charts of one direction. Policy routes count statuses, not classifications: each status series is
 * classified as `weft routes` does (no proxy error and not 5xx; gRPC: OK) and then summed as a workload's.
 */
export function routeDirectionSeries(
  r: RouteRef,
  direction: RouteDirection,
  answers: Record<keyof RouteQueries, PromRangeSeries[]>,
  g: Grid,
  rateWindowS: number,
): DirectionSeries {
  const source = sourceOf(r, direction);
  const responses = answers.responses.map((s) => ({
    ...s,
    metric: { classification: isSuccess(source, s.metric) ? "success" : "failure" },
  }));
  return directionSeries({ ...answers, responses }, g, rateWindowS);
}

/** Parent kinds whose routes the clients' proxies apply (outbound); a Server's routes are inbound. */
const OUTBOUND_PARENTS = new Set(["Service", "EgressNetwork"]);

/** The directions a route's charts have, from its parents' kinds. */
export function routeDirections(kind: RouteRef["kind"], parentKinds: readonly string[]): RouteDirection[] {
  if (kind === "ServiceProfile") return ["profile"];
  const out: RouteDirection[] = [];
  if (parentKinds.some((k) => OUTBOUND_PARENTS.has(k))) out.push("outbound");
  if (parentKinds.includes("Server")) out.push("inbound");
  // A route with no parent the mesh knows yet: show what clients would report.
  return out.length ? out : ["outbound"];
}
