/** The stream table against a Map, through growth, wrap-around runs and deletions in any order. */
import assert from "node:assert/strict";
import { StreamTable } from "./stream_table.ts";

Deno.test("StreamTable: agrees with a Map over random opens and closes of growing stream ids", () => {
  const t = new StreamTable<string>();
  const m = new Map<number, string>();
  let next = 1;
  let seed = 7;
  const rand = (n: number) => {
    seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
    return seed % n;
  };
  for (let step = 0; step < 50_000; step++) {
    const open = [...m.keys()];
    if (open.length === 0 || rand(3) > 0 && open.length < 300) {
      next += 2 * (1 + rand(3));
      t.set(next, `s${next}`);
      m.set(next, `s${next}`);
    } else {
      const id = open[rand(open.length)];
      assert.equal(t.delete(id), true);
      m.delete(id);
    }
    if (step % 997 === 0) {
      assert.equal(t.size, m.size);
      for (const [id, v] of m) assert.equal(t.get(id), v);
      assert.equal(t.get(next + 2), undefined);
      assert.equal(t.delete(next + 2), false);
      assert.deepEqual(t.values().sort(), [...m.values()].sort());
    }
  }
  t.clear();
  assert.equal(t.size, 0);
  assert.deepEqual(t.values(), []);
  assert.equal(t.get(next), undefined);
});

Deno.test("StreamTable: set on an id already there replaces its value without growing the count", () => {
  const t = new StreamTable<number>();
  t.set(3, 1);
  t.set(3, 2);
  assert.equal(t.size, 1);
  assert.equal(t.get(3), 2);
});

Deno.test("hostile: stream ids a peer picks to share low or high bits do not pile up in one run", () => {
  // A peer controls its stream ids (odd, growing). Ids spaced by a power of two all share their low
  // bits; ids spaced by a large power of two share everything but the top bits. With the table's
  // per-instance multiplier neither set lands in one place; the session's 250-stream limit keeps
  // the table at 512 slots, so a run near that length would make every lookup walk it.
  const sets = [
    Array.from({ length: 250 }, (_, i) => 1 + i * 1024),
    Array.from({ length: 250 }, (_, i) => 1 + i * (1 << 22)),
    Array.from({ length: 250 }, (_, i) => 1 + 2 * i),
  ];
  for (const ids of sets) {
    for (let table = 0; table < 20; table++) {
      const t = new StreamTable<number>();
      for (const id of ids) t.set(id, id);
      assert.equal(t.size, ids.length);
      const run = t.longestRun();
      assert.ok(run <= 64, `longest run ${run} of 512 slots for ids spaced ${ids[1] - ids[0]}`);
      // Well-behaved lookups still find every stream and miss what is not there.
      for (const id of ids) assert.equal(t.get(id), id);
      assert.equal(t.get(ids[ids.length - 1] + 2), undefined);
    }
  }
});
