/**
 * `weft top KIND`: a live table of who sends how much to whom, refreshed every `--interval`, heaviest
 * first. Linkerd's top is built on tap; this one reads the clients' outbound series in the metrics store,
 * so it costs the proxies nothing and covers every request, at the store's scrape resolution. It stops
 * after `--duration`, or cleanly on Ctrl-C.
 */
import type { CliContext, Command } from "./context.ts";
import { UsageError } from "./context.ts";
import { CONNECT_FLAGS, contextNamespace, openViews, queryAll } from "./connect.ts";
import { flagHelp, type FlagSpec, parseFlags, parseOutput, parseWindow, windowText } from "./flags.ts";
import { findKind, type Kind } from "./kinds.ts";
import type { PromSample } from "./prometheus.ts";
import { by, latencyQuery, type Matcher, selector } from "./promql.ts";
import { type Cell, fmtLatency, fmtRps, fmtSuccess, renderTable, useColor } from "./table.ts";

export const TOP_FLAGS: readonly FlagSpec[] = [
  { name: "namespace", short: "n", help: "sources in this namespace", default: "the context's" },
  { name: "all-namespaces", short: "A", bool: true, help: "sources in every namespace" },
  { name: "interval", help: "time between refreshes", default: "2s" },
  { name: "duration", help: "stop after this long", default: "until Ctrl-C" },
  { name: "time-window", short: "t", help: "window each rate is taken over", default: "30s" },
  { name: "max-rows", help: "rows shown per refresh", default: "20" },
  { name: "output", short: "o", help: "table, or json (one line per refresh)", default: "table" },
  ...CONNECT_FLAGS,
];

export interface TopRow {
  source: string;
  source_namespace: string;
  destination: string;
  destination_namespace: string;
  rps: number;
  success: number | null;
  latency_ms_p50: number | null;
  latency_ms_p99: number | null;
}

export function topQueries(
  kind: Kind,
  namespace: string | undefined,
  window: string,
): Record<string, string> {
  const l = kind.label;
  const m: Matcher[] = [{ label: "direction", value: "outbound" }, { label: l, op: "!=", value: "" }];
  if (namespace) m.push({ label: "namespace", value: namespace });
  const sel = selector(m);
  const g = ["namespace", l, "dst_namespace", `dst_${l}`, "dst_service"];
  return {
    responses: `sum(increase(response_total${sel}[${window}])) by ${by([...g, "classification"])}`,
    p50: latencyQuery(0.5, sel, window, g),
    p99: latencyQuery(0.99, sel, window, g),
  };
}

export function foldTop(kind: Kind, r: Record<string, PromSample[]>, windowS: number): TopRow[] {
  const l = kind.label;
  const rows = new Map<string, TopRow & { ok: number; all: number }>();
  const row = (m: Record<string, string>) => {
    // A destination without a workload label (not meshed, or outside) is named by its Service.
    const dst = m[`dst_${l}`] || (m.dst_service ? `svc/${m.dst_service}` : "(unknown)");
    const k = `${m.namespace}/${m[l]}\u0000${m.dst_namespace ?? ""}/${dst}`;
    let x = rows.get(k);
    if (!x) {
      rows.set(
        k,
        x = {
          source: m[l] ?? "",
          source_namespace: m.namespace ?? "",
          destination: dst,
          destination_namespace: m.dst_namespace ?? "",
          rps: 0,
          success: null,
          latency_ms_p50: null,
          latency_ms_p99: null,
          ok: 0,
          all: 0,
        },
      );
    }
    return x;
  };
  for (const s of r.responses ?? []) {
    if (!(s.value > 0)) continue;
    const x = row(s.metric);
    x.all += s.value;
    if (s.metric.classification === "success") x.ok += s.value;
  }
  for (const [q, field] of [["p50", "latency_ms_p50"], ["p99", "latency_ms_p99"]] as const) {
    for (const s of r[q] ?? []) {
      if (!Number.isFinite(s.value)) continue;
      const x = row(s.metric);
      // Several series (dst_service values) can fold into one row: keep the worst.
      x[field] = Math.max(x[field] ?? 0, s.value);
    }
  }
  return [...rows.values()].filter((x) => x.all > 0).map(({ ok, all, ...x }) => ({
    ...x,
    rps: all / windowS,
    success: ok / all,
  })).sort((a, b) => b.rps - a.rps || a.source.localeCompare(b.source));
}

export function renderTop(rows: readonly TopRow[], allNs: boolean, color: boolean): string {
  const v = (x: number | null) => x ?? undefined;
  const name = (ns: string, n: string) => allNs && ns ? `${ns}/${n}` : n;
  return renderTable(
    ["SOURCE", "DESTINATION", "RPS", "SUCCESS", "LATENCY_P50", "LATENCY_P99"],
    rows.map((r): (string | Cell)[] => [
      name(r.source_namespace, r.source),
      name(r.destination_namespace, r.destination),
      fmtRps(r.rps),
      fmtSuccess(v(r.success)),
      fmtLatency(v(r.latency_ms_p50)),
      fmtLatency(v(r.latency_ms_p99)),
    ]),
    color,
  );
}

/** Sleeps, or returns early (false) when the signal fires. */
export function pause(ms: number, signal: AbortSignal): Promise<boolean> {
  if (signal.aborted) return Promise.resolve(false);
  return new Promise((resolve) => {
    const t = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve(true);
    }, ms);
    const onAbort = () => {
      clearTimeout(t);
      resolve(false);
    };
    signal.addEventListener("abort", onAbort, { once: true });
  });
}

export const topCommand: Command = {
  name: "top",
  summary: "live table of traffic between workloads, heaviest first (--duration, Ctrl-C to stop)",
  async run(args, ctx: CliContext) {
    const f = parseFlags(args, TOP_FLAGS);
    if (f.help) {
      await ctx.out(
        `usage: weft top [KIND] [flags]   (KIND: deploy (default), po, sts, ds, job)\n\n${
          flagHelp(TOP_FLAGS)
        }\n`,
      );
      return 0;
    }
    const [what = "deploy", extra] = f.positionals;
    if (extra !== undefined) throw new UsageError(`unexpected argument "${extra}"`);
    const kind = findKind(what);
    if (kind.label === "service" || kind.label === "namespace") {
      throw new UsageError(`top shows traffic between workloads or pods, not ${kind.label}s`);
    }
    const intervalMs = parseWindow(f.values.get("interval") ?? "2s", "--interval") * 1000;
    const durationMs = f.values.has("duration")
      ? parseWindow(f.values.get("duration")!, "--duration") * 1000
      : Infinity;
    const windowS = parseWindow(f.values.get("time-window") ?? "30s", "--time-window");
    const maxRows = Number(f.values.get("max-rows") ?? "20");
    if (!Number.isInteger(maxRows) || maxRows < 1) {
      throw new UsageError(`--max-rows: "${f.values.get("max-rows")}" is not a positive integer`);
    }
    const output = parseOutput(f.values.get("output"));
    const views = await openViews(f, ctx);
    const all = f.bools.has("all-namespaces");
    const ns = all ? undefined : f.values.get("namespace") ?? contextNamespace(views.kube);
    const queries = topQueries(kind, ns, windowText(windowS));
    const live = ctx.stdoutIsTty && output !== "json";
    const color = useColor(ctx.stdoutIsTty, ctx.env);
    const end = Date.now() + durationMs;
    let refreshes = 0;
    while (!ctx.signal.aborted) {
      let results;
      try {
        results = await queryAll(views.prom, queries, ctx);
      } catch (e) {
        if (ctx.signal.aborted) break;
        throw e;
      }
      const rows = foldTop(kind, results, windowS).slice(0, maxRows);
      refreshes++;
      const at = new Date().toISOString().slice(11, 19);
      if (output === "json") {
        await ctx.out(JSON.stringify({ time: new Date().toISOString(), rows }) + "\n");
      } else {
        const head = `weft top ${kind.short}${ns ? ` -n ${ns}` : " -A"}   ${at}   every ${
          windowText(intervalMs / 1000)
        }, rates over ${windowText(windowS)}${live ? "   (Ctrl-C to stop)" : ""}\n\n`;
        const body = rows.length > 0 ? renderTop(rows, all, color) : "no traffic in the window\n";
        // On a terminal the screen is redrawn in place; in a pipe each refresh follows the last.
        await ctx.out(live ? `\x1b[H\x1b[2J${head}${body}` : `${refreshes > 1 ? "\n" : ""}${head}${body}`);
      }
      const left = end - Date.now();
      if (left <= 0) break;
      if (!await pause(Math.min(intervalMs, left), ctx.signal)) break;
    }
    if (ctx.signal.aborted) ctx.err(`weft top: stopped after ${refreshes} refresh(es)`);
    return 0;
  },
};
