/**
 * A policy controller replica of `bench:policy --replicas=N`: store, watch hub and gRPC server on
 * 127.0.0.1 in a process of its own, as each replica is in production, with its own (fake) watch.
 * The repetition's process drives it over stdin and hands every replica the same change at the
 * same moment, as the API server sends each watcher the same event. Measures itself: CPU during
 * the churn, heap after a full gc. Run with --v8-flags=--expose-gc.
 *
 * stdin (JSON lines): {"load": size}, {"heap": true}, {"churn": true}, {"c": n} (apply change n),
 * {"stop": true}. stdout: {"loaded": {...}}, {"heap": {...}}, {"churning": true}, {"stopped": {...}}.
 */
import process from "node:process";
import { Registry } from "prom-client";
import { defaultPolicyConfig } from "../config.ts";
import { PolicyGrpcServer } from "../grpc_server.ts";
import { FakePolicySource, PolicyStore } from "../store.ts";
import { LineWriter, readLines } from "./lines.ts";
import { change, objects, type ScenarioSize } from "./scenario.ts";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
async function settle(): Promise<Deno.MemoryUsage> {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error("replica.ts needs --v8-flags=--expose-gc");
  gc();
  await sleep(300);
  gc();
  return Deno.memoryUsage();
}

const out = new LineWriter(Deno.stdout.writable);
const source = new FakePolicySource();
const store = new PolicyStore();
const abort = new AbortController();
const registry = new Registry();
let srv: PolicyGrpcServer | undefined;
let size: ScenarioSize | undefined;
let cpu0 = process.cpuUsage();

/** Streams reset by the server (queue overflow, send timeout). */
async function overflow(): Promise<number> {
  let n = 0;
  for (const name of ["policy_updates_queue_overflow_total", "policy_stream_send_timeouts_total"]) {
    const text = await registry.getSingleMetricAsString(name);
    for (const m of text.matchAll(/\} (\d+)$/gm)) n += Number(m[1]);
  }
  return n;
}

for await (const line of readLines(Deno.stdin.readable)) {
  const m = JSON.parse(line) as { load?: ScenarioSize; heap?: true; churn?: true; c?: number; stop?: true };
  if (m.load) {
    size = m.load;
    const m0 = await settle();
    source.start((e) => store.apply(e), abort.signal);
    srv = new PolicyGrpcServer({ store, config: defaultPolicyConfig(), registry });
    let objectCount = 0;
    for (const { kind, object } of objects(size)) {
      source.emit("added", kind, object);
      objectCount++;
    }
    const port = await srv.listen("127.0.0.1", 0);
    const m1 = await settle();
    await out.send({
      loaded: {
        port,
        objects: objectCount,
        coalesceMs: srv.hub.coalesceWindowMs,
        heap0: m0.heapUsed,
        heap1: m1.heapUsed,
        rss0: m0.rss,
        rss1: m1.rss,
      },
    });
  } else if (m.heap) {
    const u = await settle();
    await out.send({ heap: { heap: u.heapUsed, rss: u.rss } });
  } else if (m.churn) {
    cpu0 = process.cpuUsage();
    await out.send({ churning: true });
  } else if (m.c !== undefined && size) {
    const ch = change(size, m.c);
    source.emit("modified", ch.kind, ch.object);
  } else if (m.stop) {
    const cpu = process.cpuUsage(cpu0);
    await out.send({ stopped: { cpuUs: cpu.user + cpu.system, resets: await overflow() } });
  }
}
srv?.forceShutdown();
abort.abort();
await out.close();
Deno.exit(0);
