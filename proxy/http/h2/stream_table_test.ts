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
