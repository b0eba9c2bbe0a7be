import assert from "node:assert/strict";
import { formatSpread, spread } from "./spread.ts";

Deno.test("spread: median of odd and even counts, range, NaN left out", () => {
  assert.deepEqual(spread("x", [5, 1, 3]), { median: 3, min: 1, max: 5, n: 3 });
  assert.deepEqual(spread("x", [4, 1, 3, 10]), { median: 3.5, min: 1, max: 10, n: 4 });
  assert.deepEqual(spread("x", [NaN, 2, 8]), { median: 5, min: 2, max: 8, n: 2 });
});

Deno.test("spread: nothing measured is an error naming the figure", () => {
  assert.throws(() => spread("overview paint", [NaN]), /no measurements of overview paint/);
});

Deno.test("formatSpread: median, range and count", () => {
  assert.equal(formatSpread({ median: 412.4, min: 380, max: 455.6, n: 5 }, "ms"), "412 ms (380–456, n=5)");
  assert.equal(formatSpread({ median: 10, min: 9, max: 12, n: 3 }, ""), "10 (9–12, n=3)");
});
