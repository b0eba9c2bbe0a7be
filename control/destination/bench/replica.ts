/**
 * A controller replica of `bench:destination`: the destination controller (fake watch sources →
 * informers → endpoint index → grpc-js server on 127.0.0.1) in a process of its own, as each
 * replica is in production. Every replica has its own watch; the benchmark's driver sends each
 * the same EndpointSlice change at the same moment (JSON lines on stdin, see plan.ts), as the API
 * server sends each watcher the same event. It reports its own CPU, heap and event-loop lag.
 * Run with --v8-flags=--expose-gc (heap after GC).
 */
import process from "node:process";
import { Fixture, pod, service, slice } from "../testing.ts";
import { endpointIp, type FromReplica, jsonLines, type ToReplica } from "./plan.ts";

const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error("replica.ts needs --v8-flags=--expose-gc");
function heap(): number {
  gc!();
  gc!();
  return Deno.memoryUsage().heapUsed;
}
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const enc = new TextEncoder();
const out = Deno.stdout.writable.getWriter();
let writing = Promise.resolve();
function send(m: FromReplica): void {
  const bytes = enc.encode(JSON.stringify(m) + "\n");
  writing = writing.then(() => out.write(bytes));
}

const f = new Fixture();
let perService = 0;
const epsOf = (s: number, gen: number) =>
  Array.from({ length: perService }, (_, i) => ({ ip: endpointIp(s, i, gen), pod: `p-${s}-${i}` }));

function loadObjects(into: Fixture, services: number): void {
  for (let s = 0; s < services; s++) {
    into.apply("services", service("bench", `svc-${s}`));
    for (let i = 0; i < perService; i++) {
      into.apply("pods", pod("bench", `p-${s}-${i}`, endpointIp(s, i, 0), { meshed: true, sa: `sa-${s}` }));
    }
    into.apply("endpointslices", slice("bench", `svc-${s}`, epsOf(s, 0)));
  }
}

let cpu0 = process.cpuUsage();
let lags: number[] = [];
let lagTimer: ReturnType<typeof setInterval> | undefined;

try {
  for await (const m of jsonLines<ToReplica>(Deno.stdin.readable)) {
    if (m.type === "load") {
      perService = m.perService;
      // The fake API server lives in this process but is not the controller's memory: measure what the same
      // objects cost in fakes alone (never started, so nothing else holds them) and report it to be subtracted.
      const calibrate = heap();
      let cal: Fixture | undefined = new Fixture();
      loadObjects(cal, m.services);
      const sourceBytes = heap() - calibrate;
      cal = undefined;
      f.apply("namespaces", { metadata: { name: "bench" } });
      await f.start();
      await sleep(200);
      const heapEmpty = heap();
      loadObjects(f, m.services);
      await sleep(50);
      // The fake API server's replay history is not the controller's memory: keep it short.
      f.fake("endpointslices").historyLimit = 1000;
      send({ type: "loaded", port: f.port, heapEmpty, heapLoaded: heap(), sourceBytes });
    } else if (m.type === "heap") send({ type: "heap", heap: heap(), rss: Deno.memoryUsage().rss });
    else if (m.type === "churn") {
      cpu0 = process.cpuUsage();
      lags = [];
      // Event-loop lag: how late a 5 ms timer fires while the controller works (or waits for a core).
      let tick = performance.now();
      lagTimer = setInterval(() => {
        const t = performance.now();
        lags.push(t - tick - 5);
        tick = t;
      }, 5);
      send({ type: "churning" });
    } else if (m.type === "apply") {
      f.apply("endpointslices", slice("bench", `svc-${m.s}`, epsOf(m.s, m.gen)));
    } else if (m.type === "stop") {
      const cpu = process.cpuUsage(cpu0);
      clearInterval(lagTimer);
      lags.sort((a, b) => a - b);
      const p99 = lags.length ? lags[Math.min(lags.length - 1, Math.floor(0.99 * lags.length))] : NaN;
      send({ type: "stopped", cpuUs: cpu.user + cpu.system, loopLagP99: p99 });
    } else if (m.type === "close") break;
  }
} catch (e) {
  send({ type: "error", message: String(e) });
}
clearInterval(lagTimer);
await f.stop();
await writing;
Deno.exit(0);
