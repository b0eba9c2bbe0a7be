/**
 * `weft routes`: per route, success rate, RPS and latency, from the route families the proxy exports:
 * outbound policy routes (HTTPRoute/GRPCRoute on a Service or EgressNetwork parent:
 * `outbound_{http,grpc}_route_request_statuses_total` and `…_request_duration_seconds`, Linkerd's names),
 * ServiceProfile routes (`route_response_total` / `route_response_latency_ms` by `rt_route`), and the
 * inbound policy routes of a workload's Servers (`response_total{direction="inbound"}` by `route_*`).
 */
import type { CliContext, Command } from "./context.ts";
import { UsageError } from "./context.ts";
import { CONNECT_FLAGS, contextNamespace, openViews, queryAll } from "./connect.ts";
import { flagHelp, type FlagSpec, parseFlags, parseOutput, parseWindow, windowText } from "./flags.ts";
import { parseTarget, type Target } from "./kinds.ts";
import type { RouteKindName } from "./route_kinds.ts";
import type { PromSample } from "./prometheus.ts";
import { by, type Matcher, QUANTILES, regexLiteral, selector } from "./promql.ts";
import { type Cell, fmtLatency, fmtRps, fmtSuccess, renderTable, useColor } from "./table.ts";

export const ROUTES_FLAGS: readonly FlagSpec[] = [
  { name: "namespace", short: "n", help: "namespace of the Service or workload", default: "the context's" },
  { name: "to", help: "with a workload: only its routes to this Service (svc/NAME)" },
  { name: "to-namespace", help: "namespace of --to", default: "--namespace" },
  { name: "time-window", short: "t", help: "window the figures are taken over", default: "1m" },
  { name: "output", short: "o", help: "table or json", default: "table" },
  ...CONNECT_FLAGS,
];

export type RouteSource = "policy-http" | "policy-grpc" | "profile" | "inbound";

export interface RoutesRequest {
  /** The parent Service (svc/NAME or every Service of a namespace), when routes are looked at by Service. */
  service?: Target;
  /** The client workload whose outbound routes, or whose inbound (Server) routes, are shown. */
  workload?: Target;
  /**
   * Only routes of this kind (and namespace, name): `weft stat httproute|grpcroute|sp`. A ServiceProfile is
   * named for its Service's FQDN and its series carry it as the `dst` authority; its routes are folded into
   * one row per profile. Policy routes include the inbound routes of Servers (unless a client is given).
   */
  route?: { kind: RouteKindName; namespace?: string; name?: string };
  window: string;
  clusterDomain?: string;
}

const POLICY_ROUTE_KEY = [
  "parent_kind",
  "parent_namespace",
  "parent_name",
  "parent_port",
  "route_kind",
  "route_namespace",
  "route_name",
];
const PROFILE_KEY = ["dst", "rt_route"];
const INBOUND_KEY = ["namespace", "srv_kind", "srv_name", "route_kind", "route_name"];

/** Each source's status counts and latency quantiles. Pure. */
export function routeQueries(r: RoutesRequest): Record<string, string> {
  const w = r.window;
  const rk = r.route?.kind;
  const client: Matcher[] = [];
  if (r.workload) {
    if (r.workload.namespace) client.push({ label: "namespace", value: r.workload.namespace });
    if (r.workload.name) client.push({ label: r.workload.kind.label, value: r.workload.name });
  }
  const parent: Matcher[] = [];
  if (r.service) {
    parent.push({ label: "parent_kind", value: "Service" });
    if (r.service.namespace) parent.push({ label: "parent_namespace", value: r.service.namespace });
    if (r.service.name) parent.push({ label: "parent_name", value: r.service.name });
  }
  // A policy route by kind (case-insensitive: inbound metadata may spell it in lower case), namespace, name.
  const policyRoute = (nsLabel: string): Matcher[] =>
    r.route && rk !== "ServiceProfile"
      ? [
        { label: "route_kind", op: "=~", value: `(?i)${regexLiteral(rk!)}` },
        ...(r.route.namespace ? [{ label: nsLabel, value: r.route.namespace }] : []),
        ...(r.route.name ? [{ label: "route_name", value: r.route.name }] : []),
      ]
      : [];
  const pSel = selector([...client, ...parent, ...policyRoute("route_namespace")]);
  const domain = r.clusterDomain ?? "cluster.local";
  const svcDst = (name: string | undefined, ns: string | undefined) =>
    `${name ? regexLiteral(name) : "[^.]+"}\\.${ns ? regexLiteral(ns) : "[^.]+"}\\.svc\\.${
      regexLiteral(domain)
    }`;
  let dst: Matcher[] = [];
  if (r.service) {
    dst = [{ label: "dst", op: "=~", value: `${svcDst(r.service.name, r.service.namespace)}(:\\d+)?` }];
  } else if (rk === "ServiceProfile") {
    // The profile's name is the authority it applies to; without one, every Service's in the namespace.
    const host = r.route?.name ? regexLiteral(r.route.name) : svcDst(undefined, r.route?.namespace);
    dst = [{ label: "dst", op: "=~", value: `${host}(:\\d+)?` }];
  }
  const spSel = selector([{ label: "direction", value: "outbound" }, ...client, ...dst]);
  const profileKey = rk === "ServiceProfile" ? ["dst"] : PROFILE_KEY;
  const protos = rk === undefined
    ? ["http", "grpc"] as const
    : rk === "HTTPRoute"
    ? ["http"] as const
    : rk === "GRPCRoute"
    ? ["grpc"] as const
    : [] as const;
  const q: Record<string, string> = {};
  for (const proto of protos) {
    const fam = `outbound_${proto}_route`;
    const status = proto === "http" ? "http_status" : "grpc_status";
    q[`policy-${proto}:statuses`] = `sum(increase(${fam}_request_statuses_total${pSel}[${w}])) by ${
      by([...POLICY_ROUTE_KEY, status, "error"])
    }`;
    for (const qt of QUANTILES) {
      q[`policy-${proto}:${qt}`] =
        `histogram_quantile(${qt}, sum(rate(${fam}_request_duration_seconds_bucket${pSel}[${w}])) by ${
          by(["le", ...POLICY_ROUTE_KEY])
        }) * 1000`;
    }
  }
  if (rk === undefined || rk === "ServiceProfile") {
    q["profile:statuses"] = `sum(increase(route_response_total${spSel}[${w}])) by ${
      by([...profileKey, "classification"])
    }`;
    for (const qt of QUANTILES) {
      q[`profile:${qt}`] =
        `histogram_quantile(${qt}, sum(rate(route_response_latency_ms_bucket${spSel}[${w}])) by ${
          by(["le", ...profileKey])
        })`;
    }
  }
  const inbound = rk === undefined
    ? r.workload !== undefined && !r.service
    : rk !== "ServiceProfile" && !r.workload;
  if (inbound) {
    const iSel = selector([
      { label: "direction", value: "inbound" },
      ...client,
      ...(rk ? policyRoute("namespace") : []),
      { label: "route_name", op: "!=", value: "" },
    ]);
    q["inbound:statuses"] = `sum(increase(response_total${iSel}[${w}])) by ${
      by([...INBOUND_KEY, "classification"])
    }`;
    for (const qt of QUANTILES) {
      q[`inbound:${qt}`] = `histogram_quantile(${qt}, sum(rate(response_latency_ms_bucket${iSel}[${w}])) by ${
        by(["le", ...INBOUND_KEY])
      })`;
    }
  }
  return q;
}

export interface RouteRow {
  source: RouteSource;
  /** HTTPRoute, GRPCRoute, ServiceProfile, default, … */
  kind: string;
  route: string;
  /** What the route hangs on: `svc/web:8080`, the profile's authority, or the Server of an inbound route. */
  parent: string;
  namespace: string;
  /** A policy route's own namespace, when it differs from its parent's (a consumer route in the client's). */
  route_namespace?: string;
  success: number | null;
  rps: number | null;
  requests_success: number;
  requests_failure: number;
  latency_ms_p50: number | null;
  latency_ms_p95: number | null;
  latency_ms_p99: number | null;
}

/** Whether one status series is a success: no proxy error and no 5xx (HTTP) / OK (gRPC), or as classified. */
export function isSuccess(source: RouteSource, m: Record<string, string>): boolean {
  if (source === "profile" || source === "inbound") return m.classification === "success";
  if (m.error) return false;
  if (source === "policy-grpc") return m.grpc_status === "OK";
  const s = Number(m.http_status);
  return Number.isFinite(s) && s > 0 && s < 500;
}

function describe(
  source: RouteSource,
  m: Record<string, string>,
): Omit<
  RouteRow,
  | "success"
  | "rps"
  | "requests_success"
  | "requests_failure"
  | "latency_ms_p50"
  | "latency_ms_p95"
  | "latency_ms_p99"
> {
  switch (source) {
    case "profile":
      return {
        source,
        kind: "ServiceProfile",
        route: m.rt_route || "[DEFAULT]",
        parent: m.dst ?? "",
        namespace: (m.dst ?? "").split(".")[1] ?? "",
      };
    case "inbound":
      return {
        source,
        kind: m.route_kind || "route",
        route: m.route_name ?? "",
        parent: `${m.srv_kind ?? "server"}/${m.srv_name ?? ""}`,
        namespace: m.namespace ?? "",
      };
    default: {
      const pk = (m.parent_kind ?? "").toLowerCase() === "service"
        ? "svc"
        : (m.parent_kind ?? "").toLowerCase();
      return {
        source,
        kind: m.route_kind || "default",
        route: m.route_name ?? "",
        parent: `${pk}/${m.parent_name ?? ""}${m.parent_port ? `:${m.parent_port}` : ""}`,
        namespace: m.parent_namespace ?? "",
        ...(m.route_namespace && m.route_namespace !== m.parent_namespace
          ? { route_namespace: m.route_namespace }
          : {}),
      };
    }
  }
}

export function foldRoutes(results: Record<string, PromSample[]>, windowS: number): RouteRow[] {
  const rows = new Map<string, RouteRow>();
  const key = (source: RouteSource, m: Record<string, string>) => {
    const d = describe(source, m);
    // A consumer route (in the client's namespace) is not its producer route of the same name on the same parent.
    const rns = d.route_namespace ?? "";
    return {
      k: `${source}\u0000${d.namespace}\u0000${d.parent}\u0000${d.kind}\u0000${rns}\u0000${d.route}`,
      d,
    };
  };
  for (const [name, samples] of Object.entries(results)) {
    const [source, what] = name.split(":") as [RouteSource, string];
    for (const s of samples) {
      if (!Number.isFinite(s.value)) continue;
      const { k, d } = key(source, s.metric);
      let row = rows.get(k);
      if (!row) {
        rows.set(
          k,
          row = {
            ...d,
            success: null,
            rps: null,
            requests_success: 0,
            requests_failure: 0,
            latency_ms_p50: null,
            latency_ms_p95: null,
            latency_ms_p99: null,
          },
        );
      }
      if (what === "statuses") {
        if (isSuccess(source, s.metric)) row.requests_success += s.value;
        else row.requests_failure += s.value;
      } else if (what === "0.5") row.latency_ms_p50 = s.value;
      else if (what === "0.95") row.latency_ms_p95 = s.value;
      else if (what === "0.99") row.latency_ms_p99 = s.value;
    }
  }
  const out = [...rows.values()].filter((r) => r.requests_success + r.requests_failure > 0);
  for (const r of out) {
    const total = r.requests_success + r.requests_failure;
    r.success = r.requests_success / total;
    r.rps = total / windowS;
    r.requests_success = Math.round(r.requests_success);
    r.requests_failure = Math.round(r.requests_failure);
  }
  return out.sort((a, b) =>
    `${a.namespace}/${a.parent}/${a.route}/${a.source}`.localeCompare(
      `${b.namespace}/${b.parent}/${b.route}/${b.source}`,
    )
  );
}

/** The first bucket of Linkerd's route-duration histogram, in ms: quantiles inside it are only a bound. */
const POLICY_FIRST_BUCKET_MS = 50;

/** A route's latency cell: a policy route's quantile inside the first bucket is printed as the bound. */
export function fmtRouteLatency(source: RouteSource, ms: number | null): string {
  return source.startsWith("policy") && ms !== null && ms <= POLICY_FIRST_BUCKET_MS
    ? `≤${POLICY_FIRST_BUCKET_MS}ms`
    : fmtLatency(ms ?? undefined);
}

export function renderRoutes(rows: readonly RouteRow[], color: boolean): string {
  const v = (x: number | null) => x ?? undefined;
  const lat = (r: RouteRow, x: number | null) => fmtRouteLatency(r.source, x);
  return renderTable(
    ["ROUTE", "KIND", "PARENT", "SUCCESS", "RPS", "LATENCY_P50", "LATENCY_P95", "LATENCY_P99"],
    rows.map((r): (string | Cell)[] => [
      r.route,
      r.source === "inbound" ? `${r.kind} (inbound)` : r.kind,
      r.parent,
      fmtSuccess(v(r.success)),
      fmtRps(v(r.rps)),
      lat(r, r.latency_ms_p50),
      lat(r, r.latency_ms_p95),
      lat(r, r.latency_ms_p99),
    ]),
    color,
  );
}

export async function collectRoutes(
  req: RoutesRequest,
  windowS: number,
  views: Pick<Awaited<ReturnType<typeof openViews>>, "prom">,
  ctx: CliContext,
): Promise<RouteRow[]> {
  return foldRoutes(await queryAll(views.prom, routeQueries(req), ctx), windowS);
}

export const routesCommand: Command = {
  name: "routes",
  summary: "per route (HTTPRoute, GRPCRoute, ServiceProfile, Server routes): success rate, RPS, latency",
  async run(args, ctx) {
    const f = parseFlags(args, ROUTES_FLAGS);
    if (f.help) {
      await ctx.out(
        `usage: weft routes svc[/NAME] | KIND/NAME [--to svc/NAME] [flags]\n\n` +
          `svc[/NAME]      routes of the Service(s), as every client sent them\n` +
          `KIND/NAME       the workload's outbound routes (all, or --to one Service) and its inbound Server routes\n\n` +
          `${flagHelp(ROUTES_FLAGS)}\n`,
      );
      return 0;
    }
    const [what, extra] = f.positionals;
    if (!what) throw new UsageError("which routes? e.g. weft routes svc/web -n weft-demo");
    if (extra !== undefined) throw new UsageError(`unexpected argument "${extra}"`);
    const windowS = parseWindow(f.values.get("time-window") ?? "1m", "--time-window");
    const output = parseOutput(f.values.get("output"));
    parseTarget(what);
    const views = await openViews(f, ctx);
    const ns = f.values.get("namespace") ?? contextNamespace(views.kube);
    const t = parseTarget(what, ns);
    const req: RoutesRequest = { window: windowText(windowS) };
    if (t.kind.label === "service") req.service = t;
    else if (t.kind.label === "namespace") {
      throw new UsageError("routes are per Service or per workload, not per namespace");
    } else {
      if (!t.name) throw new UsageError(`a workload needs a name: ${t.kind.short}/NAME`);
      req.workload = t;
      const to = f.values.get("to");
      if (to) {
        const s = parseTarget(to, f.values.get("to-namespace") ?? ns);
        if (s.kind.label !== "service") {
          throw new UsageError(`--to must be a Service (svc/NAME), got "${to}"`);
        }
        req.service = s;
      }
    }
    const rows = await collectRoutes(req, windowS, views, ctx);
    if (output === "json") {
      await ctx.out(JSON.stringify(rows, null, 2) + "\n");
      return 0;
    }
    if (rows.length === 0) {
      ctx.err(`no route traffic in the last ${windowText(windowS)} for ${what} in namespace ${ns}`);
      return 0;
    }
    await ctx.out(renderRoutes(rows, useColor(ctx.stdoutIsTty, ctx.env)));
    return 0;
  },
};
