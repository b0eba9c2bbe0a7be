import assert from "node:assert/strict";
import { FakeClock } from "../../proto/support/fake_clock.ts";
import { FairQueue, QueueFullError } from "./fair_queue.ts";
import { RateLimitedError, RateLimiter } from "./rate_limiter.ts";

const settle = () => new Promise((r) => setTimeout(r, 0));

function setup(maxPerKey: number, maxTotal: number, rate = { ratePerSecond: 1, burst: 1 }) {
  const clock = new FakeClock();
  const limiter = new RateLimiter({ ...rate, maxQueued: 1 }, clock);
  const queue = new FairQueue({ maxPerKey, maxTotal }, limiter, clock);
  const order: string[] = [];
  const enqueue = (key: string, label = key, signal?: AbortSignal) => {
    const p = queue.acquire(key, signal).then(() => {
      order.push(label);
    });
    p.catch(() => {});
    return p;
  };
  return { clock, limiter, queue, order, enqueue };
}

Deno.test("when idle a request goes through at once, without queueing", async () => {
  const { queue, order, enqueue } = setup(2, 10, { ratePerSecond: 1, burst: 3 });
  await enqueue("a");
  await enqueue("b");
  await enqueue("a");
  assert.deepEqual(order, ["a", "b", "a"]);
  assert.equal(queue.queued, 0);
});

Deno.test("keys take turns: a flooding key's backlog does not delay a newcomer by more than one turn", async () => {
  const { clock, queue, order, enqueue } = setup(10, 100);
  await enqueue("flood", "flood-0"); // the one burst slot
  for (let i = 1; i <= 6; i++) enqueue("flood", `flood-${i}`);
  enqueue("good", "good-0");
  enqueue("other", "other-0");
  enqueue("good", "good-1");
  assert.equal(queue.queued, 9);
  assert.equal(queue.keys, 3);
  for (let i = 0; i < 9; i++) {
    clock.advance(1000);
    await settle();
  }
  assert.deepEqual(order, [
    "flood-0",
    "flood-1",
    "good-0",
    "other-0",
    "flood-2",
    "good-1",
    "flood-3",
    "flood-4",
    "flood-5",
    "flood-6",
  ]);
  assert.equal(queue.queued, 0);
  assert.equal(queue.keys, 0);
});

Deno.test("a key past its bound is refused at once, and other keys still queue", async () => {
  const { clock, queue, order, enqueue } = setup(3, 100);
  await enqueue("flood", "f0");
  const queued = [1, 2, 3].map((i) => enqueue("flood", `f${i}`));
  await assert.rejects(
    queue.acquire("flood"),
    (e) =>
      e instanceof QueueFullError && e.scope === "client" &&
      e.message === "3 requests from flood already waiting (limit 3 per client)",
  );
  const good = enqueue("good");
  for (let i = 0; i < 2; i++) {
    clock.advance(1000);
    await settle();
  }
  await good;
  assert.deepEqual(order, ["f0", "f1", "good"]);
  for (let i = 0; i < 2; i++) {
    clock.advance(1000);
    await settle();
  }
  await Promise.all(queued);
  assert.deepEqual(order, ["f0", "f1", "good", "f2", "f3"]);
});

Deno.test("all keys together are bounded", async () => {
  const { queue, enqueue } = setup(5, 4);
  await enqueue("k0");
  for (let i = 1; i <= 4; i++) enqueue(`k${i}`);
  await assert.rejects(
    queue.acquire("k5"),
    (e) =>
      e instanceof QueueFullError && e.scope === "all" &&
      /4 requests already waiting \(limit 4\)/.test(e.message),
  );
  assert.equal(queue.queued, 4);
  queue.close();
});

Deno.test("an aborted waiter leaves its queue, and a slot nobody takes is given back", async () => {
  const { clock, limiter, queue, order, enqueue } = setup(5, 10);
  await enqueue("a", "a0");
  const ctrl = new AbortController();
  const gone = enqueue("b", "b0", ctrl.signal);
  assert.equal(queue.queued, 1);
  ctrl.abort(new Error("deadline"));
  await assert.rejects(gone, /deadline/);
  assert.equal(queue.queued, 0);
  assert.equal(queue.keys, 0);
  clock.advance(1000);
  await settle();
  // The pump's slot came back: the next caller goes straight through.
  assert.equal(limiter.tryAcquire(), true);
  assert.deepEqual(order, ["a0"]);
});

Deno.test("close refuses every waiter", async () => {
  const { queue, enqueue } = setup(5, 10);
  await enqueue("a");
  const waiting = [enqueue("a"), enqueue("b")];
  queue.close();
  for (const p of waiting) await assert.rejects(p, RateLimitedError);
  await assert.rejects(queue.acquire("c"), RateLimitedError);
  assert.equal(queue.queued, 0);
});

Deno.test("low-priority keys go after every other key and leave the reserve of the burst alone", async () => {
  const clock = new FakeClock();
  const limiter = new RateLimiter({ ratePerSecond: 1, burst: 4, maxQueued: 1 }, clock);
  const queue = new FairQueue({ maxPerKey: 10, maxTotal: 100, lowPriorityReserve: 2 }, limiter, clock);
  const order: string[] = [];
  const enqueue = (key: string, label: string, low = false) => {
    const p = queue.acquire(key, undefined, low).then(() => {
      order.push(label);
    });
    p.catch(() => {});
    return p;
  };
  // A suspect key may spend the burst only down to the reserve: 2 of 4 slots.
  for (let i = 0; i < 4; i++) enqueue("suspect", `s${i}`, true);
  await settle();
  assert.deepEqual(order, ["s0", "s1"]);
  // The reserve is there for a normal key at once, even with the suspect's backlog queued.
  await enqueue("good", "g0");
  await enqueue("other", "o0");
  assert.deepEqual(order, ["s0", "s1", "g0", "o0"]);
  // With the bucket empty, normal keys are served first as slots come...
  enqueue("good", "g1");
  enqueue("good", "g2");
  for (let i = 0; i < 2; i++) {
    clock.advance(1000);
    await settle();
  }
  assert.deepEqual(order.slice(4), ["g1", "g2"]);
  // ...and the suspect only once nobody else waits and the reserve has refilled.
  for (let i = 0; i < 3; i++) {
    clock.advance(1000);
    await settle();
  }
  assert.deepEqual(order.slice(6), ["s2"]);
  for (let i = 0; i < 1; i++) {
    clock.advance(1000);
    await settle();
  }
  assert.deepEqual(order.slice(6), ["s2", "s3"]);
  assert.equal(queue.queued, 0);
});
