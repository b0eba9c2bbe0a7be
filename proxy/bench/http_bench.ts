/**
 * The HTTP part of `deno task bench:dataplane`: HTTP/1.1 and gRPC through each path the L4 part
 * sets up (direct, the weft proxy pair, the nginx pair), with the open-loop generator in
 * http_load.ts. Per path and protocol: a warm-up run, latency at fixed rates (100/s and 1,000/s), then a search
 * for the highest rate it sustains (the knee), with the proxies' CPU time read from /proc around
 * every run so throughput can be given per proxy core, and CPU per 1,000 requests.
 */
import type { PodNetwork } from "../testing/netns.ts";

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
}

export const FIXED_RATES = [100, 1000];
/** A step counts as sustained when it completed everything, on time, without a backlog. */
const KNEE_P99_MS = 100;
const KNEE_START = 2000;
const KNEE_FACTOR = 1.5;
const KNEE_MAX_STEPS = 10;

type Summary = Record<string, number>;

const CLK_TCK = 100;

/** utime + stime of a process, in seconds. */
export async function cpuSeconds(pid: number): Promise<number> {
  const stat = await Deno.readTextFile(`/proc/${pid}/stat`);
  const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(f[11]) + Number(f[12])) / CLK_TCK;
}

/** Current and peak resident set size, MB. */
export async function memoryMb(pid: number): Promise<{ rss: number; peak: number }> {
  const status = await Deno.readTextFile(`/proc/${pid}/status`);
  const kb = (k: string) => Number(new RegExp(`^${k}:\\s+(\\d+) kB$`, "m").exec(status)?.[1] ?? "0");
  return { rss: kb("VmRSS") / 1024, peak: kb("VmHWM") / 1024 };
}

async function load(
  o: HttpBenchOptions,
  p: HttpPath,
  proto: "h1" | "grpc",
  rate: number,
  secs: number,
): Promise<Summary & { proxy_cpu_s: number }> {
  const target = proto === "h1" ? p.h1Target : p.grpcTarget;
  const conns = proto === "h1" ? o.h1Connections : o.grpcConnections;
  const before = await Promise.all(p.pids.map(cpuSeconds));
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
  const after = await Promise.all(p.pids.map(cpuSeconds));
  const line = r.stdout.trim().split("\n").pop() ?? "";
  let s: Summary;
  try {
    s = JSON.parse(line);
  } catch {
    throw new Error(`${proto} load ${target} at ${rate}/s from ${p.pod} failed: ${r.stdout} ${r.stderr}`);
  }
  // Mean over the path's proxies: each request crosses every one of them once.
  const cpu = p.pids.length ? after.reduce((t, a, i) => t + a - before[i], 0) / p.pids.length : 0;
  return { ...s, proxy_cpu_s: cpu };
}

function sustained(s: Summary): boolean {
  return s.errors === 0 && s.incomplete === 0 && s.achieved_rps >= 0.97 * s.offered_rps && s.p99_ms >= 0 &&
    s.p99_ms <= KNEE_P99_MS;
}

/** Geometric steps up from KNEE_START until a step is not sustained, then one step between. */
async function knee(o: HttpBenchOptions, p: HttpPath, proto: "h1" | "grpc") {
  let best: (Summary & { proxy_cpu_s: number }) | undefined;
  let failed: number | undefined;
  let rate = KNEE_START;
  const steps: string[] = [];
  for (let i = 0; i < KNEE_MAX_STEPS; i++) {
    const s = await load(o, p, proto, rate, o.kneeSecs);
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
    const s = await load(o, p, proto, mid, o.kneeSecs);
    const ok = sustained(s);
    steps.push(`${mid}${ok ? "✓" : "✗"}`);
    if (ok) best = s;
  }
  return { best, steps };
}

const r3 = (x: number) => Number(x.toFixed(3));

export async function runHttpBench(o: HttpBenchOptions): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  const protos: ["h1" | "grpc", string, string][] = [];
  if (o.h1) protos.push(["h1", "http1", "HTTP/1.1"]);
  if (o.grpc) protos.push(["grpc", "grpc", "gRPC"]);
  for (const [proto, key, title] of protos) {
    for (const p of o.paths) {
      const k = `${key}_${p.name}`;
      const fixed: string[] = [];
      if (o.warmupSecs > 0) {
        const w = await load(o, p, proto, 1000, o.warmupSecs);
        out[`${k}_cold_p99_ms_at_1000rps`] = w.p99_ms;
        fixed.push(`warm-up 1000/s p99 ${w.p99_ms} ms`);
      }
      for (const rate of FIXED_RATES) {
        const s = await load(o, p, proto, rate, o.secs);
        out[`${k}_p50_ms_at_${rate}rps`] = s.p50_ms;
        out[`${k}_p99_ms_at_${rate}rps`] = s.p99_ms;
        out[`${k}_p999_ms_at_${rate}rps`] = s.p999_ms;
        if (s.errors || s.incomplete) out[`${k}_failed_at_${rate}rps`] = s.errors + s.incomplete;
        if (rate === 1000) {
          out[`${key}_generator_lateness_p99_ms_at_1000rps_${p.name}`] = s.lateness_p99_ms;
          if (p.pids.length) {
            out[`${k}_cpu_ms_per_1k_req`] = r3(
              (s.proxy_cpu_s * 1000 * 1000) / (s.warmup + s.completed + s.errors),
            );
          }
        }
        fixed.push(
          `${rate}/s p50 ${s.p50_ms} p99 ${s.p99_ms} p99.9 ${s.p999_ms} ms` +
            (s.errors || s.incomplete ? ` (${s.errors} failed, ${s.incomplete} incomplete)` : ""),
        );
      }
      const { best, steps } = await knee(o, p, proto);
      out[`${k}_max_rps`] = best?.achieved_rps ?? 0;
      let perCore = "";
      if (best && p.pids.length && best.proxy_cpu_s > 0) {
        const through = best.warmup + best.completed + best.errors;
        out[`${k}_rps_per_core`] = Math.round(through / best.proxy_cpu_s);
        perCore = `, ${out[`${k}_rps_per_core`]} req/s per proxy core`;
      }
      if (p.pids.length) {
        const mem = await Promise.all(p.pids.map(memoryMb));
        out[`${k}_rss_mb`] = r3(Math.max(...mem.map((m) => m.rss)));
        out[`${k}_peak_rss_mb`] = r3(Math.max(...mem.map((m) => m.peak)));
      }
      console.log(
        `${title.padEnd(8)} ${p.label.padEnd(10)} ${fixed.join(" | ")} | max ${out[`${k}_max_rps`]} req/s` +
          perCore + (p.pids.length ? `, ${out[`${k}_cpu_ms_per_1k_req`]} ms CPU per 1k req per proxy` : "") +
          (p.pids.length ? `, RSS ${out[`${k}_rss_mb`]} MB (peak ${out[`${k}_peak_rss_mb`]})` : "") +
          ` [knee steps ${steps.join(" ")}]`,
      );
    }
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
      console.log(
        `${title.padEnd(8)} ${p.label.padEnd(10)} added vs direct at 1000/s: p50 ${
          out[`${key}_${p.name === "mesh" ? "" : "reference_"}added_p50_ms_at_1000rps`]
        } p99 ${out[`${key}_${p.name === "mesh" ? "" : "reference_"}added_p99_ms_at_1000rps`]} p99.9 ${
          out[`${key}_${p.name === "mesh" ? "" : "reference_"}added_p999_ms_at_1000rps`]
        } ms`,
      );
    }
    out[`${key}_generator_max_rps`] = out[`${key}_direct_max_rps`];
  }
  return out;
}
