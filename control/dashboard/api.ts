/**
 * The dashboard's JSON endpoints. Each reads through the code the CLI runs (`weft stat`, `weft routes`,
 * `weft edges`, `weft tap`, `mesh:check`'s checks), with the dashboard's read-only ServiceAccount:
 *
 *   /api/namespaces                                   namespaces, meshed and total pods in each
 *   /api/overview                                     control-plane checks, certificate expiry, meshing
 *   /api/stat?ns=&kind=&window=                       `weft stat` rows (ns empty: every namespace)
 *   /api/series?ns=&kind=&name=&window=&step=         chart series, inbound and outbound (series.ts)
 *   /api/routes?ns=&kind=&name=&window=               `weft routes` rows of a workload or Service
 *   /api/policy?ns=&kind=&name=                       Servers and authorizations for its ports (policy.ts)
 *
 * and the tables of api_route.ts (route page, pod list) and routes_live.ts (topology, tap rows).
 */
import type { CliContext } from "../../cli/context.ts";
import { KINDS, type Target } from "../../cli/kinds.ts";
import type { Prometheus, PromRangeSeries } from "../../cli/prometheus.ts";
import { collectRoutes, type RoutesRequest } from "../../cli/routes.ts";
import { collectStat } from "../../cli/stat.ts";
import { planStat } from "../../cli/stat_plan.ts";
import type { Kube } from "../../manifests/kube.ts";
import { meshingByNamespace, readOverview } from "./health.ts";
import { chartWindowParam, kindParam, nameParam, namespaceParam, statWindowParam } from "./params.ts";
import { routePageRoutes } from "./api_route.ts";
import { readPolicy } from "./policy.ts";
import { liveRoutes } from "./routes_live.ts";
import { directionSeries, gridEnd, gridFor, gridHeader } from "./series.ts";
import { ApiError, type ApiRoute, jsonResponse } from "./server.ts";
import { sharedFor } from "./shared_answer.ts";

const OVERVIEW_TTL_MS = 15_000;
const NEVER = new AbortController().signal;

export interface Sources {
  kube: Kube;
  /** The metrics store, found as the CLI finds it (connectPrometheus); cached by the caller. */
  prometheus(signal: AbortSignal): Promise<Prometheus>;
  now(): number;
  log(line: string): void;
}

// deno-lint-ignore no-explicit-any
type Json = any;

/** What the CLI's collectors get: no terminal, the viewer's signal. */
export function viewContext(signal: AbortSignal): CliContext {
  return {
    env: {},
    out: () => Promise.resolve(),
    err: () => {},
    status: () => {},
    stdoutIsTty: false,
    stderrIsTty: false,
    signal,
    readStdin: () => Promise.reject(new Error("no stdin in the dashboard")),
    readFile: () => Promise.reject(new Error("no files in the dashboard")),
  };
}

function target(p: URLSearchParams, needName: boolean): Target {
  const kind = kindParam(p);
  const namespace = kind.label === "namespace" ? undefined : namespaceParam(p, needName);
  const name = needName || p.has("name") ? nameParam(p) : undefined;
  return { kind, ...(name ? { name } : {}), ...(namespace ? { namespace } : {}) };
}

async function rangeAll<K extends string>(
  prom: Prometheus,
  queries: Record<K, string>,
  range: { start: number; end: number; step: number },
  signal: AbortSignal,
): Promise<Record<K, PromRangeSeries[]>> {
  if (!prom.queryRange) throw new ApiError(501, `${prom.where} cannot answer range queries`);
  const keys = Object.keys(queries) as K[];
  const answers = await Promise.all(keys.map((k) => prom.queryRange!(queries[k], range, signal)));
  return Object.fromEntries(keys.map((k, i) => [k, answers[i]])) as Record<K, PromRangeSeries[]>;
}

export function apiRoutes(s: Sources): Record<string, ApiRoute> {
  const views = async (signal: AbortSignal) => ({ kube: s.kube, prom: await s.prometheus(signal) });
  // Shared by all viewers for 15 s (half the page's refresh): no viewer's leaving cancels it.
  const overview = sharedFor(OVERVIEW_TTL_MS, s.now, () => readOverview(s.kube, s.now(), NEVER));
  return {
    namespaces: async () => {
      const [nss, pods] = await Promise.all([
        s.kube.list<Json>("/api/v1/namespaces"),
        s.kube.list<Json>("/api/v1/pods"),
      ]);
      return jsonResponse({
        namespaces: meshingByNamespace(nss, pods).map((n) => ({ ...n, pods: n.meshed + n.unmeshed })),
      });
    },

    overview: async () => jsonResponse(await overview()),

    stat: async (p, signal) => {
      const t = target(p, false);
      const w = statWindowParam(p);
      const rows = await collectStat(
        { target: t, windowS: w.seconds, allNamespaces: !t.namespace },
        await views(signal),
        viewContext(signal),
      );
      return jsonResponse({ window: w.text, rows });
    },

    series: async (p, signal) => {
      const t = target(p, true);
      const w = chartWindowParam(p);
      const g = gridFor(w, Math.floor(s.now() / 1000));
      const range = { start: g.start, end: gridEnd(g), step: g.step };
      const prom = await s.prometheus(signal);
      const rw = `${w.rateWindow}s`;
      const pick = (q: ReturnType<typeof planStat>["queries"]) => ({
        responses: q.responses,
        p50: q.p50,
        p95: q.p95,
        p99: q.p99,
      });
      const inbound = pick(planStat({ target: t, window: rw }).queries);
      // A Service sends nothing: its series are its clients' (planStat reads them as dst_service).
      const everywhere: Target = { kind: KINDS.find((k) => k.label === "namespace")! };
      const outbound = t.kind.label === "service"
        ? undefined
        : pick(planStat({ target: t, to: everywhere, window: rw }).queries);
      const [inA, outA] = await Promise.all([
        rangeAll(prom, inbound, range, signal),
        outbound ? rangeAll(prom, outbound, range, signal) : Promise.resolve(undefined),
      ]);
      return jsonResponse({
        ...gridHeader(w, g),
        inbound: directionSeries(inA, g, w.rateWindow),
        ...(outA ? { outbound: directionSeries(outA, g, w.rateWindow) } : {}),
      });
    },

    routes: async (p, signal) => {
      const t = target(p, true);
      const w = statWindowParam(p);
      const req: RoutesRequest = t.kind.label === "service"
        ? { service: t, window: w.text }
        : { workload: t, window: w.text };
      const rows = await collectRoutes(req, w.seconds, await views(signal), viewContext(signal));
      return jsonResponse({ window: w.text, rows });
    },

    policy: async (p) => {
      const t = target(p, true);
      return jsonResponse(await readPolicy(s.kube, t));
    },

    ...liveRoutes(s),
    ...routePageRoutes(s),
  };
}
