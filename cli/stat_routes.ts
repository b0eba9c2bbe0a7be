/**
 * `weft stat httproute|grpcroute|sp [NAME]`: stat's columns that apply to a route (success rate, RPS,
 * p50/p95/p99) per route and parent, asked with `weft routes`' queries (cli/routes.ts: the same families,
 * labels and success rule) filtered to the kind. Rows come from the metrics: a route that served nothing in
 * the window has no row. MESHED and TCP_CONN do not apply (a route has no pods or connections of its own).
 */
import type { CliContext } from "./context.ts";
import { UsageError } from "./context.ts";
import { contextNamespace, openViews } from "./connect.ts";
import { type ParsedFlags, parseOutput, parseWindow, windowText } from "./flags.ts";
import { parseTarget, type Target } from "./kinds.ts";
import { findRouteKind, type RouteKind } from "./route_kinds.ts";
import { collectRoutes, fmtRouteLatency, type RouteRow, type RouteSource } from "./routes.ts";
import { type Cell, fmtRps, fmtSuccess, renderTable, useColor } from "./table.ts";

/** One row of `weft stat` on a route kind, also its JSON form (stat's keys, plus `parent`). */
export interface RouteStatRow {
  namespace: string;
  kind: string;
  name: string;
  /** What the route hangs on: `svc/web:8080`, or `server/NAME` for a Server's inbound route. */
  parent: string;
  direction: "outbound" | "inbound";
  success: number | null;
  rps: number | null;
  latency_ms_p50: number | null;
  latency_ms_p95: number | null;
  latency_ms_p99: number | null;
  requests_success: number;
  requests_failure: number;
  /** Kept for the latency cell (a policy route's first bucket is a bound); not in the JSON. */
  source: RouteSource;
}

export interface RouteStatOptions {
  kind: RouteKind;
  name?: string;
  /** Undefined with `-A`. */
  namespace?: string;
  from?: Target;
  windowS: number;
}

/** A route name (a ServiceProfile's is its Service's FQDN, so dots are allowed). */
const NAME = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;

/** The arguments of `weft stat ROUTEKIND[/NAME]`, or undefined when the first is not a route kind. */
export function routeStatOptions(
  f: ParsedFlags,
  defaultNs: () => string,
): RouteStatOptions | undefined {
  const [what, second, extra] = f.positionals;
  if (!what) return undefined;
  const [kindText, slashName, more] = what.split("/");
  const kind = findRouteKind(kindText);
  if (!kind) return undefined;
  if (more !== undefined || slashName === "") throw new UsageError(`"${what}" is not KIND or KIND/NAME`);
  if (slashName !== undefined && second !== undefined) {
    throw new UsageError(`unexpected argument "${second}"`);
  }
  if (extra !== undefined) throw new UsageError(`unexpected argument "${extra}"`);
  const name = slashName ?? second;
  if (name !== undefined && !NAME.test(name)) throw new UsageError(`"${name}" is not a route name`);
  if (f.values.has("to")) {
    throw new UsageError(`--to does not apply to ${kind.short}: a route's traffic goes to its parent`);
  }
  const all = f.bools.has("all-namespaces");
  const namespace = all ? undefined : f.values.get("namespace") ?? defaultNs();
  let from: Target | undefined;
  const fromText = f.values.get("from");
  if (fromText) {
    from = parseTarget(fromText, f.values.get("from-namespace") ?? namespace);
    if (!from.name || from.kind.label === "service" || from.kind.label === "namespace") {
      throw new UsageError(`--from needs a workload (KIND/NAME) for ${kind.short}, got "${fromText}"`);
    }
  }
  const windowS = parseWindow(f.values.get("time-window") ?? "1m", "--time-window");
  return {
    kind,
    ...(name !== undefined ? { name } : {}),
    ...(namespace !== undefined ? { namespace } : {}),
    ...(from ? { from } : {}),
    windowS,
  };
}

/** `web.demo.svc.cluster.local:8080` → `svc/web:8080` (the Service a profile's authority names). */
function profileParent(dst: string): string {
  const [host, port] = dst.split(":");
  const [svc, ns, svcWord] = host.split(".");
  if (svcWord !== "svc" || !ns) return dst;
  return `svc/${svc}${port ? `:${port}` : ""}`;
}

/** `weft routes`' rows as stat rows of the kind (the query already kept only that kind). */
export function routeStatRows(rows: readonly RouteRow[], kind: RouteKind): RouteStatRow[] {
  return rows.map((r): RouteStatRow => {
    const profile = r.source === "profile";
    return {
      namespace: profile ? r.namespace : r.route_namespace ?? r.namespace,
      kind: kind.short,
      name: profile ? r.parent.split(":")[0] : r.route,
      parent: profile ? profileParent(r.parent) : r.parent,
      direction: r.source === "inbound" ? "inbound" : "outbound",
      success: r.success,
      rps: r.rps,
      latency_ms_p50: r.latency_ms_p50,
      latency_ms_p95: r.latency_ms_p95,
      latency_ms_p99: r.latency_ms_p99,
      requests_success: r.requests_success,
      requests_failure: r.requests_failure,
      source: r.source,
    };
  }).sort((a, b) =>
    `${a.namespace}/${a.name}/${a.parent}`.localeCompare(`${b.namespace}/${b.name}/${b.parent}`)
  );
}

export function renderRouteStat(rows: readonly RouteStatRow[], allNs: boolean, color: boolean): string {
  const v = (x: number | null) => x ?? undefined;
  return renderTable(
    [
      ...(allNs ? ["NAMESPACE"] : []),
      "NAME",
      "PARENT",
      "SUCCESS",
      "RPS",
      "LATENCY_P50",
      "LATENCY_P95",
      "LATENCY_P99",
    ],
    rows.map((r): (string | Cell)[] => [
      ...(allNs ? [r.namespace] : []),
      r.name,
      r.direction === "inbound" ? `${r.parent} (inbound)` : r.parent,
      fmtSuccess(v(r.success)),
      fmtRps(v(r.rps)),
      fmtRouteLatency(r.source, r.latency_ms_p50),
      fmtRouteLatency(r.source, r.latency_ms_p95),
      fmtRouteLatency(r.source, r.latency_ms_p99),
    ]),
    color,
  );
}

/** Queries and assembles the rows (used by `stat` and by tests against a real Prometheus). */
export async function collectRouteStat(
  o: RouteStatOptions,
  views: Pick<Awaited<ReturnType<typeof openViews>>, "prom">,
  ctx: CliContext,
): Promise<RouteStatRow[]> {
  const rows = await collectRoutes(
    {
      route: {
        kind: o.kind.kind,
        ...(o.namespace ? { namespace: o.namespace } : {}),
        ...(o.name ? { name: o.name } : {}),
      },
      ...(o.from ? { workload: o.from } : {}),
      window: windowText(o.windowS),
    },
    o.windowS,
    views,
    ctx,
  );
  return routeStatRows(rows, o.kind);
}

/** `weft stat` on a route kind; `args` are the flags already parsed (and found to name one). */
export async function runRouteStat(args: ParsedFlags, ctx: CliContext): Promise<number> {
  const output = parseOutput(args.values.get("output"));
  routeStatOptions(args, () => "default"); // usage errors before any network
  const views = await openViews(args, ctx);
  const o = routeStatOptions(args, () => contextNamespace(views.kube))!;
  const rows = await collectRouteStat(o, views, ctx);
  if (output === "json") {
    await ctx.out(JSON.stringify(rows.map(({ source: _, ...r }) => r), null, 2) + "\n");
    return 0;
  }
  if (rows.length === 0) {
    ctx.err(
      `no ${o.kind.short} traffic in the last ${windowText(o.windowS)}${
        o.namespace ? ` in namespace ${o.namespace}` : ""
      } (rows come from traffic: an idle route has none)`,
    );
    return 0;
  }
  await ctx.out(renderRouteStat(rows, o.namespace === undefined, useColor(ctx.stdoutIsTty, ctx.env)));
  return 0;
}
