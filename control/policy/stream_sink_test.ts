import * as grpc from "@grpc/grpc-js";
import { assertEquals } from "./assert.ts";
import { StreamSink, type Writable } from "./stream_sink.ts";

/** A transport that accepts `room` writes, then reports back-pressure until drained. */
class FakeTransport implements Writable {
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

Deno.test("StreamSink writes through, queues while blocked, drains in order", () => {
  const t = new FakeTransport(2);
  let overflows = 0;
  const s = new StreamSink(t, 3, () => overflows++);
  for (const b of [1, 2, 3, 4]) s.offer(new Uint8Array([b]));
  assertEquals([t.written, s.queued], [[1, 2], 2]);
  t.drain(10);
  assertEquals([t.written, s.queued, overflows], [[1, 2, 3, 4], 0, 0]);
});

Deno.test("StreamSink resets the stream with UNAVAILABLE when the queue overflows, and counts it", () => {
  const t = new FakeTransport(1);
  let overflows = 0;
  const s = new StreamSink(t, 2, () => overflows++);
  for (const b of [1, 2, 3, 4, 5]) s.offer(new Uint8Array([b]));
  assertEquals(overflows, 1);
  assertEquals(t.errors.map((e) => e.code), [grpc.status.UNAVAILABLE]);
  assertEquals(s.closed, true);
  s.offer(new Uint8Array([6]));
  t.drain(10);
  assertEquals(t.written, [1]);
});

Deno.test("StreamSink resets a stream whose transport stays backed up past the send timeout, and counts it", async () => {
  const t = new FakeTransport(1);
  let timeouts = 0;
  const s = new StreamSink(t, 100, () => {}, { ms: 20, onTimeout: () => timeouts++ });
  s.offer(new Uint8Array([1])); // accepted, then back-pressure
  s.offer(new Uint8Array([2])); // queued
  await new Promise((r) => setTimeout(r, 60));
  assertEquals([timeouts, s.closed, t.errors.map((e) => e.code)], [1, true, [grpc.status.UNAVAILABLE]]);
});

Deno.test("StreamSink keeps a stream whose transport drains within the send timeout", async () => {
  const t = new FakeTransport(1);
  let timeouts = 0;
  const s = new StreamSink(t, 100, () => {}, { ms: 50, onTimeout: () => timeouts++ });
  s.offer(new Uint8Array([1]));
  s.offer(new Uint8Array([2]));
  t.drain(10);
  await new Promise((r) => setTimeout(r, 80));
  assertEquals([timeouts, s.closed, t.written], [0, false, [1, 2]]);
  s.detach();
});
