// Where a `weft routes` row (the workload page's route table) links: the route page of the object it names.
// Pure, tested from control/dashboard/route_links_test.ts.

const PLURAL = { HTTPRoute: "httproutes", GRPCRoute: "grpcroutes" };

/**
 * The route page of a row, or undefined when the row names no object (Linkerd's default routes, a profile's
 * [DEFAULT] catch-all still links to its profile). Policy routes live in their own namespace: the row's
 * `route_namespace` when the route is a consumer route in another namespace than its parent, else the parent's;
 * a profile by its authority (`dst` without the port) in the Service's namespace.
 */
export function routeHref(row) {
  const ns = row.namespace;
  if (!ns) return undefined;
  if (row.source === "profile") {
    const name = String(row.parent ?? "").replace(/:\d+$/, "");
    if (!name) return undefined;
    const base = `/namespaces/${encodeURIComponent(ns)}/serviceprofiles/${encodeURIComponent(name)}`;
    return row.route && row.route !== "[DEFAULT]" ? `${base}?route=${encodeURIComponent(row.route)}` : base;
  }
  const plural = PLURAL[row.kind];
  if (!plural || !row.route) return undefined;
  return `/namespaces/${encodeURIComponent(row.route_namespace || ns)}/${plural}/${
    encodeURIComponent(row.route)
  }`;
}

/** The route page of a route on a Server (the policy table's { kind, group, name }), in the Server's namespace. */
export function policyRouteHref(ns, r) {
  const plural = PLURAL[r.kind] ?? "httproutes";
  return `/namespaces/${encodeURIComponent(ns)}/${plural}/${encodeURIComponent(r.name)}?group=${
    encodeURIComponent(r.group)
  }`;
}
