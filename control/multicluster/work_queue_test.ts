import assert from "node:assert/strict";
import { WorkQueue } from "./work_queue.ts";

async function until(cond: () => boolean, ms = 2000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error("timed out");
    await new Promise((r) => setTimeout(r, 5));
  }
}

Deno.test("work queue: keys are de-duplicated, failures retried with backoff, then given up", async () => {
  const seen: string[] = [];
  const errors: [string, number, boolean][] = [];
  let failB = 2;
  const q = new WorkQueue({
    maxSize: 10,
    maxRetries: 3,
    backoff: { initialMs: 5, maxMs: 20 },
    process: (k) => {
      seen.push(k);
      if (k === "b" && failB-- > 0) return Promise.reject(new Error("boom"));
      if (k === "c") return Promise.reject(new Error("always"));
      return Promise.resolve();
    },
    onError: (k, _e, attempt, retry) => errors.push([k, attempt, retry]),
  });
  q.add("a");
  q.add("a");
  q.add("b");
  q.add("c");
  const stop = new AbortController();
  const running = q.run(stop.signal);
  await until(() => q.idle() && errors.filter(([k]) => k === "c").length === 4);
  assert.equal(seen.filter((k) => k === "a").length, 1);
  assert.equal(seen.filter((k) => k === "b").length, 3);
  assert.deepEqual(errors.filter(([k]) => k === "c").map(([, a, r]) => [a, r]), [[1, true], [2, true], [
    3,
    true,
  ], [4, false]]);
  stop.abort();
  await running;
});

Deno.test("work queue: a full queue drops keys and asks for a resync once drained", async () => {
  let overflows = 0;
  let release!: () => void;
  const gate = new Promise<void>((r) => release = r);
  const done: string[] = [];
  const q = new WorkQueue({
    maxSize: 2,
    maxRetries: 0,
    backoff: { initialMs: 1, maxMs: 1 },
    process: async (k) => {
      await gate;
      done.push(k);
    },
    onOverflow: () => overflows++,
  });
  const stop = new AbortController();
  const running = q.run(stop.signal);
  q.add("1");
  await until(() => q.depth === 0); // "1" is being processed
  q.add("2");
  q.add("3");
  q.add("4"); // dropped
  assert.equal(q.dropped, 1);
  release();
  await until(() => overflows === 1 && q.idle());
  assert.deepEqual(done, ["1", "2", "3"]);
  stop.abort();
  await running;
});
