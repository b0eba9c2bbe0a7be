/**
 * The HTTP part of `deno task bench:dataplane`: HTTP/1.1 and gRPC through each path the L4 part
 * sets up (direct, the weft proxy pair, the nginx pair), with the open-loop generator in
 * http_load.ts. Per path and protocol: a warm-up run, latency at fixed rates (100/s and 1,000/s), then a search
 * for the highest rate it sustains (the knee), with the proxies' CPU time read from /proc around
 * every run so throughput can be given per proxy core, and CPU per 1,000 requests.
 */
import type { PodNetwork } from "../testing/netns.ts";
import { backgroundCores, gcMsInFile, procCounters, procMemory, sampleCpu, spread } from "./proc_stats.ts";

const httpLoadTs = new URL("./http_load.ts", import.meta.url).pathname;
const deno = Deno.execPath();

export interface HttpPath {
  /** Key prefix: "direct", "mesh" (weft pair) or "reference" (nginx pair). */
  name: "direct" | "mesh" | "reference";
  label: string;
  /** Where the client runs. */
  pod: string;
  h1Target: string;
  grpcTarget: string;
  /** Proxy processes on this path (none for direct). */
  pids: number[];
  /** Where each of `pids` writes its `--trace-gc` lines (empty when GC is not traced). */
  gcLogs: string[];
}

export interface HttpBenchOptions {
  pods: PodNetwork;
  paths: HttpPath[];
  h1: boolean;
  grpc: boolean;
  /** Seconds per fixed-rate run. */
  secs: number;
  /** Seconds per knee-search step. */
  kneeSecs: number;
  /**
   * Seconds at 1,000/s through each path before its measured runs: the proxies' JIT, connections
   * and discovery warm up, so the fixed-rate figures are the steady state. This run's p99 is
   * reported as `<proto>_<path>_cold_p99_ms_at_1000rps`.
   */
  warmupSecs: number;
  h1Connections: number;
  grpcConnections: number;
  /** Rounds of the fixed-rate runs (paths interleaved in each round); figures are median and range. */
  repeats: number;
  /** The low-rate run (as the demo): requests per second and seconds per round. */
  lowRate: number;
  lowRateSecs: number;
  /** The bench's namespaces (`net:[inode]`), so CPU used outside them counts as background. */
  netns: Set<string>;
}

export const FIXED_RATES = [100, 1000];
/** A step counts as sustained when it completed everything, on time, without a backlog. */
const KNEE_P99_MS = 100;
const KNEE_START = 2000;
const KNEE_FACTOR = 1.5;
const KNEE_MAX_STEPS = 10;
const KNEE_FLOOR = 250;

type Summary = Record<string, number>;
export type Run = Summary & {
  /** Per proxy on the path (mean): CPU seconds, context switches, main-thread GC ms. */
  proxy_cpu_s: number;
  proxy_ctx: number;
  proxy_gc_ms: number;
  /** Cores' worth of CPU the rest of the machine used during the run. */
  background_cores: number;
};

/** utime + stime of a process, in seconds. */
export async function cpuSeconds(pid: number): Promise<number> {
  return (await procCounters(pid)).cpuS;
}

/** Current and peak resident set size, MB. */
export async function memoryMb(pid: number): Promise<{ rss: number; peak: number }> {
  const m = await procMemory(pid);
  return { rss: m.vmRssMb, peak: m.vmHwmMb };
}

const mean = (xs: number[]) => xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : 0;

/** One generator run through `p`, with the path's proxies' CPU, switches and GC around it. */
export async function runLoad(
  o: Pick<HttpBenchOptions, "pods" | "h1Connections" | "grpcConnections" | "netns">,
  p: HttpPath,
  proto: "h1" | "grpc",
  rate: number,
  secs: number,
  connections?: number,
): Promise<Run> {
  const target = proto === "h1" ? p.h1Target : p.grpcTarget;
  const conns = connections ?? (proto === "h1" ? o.h1Connections : o.grpcConnections);
  const before = await Promise.all(p.pids.map(procCounters));
  const gcBefore = await Promise.all(p.gcLogs.map(gcMsInFile));
  const cpuBefore = await sampleCpu(o.netns);
  const r = await o.pods.run(p.pod, [
    deno,
    "run",
    "-A",
    "--cached-only",
    httpLoadTs,
    proto,
    target,
    String(rate),
    String(secs),
    String(conns),
  ]);
  const cpuAfter = await sampleCpu(o.netns);
  const after = await Promise.all(p.pids.map(procCounters));
  const gcAfter = await Promise.all(p.gcLogs.map(gcMsInFile));
  const line = r.stdout.trim().split("\n").pop() ?? "";
  let s: Summary;
  try {
    s = JSON.parse(line);
  } catch {
    throw new Error(`${proto} load ${target} at ${rate}/s from ${p.pod} failed: ${r.stdout} ${r.stderr}`);
  }
  // Means over the path's proxies: each request crosses every one of them once.
  return {
    ...s,
    proxy_cpu_s: mean(after.map((a, i) => a.cpuS - before[i].cpuS)),
    proxy_ctx: mean(after.map((a, i) => a.ctxSwitches - before[i].ctxSwitches)),
    proxy_gc_ms: mean(gcAfter.map((g, i) => g - gcBefore[i])),
    background_cores: backgroundCores(cpuBefore, cpuAfter),
  };
}

/** Requests a run pushed through the proxies (the generator's warm-up requests included). */
const through = (s: Summary) => s.warmup + s.completed + s.errors;

function sustained(s: Summary): boolean {
  return s.errors === 0 && s.incomplete === 0 && s.achieved_rps >= 0.97 * s.offered_rps && s.p99_ms >= 0 &&
    s.p99_ms <= KNEE_P99_MS;
}

/** Geometric steps up from KNEE_START until a step is not sustained, then one step between. */
async function knee(o: HttpBenchOptions, p: HttpPath, proto: "h1" | "grpc") {
  let best: Run | undefined;
  let failed: number | undefined;
  let rate = KNEE_START;
  const steps: string[] = [];
  for (let i = 0; i < KNEE_MAX_STEPS; i++) {
    const s = await runLoad(o, p, proto, rate, o.kneeSecs);
    const ok = sustained(s);
    steps.push(`${rate}${ok ? "✓" : "✗"}`);
    if (!ok) {
      failed = rate;
      break;
    }
    best = s;
    rate = Math.round(rate * KNEE_FACTOR);
  }
  if (failed !== undefined) {
    const mid = Math.round(((best?.offered_rps ?? failed / 2) + failed) / 2);
    const s = await runLoad(o, p, proto, mid, o.kneeSecs);
    const ok = sustained(s);
    steps.push(`${mid}${ok ? "✓" : "✗"}`);
    if (ok) best = s;
  }
  // On a busy machine even the first steps can fail: step down (bounded) so the figure is a
  // sustained rate rather than 0.
  for (
    let down = Math.round((failed ?? KNEE_START) / 2 / KNEE_FACTOR);
    !best && down >= KNEE_FLOOR;
    down = Math.round(down / 2)
  ) {
    const s = await runLoad(o, p, proto, down, o.kneeSecs);
    const ok = sustained(s);
    steps.push(`${down}${ok ? "✓" : "✗"}`);
    if (ok) best = s;
  }
  return { best, steps };
}

const r3 = (x: number) => Number.isFinite(x) ? Number(x.toFixed(3)) : -1;

/** Writes `<key>` (the median), `<key>_min` and `<key>_max` of `xs` into `out`; returns the median. */
function putSpread(out: Record<string, number>, key: string, xs: number[]): number {
  const s = spread(xs);
  out[key] = r3(s.median);
  out[`${key}_min`] = r3(s.min);
  out[`${key}_max`] = r3(s.max);
  return s.median;
}

const fmtSpread = (out: Record<string, number>, key: string) =>
  `${out[key]} (${out[`${key}_min`]}–${out[`${key}_max`]})`;

export async function runHttpBench(o: HttpBenchOptions): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  const background: number[] = [];
  const protos: ["h1" | "grpc", string, string][] = [];
  if (o.h1) protos.push(["h1", "http1", "HTTP/1.1"]);
  if (o.grpc) protos.push(["grpc", "grpc", "gRPC"]);
  for (const [proto, key, title] of protos) {
    for (const p of o.paths) {
      if (o.warmupSecs > 0) {
        const w = await runLoad(o, p, proto, 1000, o.warmupSecs);
        out[`${key}_${p.name}_cold_p99_ms_at_1000rps`] = w.p99_ms;
      }
    }
    // Rounds with the paths interleaved, so a noisy stretch of the shared machine lands on every
    // path rather than on one; ratios are taken within a round, then summarised.
    const runs = new Map<string, Run[]>();
    for (let round = 0; round < o.repeats; round++) {
      for (const p of o.paths) {
        for (const rate of FIXED_RATES) {
          const s = await runLoad(o, p, proto, rate, o.secs);
          background.push(s.background_cores);
          const id = `${p.name}@${rate}`;
          runs.set(id, [...runs.get(id) ?? [], s]);
        }
      }
    }
    const of = (p: string, rate: number) => runs.get(`${p}@${rate}`) ?? [];
    for (const p of o.paths) {
      const k = `${key}_${p.name}`;
      const fixed: string[] = [];
      for (const rate of FIXED_RATES) {
        const rs = of(p.name, rate);
        for (const q of ["p50", "p99", "p999"]) {
          putSpread(
            out,
            `${k}_${q}_ms_at_${rate}rps`,
            rs.map((s) => s[`${q}_ms`] < 0 ? Infinity : s[`${q}_ms`]),
          );
        }
        const failed = rs.reduce((t, s) => t + s.errors + s.incomplete, 0);
        if (failed) out[`${k}_failed_at_${rate}rps`] = failed;
        if (rate === 1000) {
          out[`${key}_generator_lateness_p99_ms_at_1000rps_${p.name}`] = r3(
            spread(rs.map((s) => s.lateness_p99_ms)).median,
          );
          if (p.pids.length) {
            // CPU µs per request per proxy is the same number as CPU ms per 1,000 requests.
            const us = putSpread(
              out,
              `${k}_cpu_us_per_req`,
              rs.map((s) => (s.proxy_cpu_s * 1e6) / through(s)),
            );
            out[`${k}_cpu_ms_per_1k_req`] = r3(us);
            putSpread(out, `${k}_ctx_switches_per_req`, rs.map((s) => s.proxy_ctx / through(s)));
            if (p.gcLogs.length) {
              putSpread(out, `${k}_gc_ms_per_1k_req`, rs.map((s) => (s.proxy_gc_ms * 1000) / through(s)));
            }
          }
        }
        fixed.push(
          `${rate}/s p50 ${out[`${k}_p50_ms_at_${rate}rps`]} p99 ${
            fmtSpread(out, `${k}_p99_ms_at_${rate}rps`)
          }` +
            ` p99.9 ${out[`${k}_p999_ms_at_${rate}rps`]} ms` +
            (failed ? ` (${failed} failed or incomplete)` : ""),
        );
      }
      const { best, steps } = await knee(o, p, proto);
      out[`${k}_max_rps`] = best?.achieved_rps ?? 0;
      let perCore = "";
      if (best && p.pids.length && best.proxy_cpu_s > 0) {
        out[`${k}_rps_per_core`] = Math.round(through(best) / best.proxy_cpu_s);
        perCore = `, ${out[`${k}_rps_per_core`]} req/s per proxy core`;
      }
      if (p.pids.length) {
        const mem = await Promise.all(p.pids.map(memoryMb));
        out[`${k}_rss_mb`] = r3(Math.max(...mem.map((m) => m.rss)));
        out[`${k}_peak_rss_mb`] = r3(Math.max(...mem.map((m) => m.peak)));
      }
      const cpu = p.pids.length
        ? `, CPU ${fmtSpread(out, `${k}_cpu_us_per_req`)} µs/req per proxy, ` +
          `${fmtSpread(out, `${k}_ctx_switches_per_req`)} ctx switches/req` +
          (p.gcLogs.length ? `, GC ${fmtSpread(out, `${k}_gc_ms_per_1k_req`)} ms per 1k req` : "")
        : "";
      console.log(
        `${title.padEnd(8)} ${p.label.padEnd(10)} ${fixed.join(" | ")}${cpu} | max ${
          out[`${k}_max_rps`]
        } req/s` +
          perCore +
          (p.pids.length ? `, RSS ${out[`${k}_rss_mb`]} MB (peak ${out[`${k}_peak_rss_mb`]})` : "") +
          ` [knee steps ${steps.join(" ")}]`,
      );
    }
    const direct = of("direct", 1000);
    for (const p of o.paths) {
      if (p.name === "direct") continue;
      for (const rate of FIXED_RATES) {
        for (const q of ["p50", "p99", "p999"]) {
          const v = out[`${key}_${p.name}_${q}_ms_at_${rate}rps`];
          const d = out[`${key}_direct_${q}_ms_at_${rate}rps`];
          if (v >= 0 && d >= 0) {
            const name = p.name === "mesh"
              ? `${key}_added_${q}_ms_at_${rate}rps`
              : `${key}_reference_added_${q}_ms_at_${rate}rps`;
            out[name] = r3(v - d);
          }
        }
      }
      // The issue's tail goal: the pair's p99 over the direct path's p99 at 1,000/s, per round.
      const mine = of(p.name, 1000);
      if (direct.length === mine.length && direct.length) {
        putSpread(
          out,
          `${key}_${p.name}_p99_vs_direct_at_1000rps`,
          mine.map((s, i) => s.p99_ms / direct[i].p99_ms),
        );
      }
      const pre = p.name === "mesh" ? "" : "reference_";
      console.log(
        `${title.padEnd(8)} ${p.label.padEnd(10)} added vs direct at 1000/s: p50 ${
          out[`${key}_${pre}added_p50_ms_at_1000rps`]
        }` +
          ` p99 ${out[`${key}_${pre}added_p99_ms_at_1000rps`]} p99.9 ${
            out[`${key}_${pre}added_p999_ms_at_1000rps`]
          } ms;` +
          ` p99 ÷ direct p99 ${fmtSpread(out, `${key}_${p.name}_p99_vs_direct_at_1000rps`)}`,
      );
    }
    const mesh = of("mesh", 1000), ref = of("reference", 1000);
    if (mesh.length && mesh.length === ref.length) {
      const cpu = (s: Run) => s.proxy_cpu_s / through(s);
      putSpread(out, `${key}_mesh_cpu_vs_reference`, mesh.map((s, i) => cpu(s) / cpu(ref[i])));
      putSpread(
        out,
        `${key}_mesh_ctx_switches_vs_reference`,
        mesh.map((s, i) => (s.proxy_ctx / through(s)) / (ref[i].proxy_ctx / through(ref[i]))),
      );
      console.log(
        `${title.padEnd(8)} weft pair ÷ nginx pair per request per proxy at 1000/s: CPU ${
          fmtSpread(out, `${key}_mesh_cpu_vs_reference`)
        }, ctx switches ${fmtSpread(out, `${key}_mesh_ctx_switches_vs_reference`)}`,
      );
    }
    out[`${key}_generator_max_rps`] = out[`${key}_direct_max_rps`];
  }
  if (protos.length && o.lowRateSecs > 0) Object.assign(out, await lowRate(o, protos, background));
  if (background.length) putSpread(out, "background_cpu_cores", background);
  out.http_repeats = o.repeats;
  return out;
}

/**
 * The demo's shape: a few requests per second with idle gaps between them, every path and
 * protocol at once (together they are still only a few dozen requests per second), one
 * connection each, so idle-time costs (timers, GC, cold caches, Nagle) show in p50 and p99.
 */
async function lowRate(
  o: HttpBenchOptions,
  protos: ["h1" | "grpc", string, string][],
  background: number[],
): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  const runs = new Map<string, Run[]>();
  for (let round = 0; round < o.repeats; round++) {
    const jobs = protos.flatMap(([proto, key]) =>
      o.paths.map(async (p) => {
        const s = await runLoad(o, p, proto, o.lowRate, o.lowRateSecs, 1);
        const id = `${key}_${p.name}`;
        runs.set(id, [...runs.get(id) ?? [], s]);
        return s;
      })
    );
    const rs = await Promise.all(jobs);
    background.push(...rs.map((s) => s.background_cores));
  }
  for (const [proto, key, title] of protos) {
    void proto;
    const line: string[] = [];
    for (const p of o.paths) {
      const rs = runs.get(`${key}_${p.name}`) ?? [];
      const k = `${key}_${p.name}`;
      for (const q of ["p50", "p99"]) {
        putSpread(
          out,
          `${k}_${q}_ms_at_${o.lowRate}rps`,
          rs.map((s) => s[`${q}_ms`] < 0 ? Infinity : s[`${q}_ms`]),
        );
      }
      const failed = rs.reduce((t, s) => t + s.errors + s.incomplete, 0);
      if (failed) out[`${k}_failed_at_${o.lowRate}rps`] = failed;
      line.push(
        `${p.label} p50 ${fmtSpread(out, `${k}_p50_ms_at_${o.lowRate}rps`)} p99 ${
          fmtSpread(out, `${k}_p99_ms_at_${o.lowRate}rps`)
        } ms` + (failed ? ` (${failed} failed)` : ""),
      );
    }
    console.log(`${title.padEnd(8)} at ${o.lowRate}/s (${o.lowRateSecs} s, idle gaps): ${line.join(" | ")}`);
  }
  out.low_rate_per_s = o.lowRate;
  out.low_rate_seconds = o.lowRateSecs;
  return out;
}
