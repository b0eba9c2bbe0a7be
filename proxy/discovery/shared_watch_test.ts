import assert from "node:assert/strict";
import { backoffDelay } from "../core/backoff.ts";
import { type OpenStream, SharedWatch, type StreamEnd } from "./shared_watch.ts";
import { reduceDestination } from "./clients.ts";
import { toIpAddress } from "../../proto/ip.ts";

/** A scripted control plane: each open() gets the next stream; tests push messages and end it. */
class Streams {
  opened: { key: string; push: (m: number) => void; end: (e: StreamEnd) => void; signal: AbortSignal }[] = [];
  open: OpenStream<string, number> = (key, signal, onMessage) =>
    new Promise((resolve) => {
      const s = { key, push: onMessage, end: resolve, signal };
      this.opened.push(s);
      signal.addEventListener("abort", () => resolve({ code: 1, details: "cancelled" }));
    });
}

function watch(streams: Streams, idleMs = 50) {
  return new SharedWatch<string, number, number[]>({
    name: "t",
    keyOf: (k) => k,
    open: streams.open,
    reduce: (prev, m) => {
      if (m < 0) throw new Error("negative");
      return [...(prev ?? []), m];
    },
    terminalCodes: new Set([3]),
    idleMs,
    backoff: { minMs: 5, maxMs: 20, jitter: 0 },
  });
}

const tick = (ms = 0) => new Promise((r) => setTimeout(r, ms));

Deno.test("shared watch: one stream per key, shared by subscribers", async () => {
  const s = new Streams();
  const w = watch(s);
  const h1 = w.subscribe("k"), h2 = w.subscribe("k"), h3 = w.subscribe("other");
  assert.equal(s.opened.length, 2);
  s.opened[0].push(1);
  assert.deepEqual((await h2.ready(100)).state, [1]);
  assert.deepEqual(h1.current(), { state: [1], status: "live" });
  assert.equal(h3.current().status, "pending");
  w.close();
});

Deno.test("shared watch: idle eviction after the last release, reuse before it", async () => {
  const s = new Streams();
  const w = watch(s, 40);
  const h = w.subscribe("k");
  h.release();
  await tick(10);
  const again = w.subscribe("k");
  assert.equal(s.opened.length, 1, "resubscribing within the idle time reuses the stream");
  again.release();
  await tick(80);
  assert.equal(w.size, 0);
  assert.ok(s.opened[0].signal.aborted, "evicted stream is cancelled");
  w.close();
});

Deno.test("shared watch: degraded mode keeps the last state, the first message after reconnect replaces it", async () => {
  const s = new Streams();
  const w = watch(s);
  const h = w.subscribe("k");
  s.opened[0].push(1);
  s.opened[0].push(2);
  s.opened[0].end({ code: 14, details: "unavailable" });
  await tick();
  assert.deepEqual(h.current(), { state: [1, 2], status: "degraded" });
  await tick(30);
  assert.equal(s.opened.length, 2, "reconnected after backoff");
  s.opened[1].push(7);
  assert.deepEqual(h.current(), { state: [7], status: "live" });
  w.close();
});

Deno.test("shared watch: invalid messages are ignored, terminal codes stop retrying", async () => {
  const s = new Streams();
  const w = watch(s);
  const h = w.subscribe("k");
  s.opened[0].push(1);
  s.opened[0].push(-1);
  assert.deepEqual(h.current().state, [1]);
  s.opened[0].end({ code: 3, details: "bad request" });
  await tick(40);
  assert.equal(h.current().status, "final");
  assert.equal(s.opened.length, 1);
  const pending = w.subscribe("never");
  const v = await pending.ready(20);
  assert.equal(v.status, "pending", "ready() gives up at the timeout");
  w.close();
});

Deno.test("backoff: exponential, capped, jittered", () => {
  const b = { minMs: 100, maxMs: 1000, jitter: 0.1 };
  assert.equal(backoffDelay(b, 0, () => 0), 100);
  assert.equal(backoffDelay(b, 3, () => 0), 800);
  assert.equal(backoffDelay(b, 10, () => 0), 1000);
  assert.equal(backoffDelay(b, 10, () => 1), 1100);
});

Deno.test("destination updates: add, remove, no_endpoints", () => {
  const ep = (ip: string) => ({
    addr: { ip: toIpAddress(ip), port: 80 },
    weight: 1,
    metricLabels: {},
    tlsIdentity: undefined,
    protocolHint: undefined,
    authorityOverride: undefined,
    http2: undefined,
    resourceRef: undefined,
  });
  let s = reduceDestination(undefined, {
    update: { $case: "add", value: { addrs: [ep("10.0.0.1"), ep("10.0.0.2")], metricLabels: {} } },
  });
  assert.deepEqual([...s.endpoints.keys()], ["10.0.0.1:80", "10.0.0.2:80"]);
  s = reduceDestination(s, {
    update: { $case: "remove", value: { addrs: [{ ip: toIpAddress("10.0.0.1"), port: 80 }] } },
  });
  assert.deepEqual([...s.endpoints.keys()], ["10.0.0.2:80"]);
  s = reduceDestination(s, { update: { $case: "noEndpoints", value: { exists: false } } });
  assert.equal(s.endpoints.size, 0);
  assert.equal(s.exists, false);
  assert.throws(() => reduceDestination(s, { update: undefined }));
});
