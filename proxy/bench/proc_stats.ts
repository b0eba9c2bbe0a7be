/**
 * What `deno task bench:dataplane` reads from /proc about the processes it measures: memory
 * (VmRSS, RssAnon, RssFile, VmHWM), CPU time, context switches, the main-thread GC pauses a
 * proxy started with `--trace-gc` printed, and how busy the rest of the machine was meanwhile
 * (the machine is shared, so every figure is given with the background load it was taken under).
 */

/** Kernel clock ticks per second for /proc/<pid>/stat and /proc/stat (100 on Linux/x86 and arm64). */
const CLK_TCK = 100;

export interface ProcMemory {
  vmRssMb: number;
  rssAnonMb: number;
  rssFileMb: number;
  vmHwmMb: number;
}

export interface ProcCounters {
  /** utime + stime, seconds. */
  cpuS: number;
  /** voluntary + nonvoluntary context switches, summed over the process's threads. */
  ctxSwitches: number;
}

const kb = (status: string, key: string) =>
  Number(new RegExp(`^${key}:\\s+(\\d+) kB$`, "m").exec(status)?.[1] ?? "NaN");

export function parseMemory(status: string): ProcMemory {
  return {
    vmRssMb: kb(status, "VmRSS") / 1024,
    rssAnonMb: kb(status, "RssAnon") / 1024,
    rssFileMb: kb(status, "RssFile") / 1024,
    vmHwmMb: kb(status, "VmHWM") / 1024,
  };
}

export async function procMemory(pid: number): Promise<ProcMemory> {
  return parseMemory(await Deno.readTextFile(`/proc/${pid}/status`));
}

/** utime and stime fields of a /proc/<pid>/stat line (after the parenthesised command name). */
function statFields(stat: string): string[] {
  return stat.slice(stat.lastIndexOf(")") + 2).split(" ");
}

/**
 * CPU and context switches of a whole process: /proc/<pid>/status counts the switches of the
 * main thread only, so the threads' counts under /proc/<pid>/task are summed (V8's GC and
 * platform workers switch too).
 */
export async function procCounters(pid: number): Promise<ProcCounters> {
  const f = statFields(await Deno.readTextFile(`/proc/${pid}/stat`));
  let ctx = 0;
  for await (const t of Deno.readDir(`/proc/${pid}/task`)) {
    const s = await Deno.readTextFile(`/proc/${pid}/task/${t.name}/status`).catch(() => "");
    const n = (k: string) => Number(new RegExp(`^${k}:\\s+(\\d+)$`, "m").exec(s)?.[1] ?? "0");
    ctx += n("voluntary_ctxt_switches") + n("nonvoluntary_ctxt_switches");
  }
  return { cpuS: (Number(f[11]) + Number(f[12])) / CLK_TCK, ctxSwitches: ctx };
}

/**
 * Main-thread GC time in `--trace-gc` output: each line gives the pause after "MB, " and a
 * finished incremental mark adds "(+ X ms in N steps" for the marking steps done between tasks.
 */
export function gcMsInTrace(text: string): number {
  let ms = 0;
  for (const line of text.split("\n")) {
    const pause = /MB, (\d+(?:\.\d+)?) \/ /.exec(line);
    if (!pause) continue;
    ms += Number(pause[1]);
    const steps = /\(\+ (\d+(?:\.\d+)?) ms in \d+ steps/.exec(line);
    if (steps) ms += Number(steps[1]);
  }
  return ms;
}

/** GC milliseconds a `--trace-gc` log holds so far (take a delta around a run). */
export async function gcMsInFile(path: string): Promise<number> {
  return gcMsInTrace(await Deno.readTextFile(path).catch(() => ""));
}

export interface CpuSample {
  /** Jiffies the whole machine was busy (not idle or iowait), summed over all CPUs. */
  busy: number;
  /** All jiffies, summed over all CPUs. */
  total: number;
  /** Jiffies spent by the bench's own processes (itself, its reaped children, and every process in its pods). */
  ours: number;
  cpus: number;
}

async function netnsOf(pid: string): Promise<string> {
  return await Deno.readLink(`/proc/${pid}/ns/net`).catch(() => "");
}

/**
 * One sample of machine and bench CPU. `podNetns` are the `net:[inode]` names of the bench's
 * namespaces: whatever runs in them (proxies, servers, nginx, generators) is the bench's.
 */
export async function sampleCpu(podNetns: Set<string>): Promise<CpuSample> {
  const stat = await Deno.readTextFile("/proc/stat");
  const cpu = stat.split("\n")[0].trim().split(/\s+/).slice(1).map(Number);
  const total = cpu.slice(0, 8).reduce((a, b) => a + b, 0);
  const idle = cpu[3] + cpu[4];
  const cpus = stat.split("\n").filter((l) => /^cpu\d+ /.test(l)).length;
  // The bench itself and its children it already waited for (load generators, ip, nginx -t).
  const self = statFields(await Deno.readTextFile("/proc/self/stat"));
  let ours = Number(self[11]) + Number(self[12]) + Number(self[13]) + Number(self[14]);
  for await (const e of Deno.readDir("/proc")) {
    if (!/^\d+$/.test(e.name) || Number(e.name) === Deno.pid) continue;
    if (!podNetns.has(await netnsOf(e.name))) continue;
    const s = await Deno.readTextFile(`/proc/${e.name}/stat`).catch(() => "");
    if (!s) continue;
    const f = statFields(s);
    ours += Number(f[11]) + Number(f[12]);
  }
  return { busy: total - idle, total, ours, cpus };
}

/**
 * Cores' worth of CPU that something other than the bench used between two samples. A process
 * in a pod that exited between them (and is not the bench's child) makes this a little high.
 */
export function backgroundCores(a: CpuSample, b: CpuSample): number {
  const elapsed = (b.total - a.total) / a.cpus;
  if (elapsed <= 0) return 0;
  return Math.max(0, (b.busy - a.busy - (b.ours - a.ours)) / elapsed);
}

/** The netns names (`net:[inode]`) of named namespaces under /run/netns. */
export async function netnsIds(names: string[]): Promise<Set<string>> {
  const out = new Set<string>();
  for (const n of names) {
    const st = await Deno.stat(`/run/netns/${n}`).catch(() => undefined);
    if (st?.ino) out.add(`net:[${st.ino}]`);
  }
  return out;
}

/** 1-minute load average. */
export async function loadAverage(): Promise<number> {
  return Number((await Deno.readTextFile("/proc/loadavg")).split(" ")[0]);
}

/** Median and range of a list of numbers (NaNs dropped; Infinity, a run that failed, is kept). */
export function spread(xs: number[]): { median: number; min: number; max: number } {
  const s = xs.filter((x) => !Number.isNaN(x)).sort((a, b) => a - b);
  if (s.length === 0) return { median: NaN, min: NaN, max: NaN };
  const m = s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
  return { median: m, min: s[0], max: s[s.length - 1] };
}
