/**
 * `weft resources`: proxy sizing from observation. Per workload (and per control-plane component) it reads
 * the proxies' own `process_cpu_seconds_total` and `process_resident_memory_bytes` from the metrics store
 * over a window, and recommends `config.linkerd.io/proxy-{cpu,memory}-{request,limit}`: requests from
 * the window's average, limits from its peak, each with the stated headroom, as annotations ready to apply
 * to the pod template.
 */
import type { CliContext, Command } from "./context.ts";
import { UsageError } from "./context.ts";
import { CONNECT_FLAGS, openViews, queryAll } from "./connect.ts";
import { flagHelp, type FlagSpec, parseFlags, parseWindow, windowText } from "./flags.ts";
import { KINDS, listPath } from "./kinds.ts";
import { podInfo, PROXY_CONTAINER } from "./kube_objects.ts";
import type { PromSample } from "./prometheus.ts";
import { by, type Matcher, selector } from "./promql.ts";
import { renderTable } from "./table.ts";

export const RESOURCES_FLAGS: readonly FlagSpec[] = [
  { name: "namespace", short: "n", help: "only this namespace", default: "every namespace" },
  { name: "window", short: "w", help: "how far back to observe", default: "1h" },
  { name: "request-headroom", help: "added to the observed average for requests, in percent", default: "25" },
  { name: "limit-headroom", help: "added to the observed peak for limits, in percent", default: "50" },
  {
    name: "output",
    short: "o",
    help: "table (with kubectl commands), json, or patch (commands only)",
    default: "table",
  },
  ...CONNECT_FLAGS,
];

const WORKLOAD_LABELS = ["deployment", "statefulset", "daemonset", "k8s_job"] as const;
const KIND_OF: Record<string, string> = {
  deployment: "deploy",
  statefulset: "sts",
  daemonset: "ds",
  k8s_job: "job",
};
/** Resolution of the CPU-rate subquery: finer than Linkerd's 10 s scrapes would not add anything. */
const STEP = "30s";
export const MIN_CPU_MILLI = 10;
export const MIN_MEMORY_MI = 16;

export function resourceQueries(
  namespace: string | undefined,
  window: string,
  step = STEP,
  rateWindow = "1m",
): Record<string, string> {
  const m: Matcher[] = [{ label: "job", value: "linkerd-proxy" }];
  if (namespace) m.push({ label: "namespace", value: namespace });
  const sel = selector(m);
  const g = by(["namespace", "pod", ...WORKLOAD_LABELS, "control_plane_component"]);
  const cpu = `rate(process_cpu_seconds_total${sel}[${rateWindow}])`;
  return {
    cpuPeak: `max by ${g} (max_over_time(${cpu}[${window}:${step}]))`,
    cpuAvg: `max by ${g} (avg_over_time(${cpu}[${window}:${step}]))`,
    memPeak: `max by ${g} (max_over_time(process_resident_memory_bytes${sel}[${window}]))`,
    memAvg: `max by ${g} (avg_over_time(process_resident_memory_bytes${sel}[${window}]))`,
  };
}

export interface Usage {
  namespace: string;
  /** `deploy/web`, or `pod/x` for a bare pod. */
  workload: string;
  control_plane_component: string;
  pods: number;
  cpu_avg_cores: number;
  cpu_peak_cores: number;
  memory_avg_bytes: number;
  memory_peak_bytes: number;
}

export interface Recommendation extends Usage {
  annotations: Record<string, string>;
  /** What the proxy containers ask for today (from the pod specs), when known. */
  current?: { requests?: Record<string, string>; limits?: Record<string, string> };
}

export function workloadName(m: Record<string, string>): string {
  for (const l of WORKLOAD_LABELS) if (m[l]) return `${KIND_OF[l]}/${m[l]}`;
  return `pod/${m.pod ?? ""}`;
}

/** Per workload, the largest figure of any of its pods (a limit must fit the busiest replica). */
export function foldUsage(r: Record<string, PromSample[]>): Usage[] {
  const out = new Map<string, Usage & { podSet: Set<string> }>();
  const fields = {
    cpuPeak: "cpu_peak_cores",
    cpuAvg: "cpu_avg_cores",
    memPeak: "memory_peak_bytes",
    memAvg: "memory_avg_bytes",
  } as const;
  for (
    const [q, field] of Object.entries(fields) as [
      keyof typeof fields,
      (typeof fields)[keyof typeof fields],
    ][]
  ) {
    for (const s of r[q] ?? []) {
      if (!Number.isFinite(s.value)) continue;
      const ns = s.metric.namespace ?? "";
      const w = workloadName(s.metric);
      const k = `${ns}/${w}`;
      let u = out.get(k);
      if (!u) {
        out.set(
          k,
          u = {
            namespace: ns,
            workload: w,
            control_plane_component: s.metric.control_plane_component ?? "",
            pods: 0,
            cpu_avg_cores: 0,
            cpu_peak_cores: 0,
            memory_avg_bytes: 0,
            memory_peak_bytes: 0,
            podSet: new Set(),
          },
        );
      }
      if (s.metric.pod) u.podSet.add(s.metric.pod);
      u[field] = Math.max(u[field], s.value);
    }
  }
  return [...out.values()].map(({ podSet, ...u }) => ({ ...u, pods: podSet.size }))
    .sort((a, b) => `${a.namespace}/${a.workload}`.localeCompare(`${b.namespace}/${b.workload}`));
}

export function cpuQuantity(cores: number): string {
  const milli = Math.max(MIN_CPU_MILLI, Math.ceil((cores * 1000) / 5) * 5);
  return `${milli}m`;
}

export function memoryQuantity(bytes: number): string {
  const mi = Math.max(MIN_MEMORY_MI, Math.ceil(bytes / (1024 * 1024)));
  return `${mi}Mi`;
}

export function recommend(u: Usage, requestHeadroom: number, limitHeadroom: number): Recommendation {
  const req = 1 + requestHeadroom / 100;
  const lim = 1 + limitHeadroom / 100;
  const cpuReq = cpuQuantity(u.cpu_avg_cores * req);
  const memReq = memoryQuantity(u.memory_avg_bytes * req);
  // A limit is never below the request it pairs with.
  const cpuLim = cpuQuantity(Math.max(u.cpu_peak_cores * lim, parseFloat(cpuReq) / 1000));
  const memLim = memoryQuantity(Math.max(u.memory_peak_bytes * lim, parseFloat(memReq) * 1024 * 1024));
  return {
    ...u,
    annotations: {
      "config.linkerd.io/proxy-cpu-request": cpuReq,
      "config.linkerd.io/proxy-cpu-limit": cpuLim,
      "config.linkerd.io/proxy-memory-request": memReq,
      "config.linkerd.io/proxy-memory-limit": memLim,
    },
  };
}

/** `kubectl patch` of the pod template (annotations on the workload object itself would not reach the pods). */
export function patchCommand(r: Recommendation): string | undefined {
  if (r.workload.startsWith("pod/")) return undefined;
  const patch = JSON.stringify({ spec: { template: { metadata: { annotations: r.annotations } } } });
  return `kubectl -n ${r.namespace} patch ${r.workload} --type merge -p '${patch}'`;
}

function cores(c: number): string {
  return `${Math.round(c * 1000 * 10) / 10}m`;
}

function mib(b: number): string {
  return `${(b / 1024 / 1024).toFixed(1)}Mi`;
}

export function renderResources(
  recs: readonly Recommendation[],
  requestHeadroom: number,
  limitHeadroom: number,
): string {
  const a = (r: Recommendation, k: string) => r.annotations[`config.linkerd.io/proxy-${k}`];
  const table = renderTable(
    [
      "NAMESPACE",
      "WORKLOAD",
      "PODS",
      "CPU_AVG",
      "CPU_PEAK",
      "MEM_AVG",
      "MEM_PEAK",
      "CPU_REQ",
      "CPU_LIM",
      "MEM_REQ",
      "MEM_LIM",
      "NOW",
    ],
    recs.map((r) => [
      r.namespace,
      r.control_plane_component ? `${r.workload} (control plane)` : r.workload,
      String(r.pods),
      cores(r.cpu_avg_cores),
      cores(r.cpu_peak_cores),
      mib(r.memory_avg_bytes),
      mib(r.memory_peak_bytes),
      a(r, "cpu-request"),
      a(r, "cpu-limit"),
      a(r, "memory-request"),
      a(r, "memory-limit"),
      r.current ? currentText(r.current) : "-",
    ]),
  );
  return `${table}\nrequests = observed average + ${requestHeadroom}%, limits = observed peak + ${limitHeadroom}% ` +
    `(at least ${MIN_CPU_MILLI}m CPU and ${MIN_MEMORY_MI}Mi memory)\n`;
}

function currentText(c: NonNullable<Recommendation["current"]>): string {
  const part = (x?: Record<string, string>) => x ? `${x.cpu ?? "-"}/${x.memory ?? "-"}` : "-/-";
  return `req ${part(c.requests)} lim ${part(c.limits)}`;
}

function percent(f: Map<string, string>, name: string, d: number): number {
  const v = f.get(name);
  if (v === undefined) return d;
  const n = Number(v.replace(/%$/, ""));
  if (!Number.isFinite(n) || n < 0 || n > 1000) {
    throw new UsageError(`--${name}: "${v}" is not a percentage 0..1000`);
  }
  return n;
}

// deno-lint-ignore no-explicit-any
type Json = any;

export const resourcesCommand: Command = {
  name: "resources",
  summary:
    "observed proxy CPU/memory per workload and control-plane component, and proxy-* annotations to set",
  async run(args, ctx: CliContext) {
    const f = parseFlags(args, RESOURCES_FLAGS);
    if (f.help) {
      await ctx.out(`usage: weft resources [flags]\n\n${flagHelp(RESOURCES_FLAGS)}\n`);
      return 0;
    }
    if (f.positionals.length > 0) throw new UsageError(`unexpected argument "${f.positionals[0]}"`);
    const windowS = parseWindow(f.values.get("window") ?? "1h", "--window");
    const reqH = percent(f.values, "request-headroom", 25);
    const limH = percent(f.values, "limit-headroom", 50);
    const output = f.values.get("output") ?? "table";
    if (!["table", "json", "patch"].includes(output)) {
      throw new UsageError(`-o: "${output}" is not table, json or patch`);
    }
    const views = await openViews(f, ctx);
    const ns = f.values.get("namespace");
    const podKind = KINDS.find((k) => k.label === "pod")!;
    const [results, pods] = await Promise.all([
      queryAll(views.prom, resourceQueries(ns, windowText(windowS)), ctx),
      views.kube.list<Json>(listPath(podKind, ns)),
    ]);
    const current = new Map<string, Recommendation["current"]>();
    for (const p of pods) {
      const c = [...(p.spec?.initContainers ?? []), ...(p.spec?.containers ?? [])].find((x: Json) =>
        x.name === PROXY_CONTAINER
      );
      const info = podInfo(p);
      if (c?.resources) current.set(`${info.namespace}/${info.name}`, c.resources);
    }
    const recs = foldUsage(results).map((u) => recommend(u, reqH, limH));
    // The current proxy resources of one of the workload's pods, to compare with.
    for (const r of recs) {
      const sample = (results.memPeak ?? []).find((s) =>
        s.metric.namespace === r.namespace && workloadName(s.metric) === r.workload
      );
      const cur = sample ? current.get(`${r.namespace}/${sample.metric.pod}`) : undefined;
      if (cur && (cur.requests || cur.limits)) r.current = cur;
    }
    if (recs.length === 0) {
      ctx.err(
        `no proxy process metrics in the last ${
          windowText(windowS)
        }: are proxies scraped, and do they export process_* (weft ≥ issue 22)?`,
      );
      return output === "json" ? (await ctx.out("[]\n"), 0) : 0;
    }
    if (output === "json") {
      await ctx.out(JSON.stringify(recs, null, 2) + "\n");
      return 0;
    }
    const cmds = recs.map(patchCommand).filter((x): x is string => !!x);
    if (output === "patch") {
      await ctx.out(cmds.join("\n") + "\n");
      return 0;
    }
    let text = renderResources(recs, reqH, limH);
    text += `\nto apply (the pods roll; control-plane patches are undone by the next deno task deploy):\n${
      cmds.join("\n")
    }\n`;
    await ctx.out(text);
    return 0;
  },
};
