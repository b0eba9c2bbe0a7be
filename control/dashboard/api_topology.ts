/**
 * `/api/topology?ns=&window=`: the Topology page's graph. The edges are `weft edges deploy`'s (collectEdges,
 * the same six queries and the same Kubernetes lookups), joined with one more query for each client-side
 * edge's responses (RPS, success rate; the server side's for clients without identity), then shaped and laid out by topology_graph.ts.
 */
import { collectEdges } from "../../cli/edges.ts";
import { windowText } from "../../cli/flags.ts";
import { KINDS } from "../../cli/kinds.ts";
import type { Prometheus } from "../../cli/prometheus.ts";
import type { Kube } from "../../manifests/kube.ts";
import { viewContext } from "./api.ts";
import { namespaceParam, statWindowParam } from "./params.ts";
import { type ApiRoute, jsonResponse } from "./server.ts";
import { foldTraffic, shapeGraph, trafficQuery, unmeshedTrafficQuery } from "./topology_graph.ts";

export interface TopologySources {
  kube: Kube;
  prometheus(signal: AbortSignal): Promise<Prometheus>;
}

export function topologyRoute(s: TopologySources): ApiRoute {
  const kind = KINDS.find((k) => k.label === "deployment")!;
  return async (p, signal) => {
    const ns = namespaceParam(p, false);
    const w = statWindowParam(p);
    const prom = await s.prometheus(signal);
    const [edges, traffic, unmeshed] = await Promise.all([
      collectEdges(kind, ns, w.seconds, { kube: s.kube, prom }, viewContext(signal)),
      prom.query(trafficQuery(kind, windowText(w.seconds)), signal),
      prom.query(unmeshedTrafficQuery(kind, windowText(w.seconds)), signal),
    ]);
    return jsonResponse({
      namespace: ns ?? "",
      window: w.text,
      ...shapeGraph(edges, foldTraffic(kind, [...traffic, ...unmeshed]), w.seconds),
    });
  };
}
