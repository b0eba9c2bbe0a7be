import assert from "node:assert/strict";
import type { Body } from "../../http/message.ts";
import { HeaderList } from "../../http/message.ts";
import { DEFAULT_MAX_REQUEST_BYTES, ReplayBody } from "./replay_body.ts";

/** A body fed chunk by chunk by the test, to see that reads stream without waiting for the end. */
class Feed implements Body {
  length: number | undefined;
  trailers: HeaderList | undefined;
  cancelled: Error | undefined | null = null;

  cancelledMessage(): string | undefined {
    return this.cancelled?.message;
  }
  reads = 0;
  #queue: (Uint8Array | null)[] = [];
  #waiting: ((c: Uint8Array | null) => void) | undefined;

  constructor(length?: number) {
    this.length = length;
  }

  push(c: Uint8Array | null, trailers?: HeaderList): void {
    if (c === null) this.trailers = trailers;
    if (this.#waiting) {
      const w = this.#waiting;
      this.#waiting = undefined;
      w(c);
    } else this.#queue.push(c);
  }

  read(): Promise<Uint8Array | null> {
    this.reads++;
    if (this.#queue.length) return Promise.resolve(this.#queue.shift()!);
    return new Promise((r) => (this.#waiting = r));
  }

  cancel(reason?: Error): void {
    this.cancelled = reason;
  }
}

const bytes = (n: number, v = 1) => new Uint8Array(n).fill(v);

async function readAll(b: Body): Promise<number[]> {
  const sizes: number[] = [];
  for (let c = await b.read(); c !== null; c = await b.read()) sizes.push(c.length);
  return sizes;
}

Deno.test("replay body: the first attempt streams chunk by chunk; a retry replays the whole body", async () => {
  assert.equal(DEFAULT_MAX_REQUEST_BYTES, 65_536);
  const src = new Feed();
  const r = ReplayBody.wrap(src)!;
  const first = r.cursor();
  const p1 = first.read();
  src.push(bytes(10));
  assert.equal((await p1)!.length, 10, "got the first chunk before the body ended");
  assert.equal(r.canReplay, false, "read partway: not replayable yet");
  src.push(bytes(20));
  src.push(null, new HeaderList(["x-t", "1"]));
  assert.equal((await first.read())!.length, 20);
  assert.equal(await first.read(), null);
  assert.equal(first.trailers?.get("x-t"), "1");
  assert.equal(r.canReplay, true);
  assert.equal(r.bufferedBytes, 30);

  const second = r.cursor();
  assert.deepEqual(await readAll(second), [10, 20]);
  assert.equal(second.trailers?.get("x-t"), "1");
  await assert.rejects(first.read(), /superseded/, "the old attempt's cursor stops");
  assert.equal(src.reads, 3, "the original was read once");
  r.seal();
  assert.equal(src.cancelled, null, "a finished body is not cancelled");
});

Deno.test("replay body: over the limit the copy is dropped, the first attempt keeps streaming, no retry", async () => {
  const src = new Feed();
  const r = ReplayBody.wrap(src, 100)!;
  const c = r.cursor();
  src.push(bytes(60));
  src.push(bytes(60));
  src.push(bytes(60));
  src.push(null);
  assert.deepEqual(await readAll(c), [60, 60, 60]);
  assert.equal(r.capped, true);
  assert.equal(r.canReplay, false);
  assert.equal(r.bufferedBytes, 0, "nothing kept beyond the limit");
  assert.throws(() => r.cursor(), /cannot be replayed/);
  assert.equal(
    ReplayBody.wrap(new Feed(101), 100),
    undefined,
    "a declared length over the limit is not wrapped",
  );
  assert.ok(ReplayBody.wrap(new Feed(100), 100));
});

Deno.test("replay body: an attempt that never read lets the retry read the original", async () => {
  const src = new Feed();
  const r = ReplayBody.wrap(src)!;
  r.cursor(); // e.g. the connection failed before the body was sent
  assert.equal(r.canReplay, true);
  const retry = r.cursor();
  src.push(bytes(5));
  src.push(null);
  assert.deepEqual(await readAll(retry), [5]);
});

Deno.test("replay body: cancel/dispose ownership", async () => {
  const src = new Feed();
  const r = ReplayBody.wrap(src)!;
  const c = r.cursor();
  src.push(bytes(5));
  await c.read();
  c.cancel(new Error("upstream reset"));
  assert.equal(src.cancelled, null, "a cursor does not cancel the original while a retry may need it");
  r.dispose(new Error("giving up"));
  assert.equal(src.cancelledMessage(), "giving up");

  const src2 = new Feed();
  const r2 = ReplayBody.wrap(src2)!;
  const live = r2.cursor();
  r2.seal();
  live.cancel(new Error("client gone"));
  assert.equal(src2.cancelledMessage(), "client gone", "after seal the live cursor owns the original");
});
