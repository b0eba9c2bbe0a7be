/**
 * The proxy process's own `process_*` metrics, as Linkerd's proxy exports them (Prometheus' standard
 * process collector names): CPU seconds, resident and virtual memory, start time, open and maximum file
 * descriptors. Read from /proc at scrape time only, so they cost nothing between scrapes; this is what
 * `weft resources` sizes proxy requests and limits from. Off Linux only the memory figure is exported.
 */
import type { MetricFamily, MetricSnapshot, Registry } from "./registry.ts";

/** Linux reports CPU time in clock ticks of USER_HZ, 100 on every architecture Kubernetes runs on. */
const CLOCK_TICKS_PER_SECOND = 100;

export interface ProcStat {
  cpuSeconds: number;
  virtualBytes: number;
  residentPages: number;
}

/** Fields of /proc/<pid>/stat after the command name (which may hold spaces and parentheses). */
export function parseProcStat(text: string): ProcStat {
  const end = text.lastIndexOf(")");
  if (end < 0) throw new Error("not a /proc/<pid>/stat line");
  // After ") " come the fields from the 3rd (state) on: utime is the 14th, stime 15th, vsize 23rd, rss 24th.
  const f = text.slice(end + 2).trim().split(/\s+/);
  const at = (n: number) => Number(f[n - 3]);
  const utime = at(14), stime = at(15), vsize = at(23), rss = at(24);
  if (![utime, stime, vsize, rss].every(Number.isFinite)) throw new Error("short /proc/<pid>/stat line");
  return { cpuSeconds: (utime + stime) / CLOCK_TICKS_PER_SECOND, virtualBytes: vsize, residentPages: rss };
}

/** The soft "Max open files" of /proc/<pid>/limits; undefined when unlimited or absent. */
export function parseMaxFds(text: string): number | undefined {
  const line = text.split("\n").find((l) => l.startsWith("Max open files"));
  const soft = line?.slice("Max open files".length).trim().split(/\s+/)[0];
  const n = Number(soft);
  return soft && Number.isFinite(n) ? n : undefined;
}

export interface ProcSource {
  stat(): Promise<string>;
  limits(): Promise<string>;
  openFds(): Promise<number>;
  rssBytes(): number;
  pageSize: number;
  startTimeSeconds: number;
}

export const linuxProc: ProcSource = {
  stat: () => Deno.readTextFile("/proc/self/stat"),
  limits: () => Deno.readTextFile("/proc/self/limits"),
  openFds: async () => {
    let n = 0;
    for await (const _ of Deno.readDir("/proc/self/fd")) n++;
    return n;
  },
  rssBytes: () => Deno.memoryUsage().rss,
  pageSize: 4096,
  startTimeSeconds: (performance.timeOrigin) / 1000,
};

function family(
  name: string,
  help: string,
  type: "counter" | "gauge",
  read: () => Promise<number | undefined>,
) {
  const f: MetricFamily = {
    name,
    async get(): Promise<MetricSnapshot> {
      let v: number | undefined;
      try {
        v = await read();
      } catch {
        v = undefined; // /proc unreadable (not Linux): the family is exported empty
      }
      return { name, help, type, values: v === undefined ? [] : [{ value: v, labels: {} }] };
    },
  };
  return f;
}

/** Registers the process families; each reads /proc once per scrape. */
export function registerProcessMetrics(registry: Registry, src: ProcSource = linuxProc): void {
  const stat = () => src.stat().then(parseProcStat);
  registry.registerMetric(
    family(
      "process_cpu_seconds_total",
      "Total user and system CPU time spent in seconds.",
      "counter",
      async () => (await stat()).cpuSeconds,
    ),
  );
  registry.registerMetric(
    family(
      "process_resident_memory_bytes",
      "Resident memory size in bytes.",
      "gauge",
      () => Promise.resolve(src.rssBytes()),
    ),
  );
  registry.registerMetric(
    family(
      "process_virtual_memory_bytes",
      "Virtual memory size in bytes.",
      "gauge",
      async () => (await stat()).virtualBytes,
    ),
  );
  registry.registerMetric(
    family(
      "process_start_time_seconds",
      "Start time of the process since unix epoch in seconds.",
      "gauge",
      () => Promise.resolve(src.startTimeSeconds),
    ),
  );
  registry.registerMetric(
    family("process_open_fds", "Number of open file descriptors.", "gauge", () => src.openFds()),
  );
  registry.registerMetric(
    family(
      "process_max_fds",
      "Maximum number of open file descriptors.",
      "gauge",
      async () => parseMaxFds(await src.limits()),
    ),
  );
}
