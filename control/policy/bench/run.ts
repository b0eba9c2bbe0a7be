/**
 * One repetition, in a process of its own (started with --expose-gc): either the policy controller
 * (store, hub, gRPC server) or the baseline (bare grpc-js streams fed pre-encoded bytes, no index)
 * serving the same streams from client processes, under the same churn. Measures this process only:
 * CPU during the churn, heap (after a full gc) and RSS, per resource and per stream; propagation
 * from a change entering the process to a client receiving it; and whether every stream converged.
 */
import * as grpc from "@grpc/grpc-js";
import { Buffer } from "node:buffer";
import process from "node:process";
import { Registry } from "prom-client";
import { defaultPolicyConfig } from "../config.ts";
import { PolicyGrpcServer } from "../grpc_server.ts";
import { FakePolicySource, PolicyStore } from "../store.ts";
import { ClientProcs } from "./client_procs.ts";
import { type Loaded, ReplicaProcs } from "./replica_procs.ts";
import { change, objects, policyResources, type ScenarioSize, streams } from "./scenario.ts";

export interface RunOptions {
  size: ScenarioSize;
  changes: number;
  intervalMs: number;
  clientProcs: number;
  /** Churn stops after this long even if changes remain. */
  churnLimitMs: number;
  /**
   * Policy mode: run the controller as this many replica processes (replica.ts), each fed the same
   * changes, the client connections spread over them; unset, it runs in this process.
   */
  replicas?: number;
}

/** One replica's share of a repetition (policy mode with `replicas`). */
export interface ReplicaFigures {
  streams: number;
  p50_ms: number;
  p99_ms: number;
  lost_streams: number;
  cpu_us_per_change: number;
  cpu_us_per_change_per_stream: number;
  heap_bytes_per_stream: number;
  heap_bytes_per_resource: number;
}

export interface RepResult {
  mode: "policy" | "baseline";
  streams: number;
  resources: number;
  objects: number;
  changes_sent: number;
  updates_expected: number;
  updates_received: number;
  lost_streams: number;
  resets: number;
  reset_detail: Record<string, number>;
  p50_ms: number;
  p99_ms: number;
  max_ms: number;
  cpu_ms: number;
  cpu_us_per_change: number;
  cpu_us_per_change_per_stream: number;
  heap_bytes_per_stream: number;
  rss_bytes_per_stream: number;
  heap_bytes_per_resource: number;
  rss_bytes_per_resource: number;
  clock_error_ms: number;
  coalesce_window_ms: number | null;
  churn_s: number;
  /** Changes per second actually sent (timers round short intervals up). */
  change_rate_per_s: number;
  /** With `replicas`: each replica's figures (CPU and heap above are then summed over them). */
  replicas?: ReplicaFigures[];
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function gc(): void {
  const f = (globalThis as { gc?: () => void }).gc;
  if (!f) throw new Error("run.ts needs --v8-flags=--expose-gc to measure memory after a collection");
  f();
  f();
}

async function settle(): Promise<Deno.MemoryUsage> {
  gc();
  await sleep(300);
  gc();
  return Deno.memoryUsage();
}

async function waitFor(cond: () => boolean, ms: number): Promise<boolean> {
  const end = performance.now() + ms;
  while (!cond()) {
    if (performance.now() > end) return false;
    await sleep(20);
  }
  return true;
}

export function percentile(sorted: number[], q: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * q))];
}

/** A bare grpc-js server: each stream asks for a group; the churn writes shared bytes to its members. */
async function baselineServer() {
  const writers = new Map<number, grpc.ServerWritableStream<Buffer, Buffer>[]>();
  const def: grpc.ServiceDefinition = {
    watch: {
      path: "/bench.Baseline/Watch",
      requestStream: false,
      responseStream: true,
      requestSerialize: (v: Buffer) => v,
      requestDeserialize: (b: Buffer) => b,
      responseSerialize: (v: Buffer) => v,
      responseDeserialize: (b: Buffer) => b,
    },
  };
  const server = new grpc.Server({ "grpc.max_concurrent_streams": 2000 });
  server.addService(def, {
    watch: (call: grpc.ServerWritableStream<Buffer, Buffer>) => {
      const g = Number(call.request.toString());
      let list = writers.get(g);
      if (!list) writers.set(g, list = []);
      list.push(call);
      call.on("cancelled", () => list!.splice(list!.indexOf(call), 1));
      call.write(payload(0));
    },
  });
  const port = await new Promise<number>((res, rej) =>
    server.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (e, p) => e ? rej(e) : res(p))
  );
  return { server, port, writers };
}

/** A message the size of a typical policy answer, carrying its rev marker. */
function payload(rev: number): Buffer {
  const b = Buffer.alloc(600, 0x61);
  b.write(`/rev-${rev}/`, 100);
  return b;
}

export async function runRep(mode: "policy" | "baseline", o: RunOptions): Promise<RepResult> {
  const size = o.size;
  const all = streams(size);
  const m0 = await settle();
  let stop: () => void;
  let apply: (c: ReturnType<typeof change>) => void;
  let overflow = () => Promise.resolve(0);
  let objectCount = 0;
  let coalesceMs: number | null = null;
  let replicas: ReplicaProcs | undefined;
  let loaded: Loaded[] = [];
  let ports: number[] = [];
  if (mode === "policy" && o.replicas) {
    const r = replicas = new ReplicaProcs(o.replicas);
    loaded = await r.load(size);
    ports = loaded.map((l) => l.port);
    objectCount = loaded[0].objects;
    coalesceMs = loaded[0].coalesceMs;
    // Change n carries rev n + 1 (scenario.ts): each replica rebuilds it from its index.
    apply = (c) => r.apply(c.rev - 1);
    stop = () => {};
  } else if (mode === "policy") {
    const source = new FakePolicySource();
    const store = new PolicyStore();
    const abort = new AbortController();
    source.start((e) => store.apply(e), abort.signal);
    const registry = new Registry();
    const srv = new PolicyGrpcServer({ store, config: defaultPolicyConfig(), registry });
    coalesceMs = srv.hub.coalesceWindowMs;
    for (const { kind, object } of objects(size)) {
      source.emit("added", kind, object);
      objectCount++;
    }
    ports = [await srv.listen("127.0.0.1", 0)];
    apply = (c) => source.emit("modified", c.kind, c.object);
    overflow = async () => {
      let n = 0;
      for (const name of ["policy_updates_queue_overflow_total", "policy_stream_send_timeouts_total"]) {
        const text = await registry.getSingleMetricAsString(name);
        for (const m of text.matchAll(/\} (\d+)$/gm)) n += Number(m[1]);
      }
      return n;
    };
    stop = () => {
      srv.forceShutdown();
      abort.abort();
    };
  } else {
    const b = await baselineServer();
    ports = [b.port];
    const bytes = new Map<number, Buffer>();
    apply = (c) => {
      let m = bytes.get(c.rev);
      if (!m) bytes.set(c.rev, m = payload(c.rev));
      for (const w of b.writers.get(c.group) ?? []) w.write(m);
      bytes.delete(c.rev);
    };
    stop = () => b.server.forceShutdown();
    // The baseline asks by group: rewrite each stream's request to name it.
    for (const s of all) {
      s.path = "/bench.Baseline/Watch";
      s.req = Buffer.from(String(s.group)).toString("base64");
    }
  }
  const m1 = await settle();

  const clients = ClientProcs.start(o.clientProcs, ports, all);
  const readyIn = Math.max(60_000, all.length * 20);
  if (!(await waitFor(() => clients.ready, readyIn))) {
    const errors = await clients.finish();
    stop();
    await replicas?.close();
    throw new Error(
      `${mode}: only ${clients.first.size}/${all.length} streams got their first message within ${readyIn} ms ` +
        `(errors ${JSON.stringify(errors)})`,
    );
  }
  const m2 = await settle();
  const r2 = replicas ? await replicas.heap() : [];
  await clients.calibrate();
  await replicas?.churn();
  const receivedBefore = clients.received;

  // Churn: bounded by count and by time.
  const emitted = new Map<number, number>();
  const finalRev = new Map<number, number>();
  let expected = 0, sent = 0;
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  for (let c = 0; c < o.changes && performance.now() - t0 < o.churnLimitMs; c++) {
    const ch = change(size, c);
    emitted.set(ch.rev, performance.now());
    apply(ch);
    finalRev.set(ch.group, ch.rev);
    expected += ch.fanout;
    sent++;
    await sleep(o.intervalMs);
  }
  const sendMs = performance.now() - t0;
  // A stream has converged when it received something and its latest message reflects the last
  // change of its group (or, for streams no change touches, is still its first).
  const convergedStream = (s: (typeof all)[number]) => {
    const want = s.group >= 0 ? finalRev.get(s.group) ?? 0 : clients.first.get(s.id);
    return clients.last.has(s.id) && clients.last.get(s.id) === want;
  };
  const converged = () => all.every(convergedStream);
  await waitFor(converged, 30_000);
  const churnMs = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  const stopped = replicas ? await replicas.stop() : [];
  // With replicas the controller's CPU is theirs, not this process's (the churn driver's).
  const cpuMs = replicas ? stopped.reduce((a, x) => a + x.cpuUs, 0) / 1000 : (cpu.user + cpu.system) / 1000;

  const resetsServer = replicas ? stopped.reduce((a, x) => a + x.resets, 0) : await overflow();
  const errors = await clients.finish();
  stop();
  await replicas?.close();

  const latencies: number[] = [];
  const latOf: number[][] = loaded.map(() => []);
  for (const r of clients.receipts()) {
    const e = emitted.get(r.rev);
    if (r.rev <= 0 || e === undefined) continue;
    latencies.push(r.t - e);
    if (replicas) latOf[clients.replicaOf.get(r.stream)!].push(r.t - e);
  }
  latencies.sort((a, b) => a - b);
  const lost = all.filter((s) => !convergedStream(s)).length;
  const clientResets = Object.values(errors).reduce((a, b) => a + b, 0);
  const resources = mode === "policy" ? policyResources(size) : 0;
  const perReplica: ReplicaFigures[] = loaded.map((l, r) => {
    const mine = all.filter((s) => clients.replicaOf.get(s.id) === r);
    const lat = latOf[r].sort((a, b) => a - b);
    return {
      streams: mine.length,
      p50_ms: percentile(lat, 0.5),
      p99_ms: percentile(lat, 0.99),
      lost_streams: mine.filter((s) => !convergedStream(s)).length,
      cpu_us_per_change: stopped[r].cpuUs / sent,
      cpu_us_per_change_per_stream: stopped[r].cpuUs / sent / mine.length,
      heap_bytes_per_stream: (r2[r].heap - l.heap1) / mine.length,
      heap_bytes_per_resource: (l.heap1 - l.heap0) / resources,
    };
  });
  // With replicas, memory is summed over them (each holds every resource: per resource, the mean).
  const sum = (f: (l: Loaded, r: number) => number) => loaded.reduce((a, l, r) => a + f(l, r), 0);
  const heapStreams = replicas ? sum((l, r) => r2[r].heap - l.heap1) : m2.heapUsed - m1.heapUsed;
  const rssStreams = replicas ? sum((l, r) => r2[r].rss - l.rss1) : m2.rss - m1.rss;
  const heapResources = replicas ? sum((l) => l.heap1 - l.heap0) / loaded.length : m1.heapUsed - m0.heapUsed;
  const rssResources = replicas ? sum((l) => l.rss1 - l.rss0) / loaded.length : m1.rss - m0.rss;
  return {
    mode,
    streams: all.length,
    resources,
    objects: objectCount,
    changes_sent: sent,
    updates_expected: expected,
    updates_received: clients.received - receivedBefore,
    lost_streams: lost,
    resets: Math.max(resetsServer, clientResets),
    reset_detail: { ...errors, server_resets: resetsServer },
    p50_ms: percentile(latencies, 0.5),
    p99_ms: percentile(latencies, 0.99),
    max_ms: latencies.length ? latencies[latencies.length - 1] : NaN,
    cpu_ms: cpuMs,
    cpu_us_per_change: (cpuMs * 1000) / sent,
    cpu_us_per_change_per_stream: (cpuMs * 1000) / sent / all.length,
    heap_bytes_per_stream: heapStreams / all.length,
    rss_bytes_per_stream: rssStreams / all.length,
    heap_bytes_per_resource: resources ? heapResources / resources : NaN,
    rss_bytes_per_resource: resources ? rssResources / resources : NaN,
    clock_error_ms: clients.clockErrorMs,
    coalesce_window_ms: coalesceMs,
    churn_s: churnMs / 1000,
    change_rate_per_s: sent / (sendMs / 1000),
    ...(replicas ? { replicas: perReplica } : {}),
  };
}
