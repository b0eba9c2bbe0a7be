/**
 * `weft stat KIND[/NAME]`: per resource, meshed pods (from the Kubernetes API), success rate, requests per
 * second, latency percentiles and open TCP connections (from the metrics store), as `linkerd viz stat`.
 */
import type { CliContext, Command } from "./context.ts";
import { UsageError } from "./context.ts";
import { CONNECT_FLAGS, contextNamespace, openViews, queryAll } from "./connect.ts";
import { flagHelp, type FlagSpec, parseFlags, parseOutput, parseWindow, windowText } from "./flags.ts";
import { listPath, parseTarget, type Target } from "./kinds.ts";
import { listWithPods, meshedCount, podsOf } from "./kube_objects.ts";
import type { PromSample } from "./prometheus.ts";
import { isSuccess } from "./routes.ts";
import { planStat, type StatPlan, type StatQueryName } from "./stat_plan.ts";
import { routeStatOptions, runRouteStat } from "./stat_routes.ts";
import { ROUTE_KINDS } from "./route_kinds.ts";

const ROUTE_KIND_NAMES = ROUTE_KINDS.map((k) => [k.short, ...k.aliases].join("|")).join(", ");
import {
  type Cell,
  fmtBytesRate,
  fmtCount,
  fmtLatency,
  fmtRps,
  fmtSuccess,
  renderTable,
  useColor,
} from "./table.ts";

export const STAT_FLAGS: readonly FlagSpec[] = [
  {
    name: "namespace",
    short: "n",
    help: "namespace of the resources",
    default: "the context's, else default",
  },
  { name: "all-namespaces", short: "A", bool: true, help: "every namespace" },
  { name: "from", help: "only traffic from this resource (KIND/NAME)" },
  { name: "from-namespace", help: "namespace of --from", default: "--namespace" },
  { name: "to", help: "only traffic to this resource (KIND/NAME)" },
  { name: "to-namespace", help: "namespace of --to", default: "--namespace" },
  { name: "time-window", short: "t", help: "window the figures are taken over", default: "1m" },
  {
    name: "output",
    short: "o",
    help: "table, wide (adds TLS share and TCP bytes) or json",
    default: "table",
  },
  ...CONNECT_FLAGS,
];

/** One row of `weft stat`, also its JSON form (keys as Linkerd's `-o json`). */
export interface StatRow {
  namespace: string;
  kind: string;
  name: string;
  meshed: string;
  meshed_pods?: number;
  running_pods?: number;
  success: number | null;
  rps: number | null;
  latency_ms_p50: number | null;
  latency_ms_p95: number | null;
  latency_ms_p99: number | null;
  tcp_open_connections: number | null;
  tls_share: number | null;
  tcp_read_bytes_rate: number | null;
  tcp_write_bytes_rate: number | null;
  requests_success: number;
  requests_failure: number;
}

interface Acc {
  success: number;
  failure: number;
  tls: number;
  p50?: number;
  p95?: number;
  p99?: number;
  tcp?: number;
  read?: number;
  write?: number;
}

export function keyOf(plan: StatPlan, metric: Record<string, string>): string {
  const ns = metric[plan.groupBy[0]] ?? "";
  const name = plan.groupBy.length > 1 ? metric[plan.groupBy[1]] ?? "" : ns;
  return `${ns}/${name}`;
}

/** Folds the answers of the plan's queries into per-resource figures, keyed `namespace/name`. */
export function foldStat(plan: StatPlan, results: Record<StatQueryName, PromSample[]>): Map<string, Acc> {
  const out = new Map<string, Acc>();
  const acc = (m: Record<string, string>) => {
    const k = keyOf(plan, m);
    let a = out.get(k);
    if (!a) out.set(k, a = { success: 0, failure: 0, tls: 0 });
    return a;
  };
  for (const s of results.responses) {
    if (!Number.isFinite(s.value)) continue;
    const a = acc(s.metric);
    if (s.metric.classification === "success") a.success += s.value;
    else if (s.metric.classification === "failure") a.failure += s.value;
    if (s.metric.tls === "true") a.tls += s.value;
  }
  for (const q of ["p50", "p95", "p99", "tcp", "read", "write"] as const) {
    for (const s of results[q]) if (Number.isFinite(s.value)) acc(s.metric)[q] = s.value;
  }
  if (plan.routeGroupBy) {
    // A Service's success and volume as its clients' logical requests (see StatPlan.routeGroupBy).
    const routed = new Map<string, { success: number; failure: number }>();
    for (const [q, source] of [["routeHttp", "policy-http"], ["routeGrpc", "policy-grpc"]] as const) {
      for (const s of results[q] ?? []) {
        if (!Number.isFinite(s.value)) continue;
        const k = `${s.metric[plan.routeGroupBy[0]] ?? ""}/${s.metric[plan.routeGroupBy[1]] ?? ""}`;
        let r = routed.get(k);
        if (!r) routed.set(k, r = { success: 0, failure: 0 });
        if (isSuccess(source, s.metric)) r.success += s.value;
        else r.failure += s.value;
      }
    }
    for (const [k, r] of routed) {
      if (r.success + r.failure <= 0) continue;
      let a = out.get(k);
      if (!a) out.set(k, a = { success: 0, failure: 0, tls: 0 });
      // The mTLS share stays that of the responses the endpoints gave.
      const share = a.success + a.failure > 0 ? a.tls / (a.success + a.failure) : 0;
      a.success = r.success;
      a.failure = r.failure;
      a.tls = share * (r.success + r.failure);
    }
  }
  return out;
}

export function statRow(
  key: string,
  kindShort: string,
  a: Acc | undefined,
  windowS: number,
  meshed: { meshed: number; total: number } | undefined,
): StatRow {
  const [namespace, name] = key.split("/");
  const total = a ? a.success + a.failure : 0;
  const has = total > 0;
  const n = (v: number | undefined) => v === undefined || Number.isNaN(v) ? null : v;
  return {
    namespace,
    kind: kindShort,
    name,
    meshed: meshed ? `${meshed.meshed}/${meshed.total}` : "-",
    ...(meshed ? { meshed_pods: meshed.meshed, running_pods: meshed.total } : {}),
    success: has ? a!.success / total : null,
    rps: has ? total / windowS : null,
    latency_ms_p50: has ? n(a!.p50) : null,
    latency_ms_p95: has ? n(a!.p95) : null,
    latency_ms_p99: has ? n(a!.p99) : null,
    tcp_open_connections: n(a?.tcp),
    tls_share: has ? a!.tls / total : null,
    tcp_read_bytes_rate: a?.read === undefined ? null : a.read / windowS,
    tcp_write_bytes_rate: a?.write === undefined ? null : a.write / windowS,
    requests_success: Math.round(a?.success ?? 0),
    requests_failure: Math.round(a?.failure ?? 0),
  };
}

export function renderStat(rows: readonly StatRow[], wide: boolean, allNs: boolean, color: boolean): string {
  const headers = [
    ...(allNs ? ["NAMESPACE"] : []),
    "NAME",
    "MESHED",
    "SUCCESS",
    "RPS",
    "LATENCY_P50",
    "LATENCY_P95",
    "LATENCY_P99",
    "TCP_CONN",
    ...(wide ? ["TLS", "READ_BYTES/SEC", "WRITE_BYTES/SEC"] : []),
  ];
  const v = (x: number | null) => x ?? undefined;
  const body = rows.map((r): (string | Cell)[] => [
    ...(allNs ? [r.namespace] : []),
    r.name,
    r.meshed,
    fmtSuccess(v(r.success)),
    fmtRps(v(r.rps)),
    fmtLatency(v(r.latency_ms_p50)),
    fmtLatency(v(r.latency_ms_p95)),
    fmtLatency(v(r.latency_ms_p99)),
    fmtCount(v(r.tcp_open_connections)),
    ...(wide
      ? [
        r.tls_share === null ? "-" : `${Math.round(r.tls_share * 100)}%`,
        fmtBytesRate(v(r.tcp_read_bytes_rate)),
        fmtBytesRate(v(r.tcp_write_bytes_rate)),
      ]
      : []),
  ]);
  return renderTable(headers, body, color);
}

export interface StatOptions {
  target: Target;
  from?: Target;
  to?: Target;
  windowS: number;
  allNamespaces: boolean;
}

export function statOptions(args: readonly string[], defaultNs: () => string): {
  opts: StatOptions;
  flags: ReturnType<typeof parseFlags>;
} {
  const f = parseFlags(args, STAT_FLAGS);
  const [what, name, extra] = f.positionals;
  if (!what) throw new UsageError("which resources? e.g. weft stat deploy -n weft-demo");
  if (extra !== undefined) throw new UsageError(`unexpected argument "${extra}"`);
  const all = f.bools.has("all-namespaces");
  const ns = all ? undefined : f.values.get("namespace") ?? defaultNs();
  let target: Target;
  try {
    target = parseTarget(name ? `${what}/${name}` : what, ns);
  } catch (e) {
    // stat takes route kinds too (cli/stat_routes.ts); the workload kinds' message alone would hide them.
    if (e instanceof UsageError && e.message.includes("is not a resource kind")) {
      throw new UsageError(`${e.message.replace(/\)$/, "")}, or a route kind: ${ROUTE_KIND_NAMES})`);
    }
    throw e;
  }
  const side = (flag: string) => {
    const t = f.values.get(flag);
    if (!t) return undefined;
    const tns = f.values.get(`${flag}-namespace`) ?? ns;
    const parsed = parseTarget(t, tns);
    if (!parsed.name && parsed.kind.label !== "namespace") {
      throw new UsageError(`--${flag} needs KIND/NAME, got "${t}"`);
    }
    return parsed;
  };
  const from = side("from");
  const to = side("to");
  if (from && to) throw new UsageError("--from and --to cannot be used together");
  if (from?.kind.label === "service") {
    throw new UsageError("--from svc/… is not supported: a Service sends no traffic");
  }
  const windowS = parseWindow(f.values.get("time-window") ?? "1m", "--time-window");
  return { opts: { target, from, to, windowS, allNamespaces: all }, flags: f };
}

/** Queries and assembles the rows (used by `stat` and, per refresh, by tests). */
export async function collectStat(
  o: StatOptions,
  views: Awaited<ReturnType<typeof openViews>>,
  ctx: CliContext,
): Promise<StatRow[]> {
  const plan = planStat({ target: o.target, from: o.from, to: o.to, window: windowText(o.windowS) });
  const ns = o.target.namespace;
  const [results, k8s] = await Promise.all([
    queryAll(views.prom, plan.queries, ctx),
    listWithPods(views.kube, o.target.kind, ns),
  ]);
  const figures = foldStat(plan, results);
  let objects = k8s.objects;
  if (o.target.name) objects = objects.filter((x) => x.name === o.target.name);
  const keyOfObject = (x: { namespace: string; name: string }) =>
    o.target.kind.label === "namespace" ? `${x.name}/${x.name}` : `${x.namespace}/${x.name}`;
  const objectByKey = new Map(objects.map((x) => [keyOfObject(x), x]));
  const keys = plan.rowsFromMetrics
    ? [...figures.keys()].filter((k) => {
      const [kns] = k.split("/");
      return !ns || o.target.kind.label === "namespace" || kns === ns;
    })
    : [...objectByKey.keys()];
  keys.sort();
  return keys.map((k) => {
    const obj = objectByKey.get(k);
    const meshed = obj ? meshedCount(podsOf(o.target.kind, obj, k8s.pods)) : undefined;
    return statRow(k, o.target.kind.short, figures.get(k), o.windowS, meshed);
  });
}

export const statCommand: Command = {
  name: "stat",
  summary:
    "success rate, RPS, latency and TCP connections per deploy|po|svc|ns|sts|ds|job, and per route (httproute|grpcroute|sp)",
  async run(args, ctx) {
    const first = parseFlags(args, STAT_FLAGS);
    if (first.help) {
      await ctx.out(
        `usage: weft stat KIND[/NAME] [flags]\n\n` +
          `KIND: deploy, po, svc, ns, sts, ds, rs, job (kubectl's names), or a route kind:\n` +
          `httproute (hr), grpcroute, serviceprofile (sp) — rows per route and parent, from route traffic\n\n` +
          `${flagHelp(STAT_FLAGS)}\n`,
      );
      return 0;
    }
    if (routeStatOptions(first, () => "default")) return await runRouteStat(first, ctx);
    statOptions(args, () => "default"); // usage errors before any network
    const views = await openViews(first, ctx);
    const { opts, flags } = statOptions(args, () => contextNamespace(views.kube));
    if (opts.target.name && opts.target.namespace && opts.target.kind.label !== "namespace") {
      // A named resource that does not exist is a user error worth saying, not an empty table.
      const path = `${listPath(opts.target.kind, opts.target.namespace)}/${opts.target.name}`;
      if (!await views.kube.get(path)) {
        throw new UsageError(
          `${opts.target.kind.label} ${opts.target.namespace}/${opts.target.name} not found`,
        );
      }
    }
    const rows = await collectStat(opts, views, ctx);
    const output = parseOutput(flags.values.get("output"));
    if (output === "json") {
      await ctx.out(JSON.stringify(rows, null, 2) + "\n");
      return 0;
    }
    if (rows.length === 0) {
      ctx.err(`no resources found${opts.target.namespace ? ` in namespace ${opts.target.namespace}` : ""}`);
      return 0;
    }
    await ctx.out(
      renderStat(rows, output === "wide", opts.allNamespaces, useColor(ctx.stdoutIsTty, ctx.env)),
    );
    return 0;
  },
};
