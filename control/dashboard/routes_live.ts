/**
 * The Topology and Live tap pages' endpoints (issue 17, part B), added to the API table in api.ts:
 *
 *   /api/topology?ns=&window=        the graph (api_topology.ts)
 *   /api/tap/rows?ns=&resource=&…    one row per request, NDJSON (api_tap.ts)
 */
import { streamTap } from "../../cli/tap.ts";
import type { Sources } from "./api.ts";
import { tapRowsRoute } from "./api_tap.ts";
import { topologyRoute } from "./api_topology.ts";
import type { ApiRoute } from "./server.ts";

export function liveRoutes(s: Sources): Record<string, ApiRoute> {
  return {
    topology: topologyRoute(s),
    // `weft tap`'s client: the API server's service proxy, with the dashboard's RBAC (create on weft-tap only).
    "tap/rows": tapRowsRoute({
      open: (body, onLine, signal) => streamTap(s.kube, body, onLine, signal),
      log: s.log,
    }),
  };
}
