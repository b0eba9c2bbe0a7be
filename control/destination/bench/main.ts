/**
 * `deno task bench:destination`: Get streams over services with continuous endpoint churn. The
 * controller (fake watch sources → informers → endpoint index → grpc-js server on 127.0.0.1) runs
 * in this process; the gRPC clients run in `--client-procs` child processes (client.ts), so CPU
 * and memory below are the controller's alone.
 *
 * Propagation is the time from the watch event to the moment the last subscribed stream of that
 * service has received the update. Clients stamp receipts with timeOrigin + now(); each child's
 * offset to this process's clock is measured by ping-pong over its pipe just before the churn
 * (the lowest-round-trip sample of 20; half that round trip bounds the error and is printed), so
 * timestamps compare across processes whatever the clocks' start skew or slew.
 *
 * Each repetition runs a baseline (one stream per service) and the target; every figure is the
 * median and [min, max] over `--reps`. After the churn each client checks that every stream
 * converged to the final endpoint set (lost updates) and counts resets. CPU is this process's
 * (user + system) over the churn, per change, per change and subscribed stream, and per extra
 * stream (target minus baseline per change, over the streams a service has beyond its first).
 * Memory: heap after gc per endpoint (caches, then the index) and per stream, RSS per stream.
 * The last line is one JSON object.
 *
 * Flags: --streams=1000 --services=100 --endpoints=5000 --rate=200 (changes/s) --seconds=10
 *        --reps=3 --client-procs=2 --channels=4 (connections per client process)
 */
import process from "node:process";
import { Fixture, pod, service, slice } from "../testing.ts";
import {
  type FromClient,
  GEN_MODULO,
  jsonLines,
  MAX_ENDPOINTS_PER_SERVICE,
  MAX_SERVICES,
  now,
  serviceOf,
  type ToClient,
} from "./plan.ts";
import { endpointIp } from "./plan.ts";

// Memory figures need a collected heap: re-run with --expose-gc when it is not available.
const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--v8-flags=--expose-gc", new URL(import.meta.url).pathname, ...Deno.args],
    stdout: "inherit",
    stderr: "inherit",
  }).spawn();
  Deno.exit((await child.status).code);
}

const arg = (name: string, def: number) => {
  const a = Deno.args.find((x) => x.startsWith(`--${name}=`));
  const v = a ? Number(a.split("=")[1]) : def;
  if (!Number.isFinite(v) || v <= 0) throw new Error(`--${name} must be a positive number, got ${a}`);
  return v;
};
const STREAMS = arg("streams", 1000);
const SERVICES = arg("services", 100);
const ENDPOINTS = arg("endpoints", 5000);
const RATE = arg("rate", 200);
const SECONDS = arg("seconds", 10);
const REPS = arg("reps", 3);
const PROCS = arg("client-procs", 2);
const CHANNELS = arg("channels", 4);
const PER_SVC = Math.ceil(ENDPOINTS / SERVICES);
if (SERVICES > MAX_SERVICES) throw new Error(`--services is at most ${MAX_SERVICES}`);
if (PER_SVC > MAX_ENDPOINTS_PER_SERVICE) {
  throw new Error(`at most ${MAX_ENDPOINTS_PER_SERVICE} endpoints per service, got ${PER_SVC}`);
}
const CLIENT = new URL("./client.ts", import.meta.url).pathname;

function heap(): number {
  gc!();
  gc!();
  return Deno.memoryUsage().heapUsed;
}
const rss = () => Deno.memoryUsage().rss;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function pct(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))];
}

/** One client process and its line protocol. */
class ClientProc {
  readonly #child: Deno.ChildProcess;
  readonly #in: WritableStreamDefaultWriter<Uint8Array>;
  readonly #waiters = new Map<string, (m: FromClient) => void>();
  readonly done: Promise<void>;
  offset = 0;
  error = 0;
  onGot: (items: [number, number, number][]) => void = () => {};

  constructor() {
    this.#child = new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", CLIENT],
      stdin: "piped",
      stdout: "piped",
      stderr: "inherit",
    }).spawn();
    this.#in = this.#child.stdin.getWriter();
    const stdout = this.#child.stdout;
    this.done = (async () => {
      for await (const m of jsonLines<FromClient>(stdout)) {
        if (m.type === "got") this.onGot(m.items);
        else if (m.type === "error") throw new Error(`client process: ${m.message}`);
        else {
          const key = m.type === "pong" ? `pong${m.id}` : m.type;
          this.#waiters.get(key)?.(m);
          this.#waiters.delete(key);
        }
      }
    })();
    this.done.catch(() => {});
  }

  async send(m: ToClient): Promise<void> {
    await this.#in.write(new TextEncoder().encode(JSON.stringify(m) + "\n"));
  }

  async ask<K extends FromClient["type"]>(
    m: ToClient,
    reply: K,
    timeoutMs: number,
  ): Promise<Extract<FromClient, { type: K }>> {
    const key = m.type === "ping" ? `pong${m.id}` : reply;
    const got = new Promise<FromClient>((resolve) => this.#waiters.set(key, resolve));
    await this.send(m);
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<never>((_, reject) =>
      timer = setTimeout(
        () => reject(new Error(`client process: no ${reply} within ${timeoutMs} ms`)),
        timeoutMs,
      )
    );
    try {
      return await Promise.race([got, timeout, this.done.then(() => timeout)]) as Extract<
        FromClient,
        { type: K }
      >;
    } finally {
      clearTimeout(timer);
    }
  }

  /** This process's clock minus the child's, from the lowest-round-trip ping of 20. */
  async calibrate(): Promise<void> {
    let best = Infinity;
    for (let id = 0; id < 20; id++) {
      const t0 = now();
      const pong = await this.ask({ type: "ping", id }, "pong", 5000);
      const t1 = now();
      if (t1 - t0 < best) {
        best = t1 - t0;
        this.offset = pong.t - (t0 + t1) / 2;
      }
    }
    this.error = best / 2;
  }

  async close(): Promise<void> {
    await this.send({ type: "close" }).catch(() => {});
    await this.#in.close().catch(() => {});
    const timer = setTimeout(() => this.#child.kill(), 10_000);
    await this.#child.status;
    clearTimeout(timer);
  }
}

interface Result {
  streams: number;
  changes: number;
  samples: number;
  lost: number;
  pending: number;
  skipped: number;
  resets: number;
  p50: number;
  p99: number;
  max: number;
  cpuUsPerChange: number;
  cpuUsPerChangePerStream: number;
  cpuPercent: number;
  bytesPerEndpoint: number;
  indexBytesPerEndpoint: number;
  bytesPerStream: number;
  rssPerStream: number;
  clockErrorMs: number;
  loopLagP99: number;
  /** The machine's 1-minute load average after the churn: other work competing for the cores. */
  load1: number;
  /** The busiest client process's CPU over the churn, in % of one core. */
  clientCpuPercent: number;
}

async function run(streams: number, label: string): Promise<Result> {
  const f = new Fixture();
  f.apply("namespaces", { metadata: { name: "bench" } });
  await f.start();
  // The previous run's server and caches are released only after its timers ran.
  await sleep(500);
  const heapEmpty = heap();
  const gens = new Array(SERVICES).fill(0);
  const epsOf = (s: number) =>
    Array.from({ length: PER_SVC }, (_, i) => ({ ip: endpointIp(s, i, gens[s]), pod: `p-${s}-${i}` }));
  for (let s = 0; s < SERVICES; s++) {
    f.apply("services", service("bench", `svc-${s}`));
    for (let i = 0; i < PER_SVC; i++) {
      f.apply("pods", pod("bench", `p-${s}-${i}`, endpointIp(s, i, 0), { meshed: true, sa: `sa-${s}` }));
    }
    f.apply("endpointslices", slice("bench", `svc-${s}`, epsOf(s)));
  }
  await sleep(50);
  const heapLoaded = heap();

  const procs = Array.from({ length: Math.min(PROCS, streams) }, () => new ClientProc());
  // Which processes hold streams of each service: a generation is complete when all have it.
  const holders = Array.from({ length: SERVICES }, () => new Set<number>());
  for (let k = 0; k < streams; k++) holders[serviceOf(k, SERVICES)].add(k % procs.length);
  const perService = Array.from({ length: SERVICES }, () => 0);
  for (let k = 0; k < streams; k++) perService[serviceOf(k, SERVICES)]++;
  const pending = new Map<number, { t0: number; gen: number; waiting: Set<number>; last: number }>();
  const lat: number[] = [];
  procs.forEach((c, ci) =>
    c.onGot = (items) => {
      for (const [svc, g, t] of items) {
        const p = pending.get(svc);
        if (!p || p.gen % GEN_MODULO !== g || !p.waiting.delete(ci)) continue;
        p.last = Math.max(p.last, t - c.offset);
        if (p.waiting.size > 0) continue;
        lat.push(p.last - p.t0);
        pending.delete(svc);
      }
    }
  );
  try {
    await Promise.all(procs.map((c, index) =>
      c.send({
        type: "init",
        plan: {
          port: f.port,
          services: SERVICES,
          perService: PER_SVC,
          procs: procs.length,
          index,
          channels: CHANNELS,
        },
      })
    ));
    // One stream per service first: the per-endpoint state of the index.
    const first = Math.min(SERVICES, streams);
    await Promise.all(procs.map((c) => c.ask({ type: "open", streams: first }, "opened", 180_000)));
    const heapOneEach = heap();
    const rssOneEach = rss();
    await Promise.all(procs.map((c) => c.ask({ type: "open", streams }, "opened", 180_000)));
    const heapAll = heap();
    const rssAll = rss();
    for (const c of procs) await c.calibrate();

    // Churn: each change replaces one endpoint of one service (a remove + an add for its streams).
    const slices = f.fake("endpointslices");
    // The fake API server's replay history is not the controller's memory: keep it short.
    slices.historyLimit = 1000;
    const cpu0 = process.cpuUsage();
    const wall0 = performance.now();
    // Event-loop lag: how late a 5 ms timer fires while the controller works (or waits for a core).
    const lags: number[] = [];
    let tick = performance.now();
    const lagTimer = setInterval(() => {
      const t = performance.now();
      lags.push(t - tick - 5);
      tick = t;
    }, 5);
    const total = Math.round(RATE * SECONDS);
    let skipped = 0;
    let changes = 0;
    for (let n = 0; n < total; n++) {
      const due = wall0 + (n * 1000) / RATE;
      const wait = due - performance.now();
      if (wait > 0) await sleep(wait);
      const s = n % SERVICES;
      if (pending.has(s)) {
        skipped++; // the previous change of this service is still in flight
        continue;
      }
      gens[s]++;
      changes++;
      pending.set(s, { t0: now(), gen: gens[s], waiting: new Set(holders[s]), last: 0 });
      slices.apply(slice("bench", `svc-${s}`, epsOf(s)));
    }
    const until = Date.now() + 10_000;
    while (pending.size > 0 && Date.now() < until) await sleep(10);
    const wall = performance.now() - wall0;
    const cpu = process.cpuUsage(cpu0);
    clearInterval(lagTimer);
    lags.sort((a, b) => a - b);
    const verified = await Promise.all(procs.map((c) => c.ask({ type: "verify", gens }, "verified", 60_000)));
    const converged = verified.reduce((a, v) => a + v.converged, 0);
    const errors = verified.flatMap((v) => v.errors);
    if (errors.length) console.error(`${label}: ${errors.slice(0, 6).join("; ")}`);
    lat.sort((a, b) => a - b);
    const deliveries = changes * (streams / SERVICES);
    const result: Result = {
      streams,
      changes,
      samples: lat.length,
      lost: streams - converged,
      pending: pending.size,
      skipped,
      resets: verified.reduce((a, v) => a + v.resets, 0),
      p50: pct(lat, 0.5),
      p99: pct(lat, 0.99),
      max: lat[lat.length - 1],
      cpuUsPerChange: (cpu.user + cpu.system) / changes,
      cpuUsPerChangePerStream: (cpu.user + cpu.system) / deliveries,
      cpuPercent: ((cpu.user + cpu.system) / 1000 / wall) * 100,
      bytesPerEndpoint: (heapLoaded - heapEmpty) / (SERVICES * PER_SVC),
      indexBytesPerEndpoint: (heapOneEach - heapLoaded) / (SERVICES * PER_SVC),
      bytesPerStream: streams > SERVICES ? (heapAll - heapOneEach) / (streams - SERVICES) : NaN,
      rssPerStream: streams > SERVICES ? (rssAll - rssOneEach) / (streams - SERVICES) : NaN,
      clockErrorMs: Math.max(...procs.map((c) => c.error)),
      loopLagP99: pct(lags, 0.99),
      load1: Deno.loadavg()[0],
      clientCpuPercent: Math.max(...verified.map((v) => v.cpuUs / 1000 / wall * 100)),
    };
    console.log(JSON.stringify({ label, ...result }));
    return result;
  } finally {
    await Promise.all(procs.map((c) => c.close()));
    await f.stop();
  }
}

const base: Result[] = [];
const main: Result[] = [];
for (let rep = 0; rep < REPS; rep++) {
  base.push(await run(Math.min(SERVICES, STREAMS), `rep ${rep + 1} baseline: one stream per service`));
  main.push(await run(STREAMS, `rep ${rep + 1} target`));
}

const r = (x: number) => Math.round(x * 100) / 100;
/** Median and [min, max] of one figure over the repetitions. */
function spread(rs: Result[], f: (x: Result) => number) {
  const v = rs.map(f).sort((a, b) => a - b);
  return { median: r(v[Math.floor(v.length / 2)]), min: r(v[0]), max: r(v[v.length - 1]) };
}
const p99 = spread(main, (x) => x.p99);
const baseP99 = spread(base, (x) => x.p99);
const cpu = spread(main, (x) => x.cpuUsPerChangePerStream);
const baseCpu = spread(base, (x) => x.cpuUsPerChangePerStream);
// What each stream beyond the first of its service adds to a change: the fan-out cost alone.
const marginal = spread(
  main.map((m, i) => ({
    ...m,
    marginal: STREAMS > SERVICES
      ? (m.cpuUsPerChange - base[i].cpuUsPerChange) / (STREAMS / SERVICES - 1)
      : NaN,
  })),
  (x) => (x as Result & { marginal: number }).marginal,
);
console.log(JSON.stringify({
  streams: STREAMS,
  services: SERVICES,
  endpoints: SERVICES * PER_SVC,
  churn_per_second: RATE,
  seconds: SECONDS,
  reps: REPS,
  client_procs: Math.min(PROCS, STREAMS),
  changes: spread(main, (x) => x.changes),
  skipped_changes: spread(main, (x) => x.skipped),
  propagation_p50_ms: spread(main, (x) => x.p50),
  propagation_p99_ms: p99,
  propagation_max_ms: spread(main, (x) => x.max),
  lost_updates: spread(main, (x) => x.lost + x.pending),
  stream_resets: spread(main, (x) => x.resets),
  cpu_us_per_change: spread(main, (x) => x.cpuUsPerChange),
  cpu_us_per_change_per_stream: cpu,
  cpu_us_per_extra_stream_per_change: marginal,
  cpu_percent_of_one_core: spread(main, (x) => x.cpuPercent),
  busiest_client_process_cpu_percent: spread(main, (x) => x.clientCpuPercent),
  bytes_per_endpoint: spread(main, (x) => x.bytesPerEndpoint),
  index_bytes_per_endpoint: spread(main, (x) => x.indexBytesPerEndpoint),
  bytes_per_stream: spread(main, (x) => x.bytesPerStream),
  rss_bytes_per_stream: spread(main, (x) => x.rssPerStream),
  clock_error_ms: spread(main, (x) => x.clockErrorMs),
  controller_loop_lag_p99_ms: spread(main, (x) => x.loopLagP99),
  load_average_1m: spread(main, (x) => x.load1),
  cpus: navigator.hardwareConcurrency,
  baseline_propagation_p99_ms: baseP99,
  baseline_cpu_us_per_change: spread(base, (x) => x.cpuUsPerChange),
  baseline_cpu_us_per_change_per_stream: baseCpu,
  p99_ratio_vs_baseline: r(p99.median / baseP99.median),
  cpu_per_stream_ratio_vs_baseline: r(cpu.median / baseCpu.median),
}));
