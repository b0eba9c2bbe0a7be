/**
 * `deno task bench:destination`: Get streams over services with continuous endpoint churn. The
 * controller (fake watch sources → informers → endpoint index → grpc-js server on 127.0.0.1) runs
 * as `--replicas` child processes (replica.ts), each with its own watch as in production; the gRPC
 * clients run in `--client-procs` child processes (client.ts), each connection dialling one
 * replica round-robin as a Kubernetes Service spreads proxies' connections (plan.ts placeStream).
 * This process drives the churn: it stamps each change and sends the same change to every replica
 * at once, so one event time is the origin of propagation on every replica (as the API server
 * sends each watcher the same event; independent seeded schedules would need each replica's clock
 * and pacing to agree, and a change skipped on one replica but not another would split the runs).
 * The change's line on each replica's pipe (~0.1 ms) is inside propagation, as the watch's
 * delivery is in production. CPU and memory below are the replicas' alone, per replica and in all.
 *
 * Propagation is the time from the watch event to the moment the last subscribed stream of that
 * service has received the update. Clients stamp receipts with timeOrigin + now(); each child's
 * offset to this process's clock is measured by ping-pong over its pipe just before the churn
 * (the lowest-round-trip sample of 20; half that round trip bounds the error and is printed), so
 * timestamps compare across processes whatever the clocks' start skew or slew.
 *
 * Each repetition runs a baseline (one stream per service on each replica) and the target; every figure is the
 * median and [min, max] over `--reps`. After the churn each client checks that every stream
 * converged to the final endpoint set (lost updates, also by replica) and counts resets. CPU is
 * the replicas' (user + system) over the churn, summed: per change, per change and subscribed
 * stream, and per extra stream (target minus baseline per change, over the streams a service has
 * beyond its first on each replica); `cpu_percent_of_one_core` and the loop lag are the busiest replica's. Memory:
 * heap after gc per endpoint (caches, then the index; mean of the replicas) and per stream, RSS
 * per stream. `per_replica` gives each replica's streams, propagation p50/p99 to the last of its
 * streams, lost updates, CPU per change (and per change per stream it serves), heap per endpoint
 * and per stream. The last line is one JSON object.
 *
 * Flags: --streams=1000 --services=100 --endpoints=5000 --rate=200 (changes/s) --seconds=10
 *        --reps=3 --client-procs=2 --channels=4 (connections per client process) --replicas=1
 */
import { Child } from "./child.ts";
import {
  type FromClient,
  type FromReplica,
  GEN_MODULO,
  MAX_ENDPOINTS_PER_SERVICE,
  MAX_SERVICES,
  now,
  placeStream,
  serviceOf,
  type ToClient,
  type ToReplica,
} from "./plan.ts";

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
const REPLICAS = arg("replicas", 1);
const PER_SVC = Math.ceil(ENDPOINTS / SERVICES);
if (SERVICES > MAX_SERVICES) throw new Error(`--services is at most ${MAX_SERVICES}`);
if (PER_SVC > MAX_ENDPOINTS_PER_SERVICE) {
  throw new Error(`at most ${MAX_ENDPOINTS_PER_SERVICE} endpoints per service, got ${PER_SVC}`);
}
if (!Number.isInteger(REPLICAS)) throw new Error(`--replicas must be a whole number, got ${REPLICAS}`);
if (PROCS * CHANNELS < REPLICAS) {
  throw new Error(
    `--client-procs × --channels (${PROCS * CHANNELS}) connections cannot reach ${REPLICAS} replicas`,
  );
}
const CLIENT = new URL("./client.ts", import.meta.url).pathname;
const REPLICA = new URL("./replica.ts", import.meta.url).pathname;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function pct(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))];
}

/** One client process; its clock offset to this one is measured before the churn. */
class ClientProc extends Child<ToClient, FromClient> {
  offset = 0;
  error = 0;

  constructor() {
    super(CLIENT, [], new Set(["opened", "pong", "verified"]));
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
}

const newReplica = () =>
  new Child<ToReplica, FromReplica>(
    REPLICA,
    ["--expose-gc"],
    new Set(["loaded", "heap", "churning", "stopped"]),
  );

/** One replica's figures in one run. */
interface ReplicaResult {
  streams: number;
  p50: number;
  p99: number;
  lost: number;
  cpuUsPerChange: number;
  cpuUsPerChangePerStream: number;
  cpuPercent: number;
  bytesPerEndpoint: number;
  indexBytesPerEndpoint: number;
  bytesPerStream: number;
  rssPerStream: number;
  loopLagP99: number;
}

/** The run's figures: a replica's, taken over all replicas, and the run's own. */
interface Result extends ReplicaResult {
  changes: number;
  samples: number;
  pending: number;
  skipped: number;
  resets: number;
  max: number;
  /** Summed over the replicas: what the control plane spends on a change. */
  cpuUsPerChange: number;
  /** The busiest replica's CPU, in % of one core. */
  cpuPercent: number;
  clockErrorMs: number;
  /** The worst replica's event-loop lag p99. */
  loopLagP99: number;
  /** The machine's 1-minute load average after the churn: other work competing for the cores. */
  load1: number;
  /** The busiest client process's CPU over the churn, in % of one core. */
  clientCpuPercent: number;
  replicas: ReplicaResult[];
}

async function run(streams: number, label: string): Promise<Result> {
  const replicas = Array.from({ length: REPLICAS }, newReplica);
  const procs: ClientProc[] = [];
  try {
    const loaded = await Promise.all(
      replicas.map((r) =>
        r.ask({ type: "load", services: SERVICES, perService: PER_SVC }, "loaded", 180_000)
      ),
    );
    const heaps = () => Promise.all(replicas.map((r) => r.ask({ type: "heap" }, "heap", 60_000)));
    const gens = new Array(SERVICES).fill(0);

    for (let i = 0; i < Math.min(PROCS, streams); i++) procs.push(new ClientProc());
    // Which (process, replica) pairs hold streams of each service: a generation has reached a
    // replica's streams when all its pairs reported it, and every stream when all pairs did.
    const key = (proc: number, replica: number) => proc * REPLICAS + replica;
    const holders = Array.from({ length: SERVICES }, () => new Set<number>());
    for (let k = 0; k < streams; k++) {
      const p = placeStream(k, procs.length, CHANNELS, REPLICAS, SERVICES);
      holders[serviceOf(k, SERVICES)].add(key(p.proc, p.replica));
    }
    const pending = new Map<
      number,
      { t0: number; gen: number; waiting: Set<number>; last: number[]; left: number[] }
    >();
    const lat: number[] = [];
    const latOf: number[][] = replicas.map(() => []);
    procs.forEach((c, ci) =>
      c.onMessage = (m) => {
        if (m.type !== "got") return;
        for (const [svc, g, t, rep] of m.items) {
          const p = pending.get(svc);
          if (!p || p.gen % GEN_MODULO !== g || !p.waiting.delete(key(ci, rep))) continue;
          p.last[rep] = Math.max(p.last[rep], t - c.offset);
          if (--p.left[rep] === 0) latOf[rep].push(p.last[rep] - p.t0);
          if (p.waiting.size > 0) continue;
          lat.push(Math.max(...p.last) - p.t0);
          pending.delete(svc);
        }
      }
    );
    const ports = loaded.map((l) => l.port);
    await Promise.all(procs.map((c, index) =>
      c.send({
        type: "init",
        plan: {
          ports,
          services: SERVICES,
          perService: PER_SVC,
          procs: procs.length,
          index,
          channels: CHANNELS,
        },
      })
    ));
    const onReplica = (o: FromClient[]) =>
      replicas.map((_, r) => o.reduce((a, x) => a + (x.type === "opened" ? x.perReplica[r] : 0), 0));
    // One stream per service on each replica first: the per-endpoint state of the index.
    const first = Math.min(SERVICES * REPLICAS, streams);
    const firstOn = onReplica(
      await Promise.all(procs.map((c) => c.ask({ type: "open", streams: first }, "opened", 180_000))),
    );
    const oneEach = await heaps();
    const allOn = onReplica(
      await Promise.all(procs.map((c) => c.ask({ type: "open", streams }, "opened", 180_000))),
    );
    const all = await heaps();
    for (const c of procs) await c.calibrate();

    // Churn: each change replaces one endpoint of one service (a remove + an add for its streams).
    await Promise.all(replicas.map((r) => r.ask({ type: "churn" }, "churning", 10_000)));
    const wall0 = performance.now();
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
      const left = replicas.map(() => 0);
      for (const h of holders[s]) left[h % REPLICAS]++;
      pending.set(s, {
        t0: now(),
        gen: gens[s],
        waiting: new Set(holders[s]),
        last: replicas.map(() => 0),
        left,
      });
      for (const r of replicas) r.send({ type: "apply", s, gen: gens[s] }).catch(() => {});
    }
    const until = Date.now() + 10_000;
    while (pending.size > 0 && Date.now() < until) await sleep(10);
    const wall = performance.now() - wall0;
    const stopped = await Promise.all(replicas.map((r) => r.ask({ type: "stop" }, "stopped", 10_000)));
    const verified = await Promise.all(procs.map((c) => c.ask({ type: "verify", gens }, "verified", 60_000)));
    const converged = verified.reduce((a, v) => a + v.converged, 0);
    const errors = verified.flatMap((v) => v.errors);
    if (errors.length) console.error(`${label}: ${errors.slice(0, 6).join("; ")}`);
    lat.sort((a, b) => a - b);
    const perStream = (grown: number, n: number, n0: number) => n > n0 ? grown / (n - n0) : NaN;
    const rs: ReplicaResult[] = replicas.map((_, r) => {
      const l = latOf[r].sort((a, b) => a - b);
      const cpuUs = stopped[r].cpuUs;
      // A replica's deliveries: each change reaches its streams of the changed service.
      const deliveries = changes * (allOn[r] / SERVICES);
      let unreached = 0;
      for (const p of pending.values()) unreached += p.left[r] > 0 ? 1 : 0;
      return {
        streams: allOn[r],
        p50: pct(l, 0.5),
        p99: pct(l, 0.99),
        lost: verified.reduce((a, v) => a + v.lostPerReplica[r], 0) + unreached,
        cpuUsPerChange: cpuUs / changes,
        cpuUsPerChangePerStream: cpuUs / deliveries,
        cpuPercent: (cpuUs / 1000 / wall) * 100,
        bytesPerEndpoint: (loaded[r].heapLoaded - loaded[r].heapEmpty - loaded[r].sourceBytes) /
          (SERVICES * PER_SVC),
        indexBytesPerEndpoint: (oneEach[r].heap - loaded[r].heapLoaded) / (SERVICES * PER_SVC),
        bytesPerStream: perStream(all[r].heap - oneEach[r].heap, allOn[r], firstOn[r]),
        rssPerStream: perStream(all[r].rss - oneEach[r].rss, allOn[r], firstOn[r]),
        loopLagP99: stopped[r].loopLagP99,
      };
    });
    const sum = (f: (i: number) => number) => replicas.reduce((a, _, i) => a + f(i), 0);
    const cpuUs = sum((i) => stopped[i].cpuUs);
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
      cpuUsPerChange: cpuUs / changes,
      cpuUsPerChangePerStream: cpuUs / deliveries,
      cpuPercent: Math.max(...rs.map((x) => x.cpuPercent)),
      bytesPerEndpoint: sum((i) => rs[i].bytesPerEndpoint) / REPLICAS,
      indexBytesPerEndpoint: sum((i) => rs[i].indexBytesPerEndpoint) / REPLICAS,
      bytesPerStream: perStream(sum((i) => all[i].heap - oneEach[i].heap), streams, first),
      rssPerStream: perStream(sum((i) => all[i].rss - oneEach[i].rss), streams, first),
      clockErrorMs: Math.max(...procs.map((c) => c.error)),
      loopLagP99: Math.max(...rs.map((x) => x.loopLagP99)),
      load1: Deno.loadavg()[0],
      clientCpuPercent: Math.max(...verified.map((v) => v.cpuUs / 1000 / wall * 100)),
      replicas: rs,
    };
    console.log(JSON.stringify({ label, ...result }));
    return result;
  } finally {
    await Promise.all(procs.map((c) => c.close({ type: "close" })));
    await Promise.all(replicas.map((r) => r.close({ type: "close" })));
  }
}

const base: Result[] = [];
const main: Result[] = [];
for (let rep = 0; rep < REPS; rep++) {
  base.push(
    await run(
      Math.min(SERVICES * REPLICAS, STREAMS),
      `rep ${rep + 1} baseline: one stream per service per replica`,
    ),
  );
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
    marginal: STREAMS > SERVICES * REPLICAS
      ? (m.cpuUsPerChange - base[i].cpuUsPerChange) / (STREAMS / SERVICES - REPLICAS)
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
  replicas: REPLICAS,
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
  per_replica: main[0].replicas.map((x, i) => ({
    replica: i,
    streams: x.streams,
    propagation_p50_ms: spread(main, (m) => m.replicas[i].p50),
    propagation_p99_ms: spread(main, (m) => m.replicas[i].p99),
    lost_updates: spread(main, (m) => m.replicas[i].lost),
    cpu_us_per_change: spread(main, (m) => m.replicas[i].cpuUsPerChange),
    cpu_us_per_change_per_stream: spread(main, (m) => m.replicas[i].cpuUsPerChangePerStream),
    cpu_percent_of_one_core: spread(main, (m) => m.replicas[i].cpuPercent),
    bytes_per_endpoint: spread(main, (m) => m.replicas[i].bytesPerEndpoint),
    index_bytes_per_endpoint: spread(main, (m) => m.replicas[i].indexBytesPerEndpoint),
    bytes_per_stream: spread(main, (m) => m.replicas[i].bytesPerStream),
    loop_lag_p99_ms: spread(main, (m) => m.replicas[i].loopLagP99),
  })),
  load_average_1m: spread(main, (x) => x.load1),
  cpus: navigator.hardwareConcurrency,
  baseline_propagation_p99_ms: baseP99,
  baseline_cpu_us_per_change: spread(base, (x) => x.cpuUsPerChange),
  baseline_cpu_us_per_change_per_stream: baseCpu,
  p99_ratio_vs_baseline: r(p99.median / baseP99.median),
  cpu_per_stream_ratio_vs_baseline: r(cpu.median / baseCpu.median),
}));
