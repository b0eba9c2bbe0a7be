/**
 * `deno task bench:destination`: Get streams over services with continuous endpoint churn,
 * in one process: fake watch sources → informers → endpoint index → grpc-js server → grpc-js
 * clients on 127.0.0.1. Propagation is the time from the watch event to the moment the last
 * subscribed stream of that service has received the update. A baseline with one stream per
 * service runs first in the same process; the last line is one JSON object.
 *
 * Flags: --streams=1000 --services=100 --endpoints=5000 --rate=200 (changes/s) --seconds=10
 */
import * as grpc from "@grpc/grpc-js";
import process from "node:process";
import { DestinationClient, type Update } from "../../../proto/gen/destination.ts";
import { Fixture, pod, service, slice } from "../testing.ts";

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
  return a ? Number(a.split("=")[1]) : def;
};
const STREAMS = arg("streams", 1000);
const SERVICES = arg("services", 100);
const ENDPOINTS = arg("endpoints", 5000);
const RATE = arg("rate", 200);
const SECONDS = arg("seconds", 10);
const PER_SVC = Math.ceil(ENDPOINTS / SERVICES);

function heap(): number {
  gc!();
  gc!();
  return Deno.memoryUsage().heapUsed;
}

const ip = (svc: number, i: number, gen: number) => `10.${100 + (gen % 100)}.${svc}.${i + 1}`;

function pct(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))];
}

interface Sub {
  svc: number;
  call: grpc.ClientReadableStream<Update>;
}

async function run(streams: number, label: string) {
  const f = new Fixture();
  f.apply("namespaces", { metadata: { name: "bench" } });
  await f.start({ streamQueueCapacity: 1000 });
  const gens = new Array(SERVICES).fill(0);
  const epsOf = (s: number) =>
    Array.from({ length: PER_SVC }, (_, i) => ({ ip: ip(s, i, i === 0 ? gens[s] : 0), pod: `p-${s}-${i}` }));
  for (let s = 0; s < SERVICES; s++) {
    f.apply("services", service("bench", `svc-${s}`));
    for (let i = 0; i < PER_SVC; i++) {
      f.apply("pods", pod("bench", `p-${s}-${i}`, ip(s, i, 0), { meshed: true, sa: `sa-${s}` }));
    }
    f.apply("endpointslices", slice("bench", `svc-${s}`, epsOf(s)));
  }
  await new Promise((r) => setTimeout(r, 50));
  const heapLoaded = heap();

  // Several channels, as many proxies would open; streams spread over services round robin.
  const conns = Array.from(
    { length: 8 },
    () => new DestinationClient(`127.0.0.1:${f.port}`, grpc.credentials.createInsecure()),
  );
  const subs: Sub[] = [];
  const pending = new Map<number, { t0: number; remaining: Set<Sub> }>();
  const lat: number[] = [];
  let firstMessages = 0;
  const open = (n: number) => {
    for (let k = subs.length; k < n; k++) {
      const svc = k % SERVICES;
      const call = conns[k % conns.length].get({
        scheme: "",
        path: `svc-${svc}.bench.svc.cluster.local:80`,
        contextToken: "",
      });
      const sub = { svc, call };
      let first = true;
      call.on("data", (u: Update) => {
        if (first) {
          first = false;
          firstMessages++;
          return;
        }
        if (u.update?.$case !== "add") return;
        const p = pending.get(svc);
        if (!p || !p.remaining.delete(sub)) return;
        if (p.remaining.size === 0) {
          lat.push(performance.now() - p.t0);
          pending.delete(svc);
        }
      });
      call.on("error", () => {});
      subs.push(sub);
    }
  };
  const waitFirst = async (n: number) => {
    const until = Date.now() + 60_000;
    while (firstMessages < n && Date.now() < until) await new Promise((r) => setTimeout(r, 10));
    if (firstMessages < n) throw new Error(`only ${firstMessages}/${n} streams got their first message`);
  };
  // One stream per service first: the per-endpoint state of the index.
  open(Math.min(SERVICES, streams));
  await waitFirst(Math.min(SERVICES, streams));
  const heapOneEach = heap();
  open(streams);
  await waitFirst(streams);
  const heapAll = heap();

  // Churn: each change replaces one endpoint of one service (a remove + an add for its streams).
  const slices = f.fake("endpointslices");
  const cpu0 = process.cpuUsage();
  const wall0 = performance.now();
  const total = RATE * SECONDS;
  let skipped = 0;
  for (let n = 0; n < total; n++) {
    const due = wall0 + (n * 1000) / RATE;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    const s = n % SERVICES;
    if (pending.has(s)) {
      skipped++; // the previous change of this service is still in flight
      continue;
    }
    gens[s]++;
    pending.set(s, { t0: performance.now(), remaining: new Set(subs.filter((x) => x.svc === s)) });
    slices.apply(slice("bench", `svc-${s}`, epsOf(s)));
  }
  const until = Date.now() + 10_000;
  while (pending.size > 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 10));
  const wall = performance.now() - wall0;
  const cpu = process.cpuUsage(cpu0);
  lat.sort((a, b) => a - b);
  const overflow = await f.metric("endpoint_updates_queue_overflow");
  for (const s of subs) s.call.cancel();
  for (const c of conns) c.close();
  await f.stop();
  const result = {
    label,
    streams,
    samples: lat.length,
    lost: pending.size,
    skipped,
    p50: pct(lat, 0.5),
    p99: pct(lat, 0.99),
    max: lat[lat.length - 1],
    bytesPerEndpoint: (heapOneEach - heapLoaded) / (SERVICES * PER_SVC),
    bytesPerStream: streams > SERVICES ? (heapAll - heapOneEach) / (streams - SERVICES) : NaN,
    cpuMs: (cpu.user + cpu.system) / 1000,
    wallMs: wall,
    overflows: overflow.split("\n").filter((l) => !l.startsWith("#") && l.trim()).length,
  };
  console.log(JSON.stringify(result));
  return result;
}

const base = await run(SERVICES, "baseline: one stream per service");
const main = await run(STREAMS, "target");
const r = (x: number) => Math.round(x * 100) / 100;
console.log(JSON.stringify({
  streams: STREAMS,
  services: SERVICES,
  endpoints: SERVICES * PER_SVC,
  churn_per_second: RATE,
  seconds: SECONDS,
  samples: main.samples,
  lost_updates: main.lost,
  propagation_p50_ms: r(main.p50),
  propagation_p99_ms: r(main.p99),
  propagation_max_ms: r(main.max),
  baseline_propagation_p99_ms: r(base.p99),
  p99_ratio_vs_baseline: r(main.p99 / base.p99),
  bytes_per_endpoint: Math.round(main.bytesPerEndpoint),
  bytes_per_stream: Math.round(main.bytesPerStream),
  cpu_percent_of_one_core: r((main.cpuMs / main.wallMs) * 100),
  baseline_cpu_percent_of_one_core: r((base.cpuMs / base.wallMs) * 100),
  stream_resets: main.overflows,
}));
