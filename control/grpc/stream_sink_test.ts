/**
 * The stream sink's queueing and resets: the logic against a scripted transport, then both
 * services that use it (destination and policy) over real grpc-js servers and clients on 127.0.0.1.
 */
import assert from "node:assert/strict";
import * as grpc from "@grpc/grpc-js";
import { Fixture, service, slice } from "../destination/testing.ts";
import { startPolicyServer } from "../policy/test_server.ts";
import { namespace, pod } from "../policy/testing.ts";
import { type ResetReason, StreamSink, type StreamSinkOptions, type Writable } from "./stream_sink.ts";

/** A transport that accepts `room` writes, then reports back-pressure until drained. */
class ScriptedTransport implements Writable {
  written: number[] = [];
  errors: { code: number; details: string }[] = [];
  ended = false;
  #drain: (() => void) | undefined;
  constructor(public room: number) {}
  write(chunk: unknown): boolean {
    this.written.push((chunk as Uint8Array)[0]);
    return this.written.length < this.room;
  }
  once(_event: "drain", cb: () => void) {
    this.#drain = cb;
    return this;
  }
  emit(_event: "error", err: unknown): boolean {
    this.errors.push(err as { code: number; details: string });
    return true;
  }
  end() {
    this.ended = true;
  }
  drain(room: number) {
    this.room = this.written.length + room;
    const d = this.#drain;
    this.#drain = undefined;
    d?.();
  }
}

function sink(t: ScriptedTransport, opts: Partial<StreamSinkOptions> = {}) {
  const resets: ResetReason[] = [];
  let sent = 0;
  const s = new StreamSink(t, {
    name: "test watch",
    capacity: 100,
    sendTimeoutMs: 60_000,
    onReset: (r) => resets.push(r),
    onSent: () => sent++,
    ...opts,
  });
  return { s, resets, sent: () => sent };
}

const msg = (b: number) => new Uint8Array([b]);

Deno.test("StreamSink writes through, queues while blocked, drains in order", () => {
  const t = new ScriptedTransport(2);
  const { s, resets, sent } = sink(t, { capacity: 3 });
  for (const b of [1, 2, 3, 4]) s.push(msg(b));
  assert.deepEqual([t.written, s.queued], [[1, 2], 2]);
  t.drain(10);
  assert.deepEqual([t.written, s.queued, resets, sent()], [[1, 2, 3, 4], 0, [], 4]);
  s.detach();
});

Deno.test("StreamSink blocks again mid-drain and keeps the rest queued in order", () => {
  const t = new ScriptedTransport(1);
  const { s } = sink(t);
  for (const b of [1, 2, 3, 4, 5]) s.push(msg(b));
  t.drain(2); // takes 2 and 3, then back-pressure again
  assert.deepEqual([t.written, s.queued], [[1, 2, 3], 2]);
  t.drain(10);
  assert.deepEqual([t.written, s.queued], [[1, 2, 3, 4, 5], 0]);
  s.detach();
});

Deno.test("StreamSink resets on overflow with RESOURCE_EXHAUSTED naming the stream when no HTTP/2 stream is reachable", () => {
  const t = new ScriptedTransport(1);
  const { s, resets } = sink(t, { capacity: 2 });
  for (const b of [1, 2, 3, 4, 5]) s.push(msg(b));
  assert.deepEqual(resets, ["overflow"]);
  assert.deepEqual(t.errors.map((e) => e.code), [grpc.status.RESOURCE_EXHAUSTED]);
  assert.match(t.errors[0].details, /^test watch stream reset: more than 2 updates waiting .*re-sync$/);
  assert.equal(s.closed, true);
  s.push(msg(6));
  t.drain(10);
  assert.deepEqual(t.written, [1], "nothing is written after the reset");
});

Deno.test("StreamSink resets a stream whose transport stays backed up past the send timeout", async () => {
  const t = new ScriptedTransport(1);
  const { s, resets } = sink(t, { sendTimeoutMs: 20 });
  s.push(msg(1)); // accepted, then back-pressure
  s.push(msg(2)); // queued
  await new Promise((r) => setTimeout(r, 60));
  assert.deepEqual([resets, s.closed, t.errors.map((e) => e.code)], [
    ["send_timeout"],
    true,
    [grpc.status.UNAVAILABLE],
  ]);
  assert.match(t.errors[0].details, /took no data for 20 ms/);
});

Deno.test("StreamSink keeps a stream whose transport drains within the send timeout", async () => {
  const t = new ScriptedTransport(1);
  const { s, resets } = sink(t, { sendTimeoutMs: 50 });
  s.push(msg(1));
  s.push(msg(2));
  t.drain(10);
  await new Promise((r) => setTimeout(r, 80));
  assert.deepEqual([resets, s.closed, t.written], [[], false, [1, 2]]);
  s.detach();
});

Deno.test("StreamSink end() ends the stream cleanly and fail() with the given status, once", () => {
  const a = new ScriptedTransport(10);
  const ended = sink(a).s;
  ended.end();
  ended.fail(grpc.status.INTERNAL, "late");
  assert.deepEqual([a.ended, a.errors], [true, []]);
  const b = new ScriptedTransport(10);
  const failed = sink(b).s;
  failed.fail(grpc.status.NOT_FOUND, "pod ns/p not found");
  failed.end();
  assert.deepEqual([b.ended, b.errors.map((e) => [e.code, e.details])], [false, [[
    grpc.status.NOT_FOUND,
    "pod ns/p not found",
  ]]]);
});

async function until(cond: () => boolean | Promise<boolean>, ms: number, what: string): Promise<void> {
  const deadline = performance.now() + ms;
  while (!(await cond())) {
    if (performance.now() > deadline) throw new Error(`${what} did not happen within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

// The send timeout is far off in both tests below, so a reset can only come from the queue.
const NO_TIMEOUT_MS = 60_000;

Deno.test("overflow: a slow destination Get client is reset with RESOURCE_EXHAUSTED while a fast one keeps receiving", async () => {
  const f = await new Fixture().start({ streamQueueCapacity: 4, streamSendTimeoutMs: NO_TIMEOUT_MS });
  try {
    const eps = Array.from(
      { length: 300 },
      (_, i) => ({ ip: `10.2.${Math.floor(i / 250)}.${(i % 250) + 1}` }),
    );
    f.apply("services", service("ns", "web"));
    f.apply("endpointslices", slice("ns", "web", eps, [{ name: "http", port: 1000 }]));
    const slow = f.get("web.ns.svc.cluster.local:80");
    slow.call.pause(); // reads nothing: HTTP/2 flow control fills, then the sink's queue
    const fast = f.get("web.ns.svc.cluster.local:80");
    await fast.next();
    let slowStatus: grpc.StatusObject | undefined;
    void slow.status.then((s) => slowStatus = s);
    // Each generation moves the target port: a remove and an add of 300 endpoints (~10 KB).
    let g = 0;
    while (slowStatus === undefined) {
      assert.ok(++g <= 200, "the slow client was not reset within 200 generations");
      f.apply("endpointslices", slice("ns", "web", eps, [{ name: "http", port: 1000 + g }]));
      const [r, a] = [await fast.next(10_000), await fast.next(10_000)];
      assert.deepEqual([r.update?.$case, a.update?.$case], ["remove", "add"], `generation ${g}`);
      await new Promise((r) => setTimeout(r, 0));
    }
    console.log(`slow Get client reset after ${g} generations: ${slowStatus.code} ${slowStatus.details}`);
    assert.equal(slowStatus.code, grpc.status.RESOURCE_EXHAUSTED);
    assert.match(
      await f.metric("endpoint_updates_queue_overflow"),
      /service="web\.ns\.svc\.cluster\.local:80"} 1/,
    );
    assert.doesNotMatch(await f.metric("destination_stream_send_timeouts_total"), /} [1-9]/);
    assert.match(
      await f.metric("destination_streams_open"),
      /rpc="get"} 1$/m,
      "only the fast stream is open",
    );

    // The fast client is still served after the reset.
    f.apply("endpointslices", slice("ns", "web", eps, [{ name: "http", port: 999 }]));
    assert.equal((await fast.next(5000)).update?.$case, "remove");
    fast.cancel();
  } finally {
    await f.stop();
  }
});

Deno.test("overflow: a slow policy WatchPort client is reset with RESOURCE_EXHAUSTED while a fast one keeps receiving", async () => {
  await using t = await startPolicyServer({ streamQueueCapacity: 4, streamSendTimeoutMs: NO_TIMEOUT_MS });
  const NS = "emojivoto";
  t.source.emit("added", "Namespace", namespace(NS));
  t.source.emit("added", "Pod", pod(NS, "web-1", { app: "web-1" }));
  const spec = { workload: JSON.stringify({ ns: NS, pod: "web-1" }), port: 8080 };
  const slow = t.inbound.watchPort(spec);
  let slowStatus: grpc.StatusObject | undefined;
  slow.on("data", () => {});
  slow.on("error", () => {});
  slow.on("status", (s: grpc.StatusObject) => slowStatus = s);
  slow.pause();
  const fast = t.inbound.watchPort(spec);
  const got: unknown[] = [];
  let wake = () => {};
  fast.on("data", (m: unknown) => {
    got.push(m);
    wake();
  });
  fast.on("error", () => {});
  /** Resolves once the fast client holds `n` messages; fails after 5 s. */
  const received = (n: number, what: string) =>
    new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${what} did not happen within 5000 ms`)), 5000);
      wake = () => {
        if (got.length < n) return;
        clearTimeout(timer);
        resolve();
      };
      wake();
    });
  await received(1, "the fast client's first policy");

  // Policy messages are small: thousands of flips fill the slow stream's flow-control window.
  let flips = 0;
  while (slowStatus === undefined) {
    assert.ok(++flips <= 5000, "the slow client was not reset within 5000 updates");
    t.flip(NS, "web-1");
    // Every update reaches the fast client before the next one is made.
    await received(1 + flips, `the fast client receiving update ${flips}`);
  }
  console.log(`slow WatchPort client reset after ${flips} updates: ${slowStatus.code} ${slowStatus.details}`);
  assert.equal(slowStatus.code, grpc.status.RESOURCE_EXHAUSTED);
  assert.match(
    await t.registry.getSingleMetricAsString("policy_updates_queue_overflow_total"),
    /direction="inbound"} 1/,
  );
  assert.doesNotMatch(
    await t.registry.getSingleMetricAsString("policy_stream_send_timeouts_total"),
    /} [1-9]/,
  );
  await until(() => t.srv.openStreams === 1, 5000, "only the fast stream being left open");

  t.flip(NS, "web-1");
  await received(2 + flips, "an update after the reset");
  fast.cancel();
  slow.cancel();
});
