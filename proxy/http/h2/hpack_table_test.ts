/** HPACK tables: the static table's shape, ring-buffer eviction, and the encoder's lookup maps. */
import assert from "node:assert/strict";
import {
  DynamicTable,
  EncoderTable,
  STATIC_BY_NAME,
  STATIC_LENGTH,
  STATIC_NAMES,
  STATIC_VALUES,
} from "./hpack_table.ts";

Deno.test("static table: 61 entries, RFC 7541 Appendix A spot checks and lookups", () => {
  assert.equal(STATIC_LENGTH, 61);
  assert.equal(STATIC_NAMES.length, 62);
  assert.deepEqual([STATIC_NAMES[1], STATIC_VALUES[1]], [":authority", ""]);
  assert.deepEqual([STATIC_NAMES[16], STATIC_VALUES[16]], ["accept-encoding", "gzip, deflate"]);
  assert.deepEqual([STATIC_NAMES[61], STATIC_VALUES[61]], ["www-authenticate", ""]);
  assert.equal(STATIC_BY_NAME.get(":status")?.index, 8, "a name's first index");
  assert.equal(STATIC_BY_NAME.get(":status")?.values.get("404"), 13);
  assert.equal(STATIC_BY_NAME.get(":path")?.values.get("/index.html"), 5);
  assert.equal(STATIC_BY_NAME.get("user-agent")?.values.get(""), 58, "an empty value matches fully");
  assert.equal(STATIC_BY_NAME.get("te"), undefined);
});

Deno.test("DynamicTable: newest first, FIFO eviction, wrap-around and growth", () => {
  const t = new DynamicTable(4096);
  for (let i = 0; i < 100; i++) t.add("n", `${i}`.padStart(3, "0")); // 36 octets each
  assert.equal(t.length, 100);
  assert.equal(t.value(0), "099");
  assert.equal(t.value(99), "000");
  for (let i = 100; i < 1000; i++) t.add("n", `${i}`.padStart(3, "0"));
  // 4096 / 36 = 113 entries fit.
  assert.equal(t.length, 113);
  assert.equal(t.size, 113 * 36);
  assert.equal(t.value(0), "999");
  assert.equal(t.value(112), "887");
  t.setMaxSize(36 * 3);
  assert.deepEqual([t.length, t.value(0), t.value(2)], [3, "999", "997"]);
  t.add("x", "y".repeat(200)); // larger than the table: empties it, is not added
  assert.deepEqual([t.length, t.size], [0, 0]);
  t.setMaxSize(0);
  t.add("a", "b");
  assert.equal(t.length, 0);
});

Deno.test("EncoderTable: the maps hold exactly the live entries, newest per pair and name", () => {
  const t = new EncoderTable(500);
  let seed = 5;
  const rnd = (n: number) => (seed = (seed * 1103515245 + 12345) & 0x7fffffff) % n;
  for (let i = 0; i < 20000; i++) {
    if (rnd(500) === 0) t.setMaxSize([0, 100, 500][rnd(3)]);
    t.add(`n${rnd(6)}`, `v${rnd(i % 2 === 0 ? 5 : 100000)}`);
    // Every live entry is found at its own index unless a newer identical one shadows it.
    const newestPair = new Map<string, number>();
    const newestName = new Map<string, number>();
    for (let d = t.length - 1; d >= 0; d--) {
      newestPair.set(`${t.name(d)}\0${t.value(d)}`, t.inserted - 1 - d);
      newestName.set(t.name(d), t.inserted - 1 - d);
    }
    let pairs = 0;
    for (const [name, e] of t.byName) {
      assert.equal(newestName.get(name), e.id, `name ${name} at step ${i}`);
      for (const [value, id] of e.values) {
        assert.equal(newestPair.get(`${name}\0${value}`), id, `${name}: ${value} at step ${i}`);
        pairs++;
      }
    }
    assert.equal(pairs, newestPair.size, `no stale or missing pairs at step ${i}`);
    assert.equal(t.byName.size, newestName.size);
  }
});
