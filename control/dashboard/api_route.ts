/**
 * The route page's endpoints and the workload page's pod list, added to the API table in api.ts:
 *
 *   /api/route?ns=&kind=&name=&group=                  the route object and its policy (route_view.ts)
 *   /api/route/series?ns=&kind=&name=&group=&route=&dir=&window=
 *                                                      its charts per direction (route_series.ts)
 *   /api/pods?ns=&kind=&name=                          the pods of a workload or Service
 *
 * `kind` is the page path's plural (httproutes, grpcroutes, serviceprofiles); `dir` the directions the page
 * got from /api/route (outbound, inbound, profile; comma-separated), so a chart refresh reads no objects.
 */
import { listWithPods, podsOf } from "../../cli/kube_objects.ts";
import type { Prometheus, PromRangeSeries } from "../../cli/prometheus.ts";
import type { Kube } from "../../manifests/kube.ts";
import { chartWindowParam, kindParam, nameParam, namespaceParam } from "./params.ts";
import { type RouteDirection, routeDirectionSeries, routeQueries, type RouteRef } from "./route_series.ts";
import { readRoute, ROUTE_KINDS } from "./route_view.ts";
import { gridEnd, gridFor, gridHeader } from "./series.ts";
import { ApiError, type ApiRoute, jsonResponse } from "./server.ts";

// deno-lint-ignore no-explicit-any
type Json = any;

export interface RouteSources {
  kube: Kube;
  prometheus(signal: AbortSignal): Promise<Prometheus>;
  now(): number;
}

const DIRECTIONS: readonly RouteDirection[] = ["outbound", "inbound", "profile"];

function routeKindParam(p: URLSearchParams): string {
  const k = p.get("kind") ?? "";
  if (!ROUTE_KINDS[k]) {
    throw new ApiError(400, `kind: "${k.slice(0, 40)}" is not one of ${Object.keys(ROUTE_KINDS).join(", ")}`);
  }
  return k;
}

function groupParam(p: URLSearchParams, plural: string): string | undefined {
  const g = p.get("group");
  if (g === null || g === "") return undefined;
  if (!ROUTE_KINDS[plural].apis.some((a) => a.group === g)) {
    throw new ApiError(400, `group: "${g.slice(0, 60)}" does not hold ${plural}`);
  }
  return g;
}

/** A ServiceProfile route's name (`rt_route`): free text in the profile, bounded here. */
export function profileRouteParam(p: URLSearchParams): string | undefined {
  const r = p.get("route");
  if (r === null) return undefined;
  // deno-lint-ignore no-control-regex
  if (r.length > 256 || /[\u0000-\u001f\u007f]/.test(r)) {
    throw new ApiError(400, `route: not a route name (at most 256 characters, no control characters)`);
  }
  return r;
}

export function directionsParam(p: URLSearchParams, kind: RouteRef["kind"]): RouteDirection[] {
  const text = p.get("dir") ?? (kind === "ServiceProfile" ? "profile" : "outbound");
  const dirs = [...new Set(text.split(","))];
  for (const d of dirs) {
    if (!DIRECTIONS.includes(d as RouteDirection)) {
      throw new ApiError(400, `dir: "${d.slice(0, 20)}" is not one of ${DIRECTIONS.join(", ")}`);
    }
    if ((d === "profile") !== (kind === "ServiceProfile")) {
      throw new ApiError(400, `dir: a ${kind} has no ${d} series`);
    }
  }
  return dirs as RouteDirection[];
}

export function routePageRoutes(s: RouteSources): Record<string, ApiRoute> {
  return {
    route: async (p) => {
      const plural = routeKindParam(p);
      const ns = namespaceParam(p, true)!;
      return jsonResponse(await readRoute(s.kube, plural, ns, nameParam(p), groupParam(p, plural)));
    },

    "route/series": async (p, signal) => {
      const plural = routeKindParam(p);
      const kind = ROUTE_KINDS[plural].kind;
      const ref: RouteRef = { kind, namespace: namespaceParam(p, true)!, name: nameParam(p) };
      const group = groupParam(p, plural);
      if (group && kind !== "ServiceProfile") ref.group = group;
      const rt = profileRouteParam(p);
      if (rt !== undefined) {
        if (kind !== "ServiceProfile") {
          throw new ApiError(400, "route: only a ServiceProfile has named routes");
        }
        ref.rtRoute = rt;
      }
      const dirs = directionsParam(p, kind);
      const w = chartWindowParam(p);
      const g = gridFor(w, Math.floor(s.now() / 1000));
      const range = { start: g.start, end: gridEnd(g), step: g.step };
      const prom = await s.prometheus(signal);
      if (!prom.queryRange) throw new ApiError(501, `${prom.where} cannot answer range queries`);
      const out: Record<string, unknown> = {};
      await Promise.all(dirs.map(async (d) => {
        const q = routeQueries(ref, d, `${w.rateWindow}s`);
        const keys = Object.keys(q) as (keyof typeof q)[];
        const answers = await Promise.all(keys.map((k) => prom.queryRange!(q[k], range, signal)));
        const byKey = Object.fromEntries(keys.map((k, i) => [k, answers[i]])) as Record<
          keyof typeof q,
          PromRangeSeries[]
        >;
        out[d] = routeDirectionSeries(ref, d, byKey, g, w.rateWindow);
      }));
      return jsonResponse({ ...gridHeader(w, g), directions: out });
    },

    pods: async (p) => {
      const kind = kindParam(p);
      if (kind.label === "namespace") {
        throw new ApiError(400, "kind: pods are listed per workload or Service");
      }
      const ns = namespaceParam(p, true)!;
      const name = nameParam(p);
      const [k8s, raw] = await Promise.all([
        listWithPods(s.kube, kind, ns),
        s.kube.list<Json>(`/api/v1/namespaces/${encodeURIComponent(ns)}/pods`),
      ]);
      const obj = k8s.objects.find((o) => o.name === name);
      if (!obj) throw new ApiError(404, `${kind.label} ${ns}/${name} does not exist`);
      const byName = new Map(raw.map((x) => [x.metadata?.name, x]));
      const pods = podsOf(kind, obj, k8s.pods).map((pi) => {
        const r = byName.get(pi.name);
        const cs: Json[] = r?.status?.containerStatuses ?? [];
        return {
          name: pi.name,
          phase: pi.phase,
          meshed: pi.meshed,
          ready: `${cs.filter((c) => c.ready).length}/${cs.length}`,
          restarts: cs.reduce((n, c) => n + (c.restartCount ?? 0), 0),
          ip: pi.ip ?? "",
        };
      }).sort((a, b) => a.name.localeCompare(b.name));
      return jsonResponse({ namespace: ns, kind: kind.label, name, pods });
    },
  };
}
