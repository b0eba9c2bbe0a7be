/**
 * The route kinds `weft stat` takes beside the workload kinds (`httproute`, `grpcroute`, `serviceprofile`
 * and the names Linkerd and kubectl users type for them). Routes are not pods: they carry no workload
 * label, so they are kept apart from cli/kinds.ts and their figures come from the route families of
 * cli/routes.ts.
 */

export type RouteKindName = "HTTPRoute" | "GRPCRoute" | "ServiceProfile";

export interface RouteKind {
  /** The Kubernetes kind, also the `route_kind` the proxies export (ServiceProfile routes have none). */
  kind: RouteKindName;
  /** The name tables and JSON rows print. */
  short: string;
  aliases: readonly string[];
}

export const ROUTE_KINDS: readonly RouteKind[] = [
  { kind: "HTTPRoute", short: "httproute", aliases: ["httproutes", "hr"] },
  { kind: "GRPCRoute", short: "grpcroute", aliases: ["grpcroutes"] },
  { kind: "ServiceProfile", short: "sp", aliases: ["serviceprofile", "serviceprofiles"] },
];

/** The route kind a user typed (`hr`, `HTTPRoute`, `sp`, …), or undefined when it is not one. */
export function findRouteKind(text: string): RouteKind | undefined {
  const t = text.toLowerCase();
  return ROUTE_KINDS.find((k) => k.kind.toLowerCase() === t || k.short === t || k.aliases.includes(t));
}
