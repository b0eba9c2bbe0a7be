// The chart geometry the pages draw with (assets/lib/chart_math.js, plain JS served to the browser).
import assert from "node:assert/strict";
import { lastValue, linePath, niceMax, timeTicks } from "./assets/lib/chart_math.js";

const box = { x: 0, y: 0, width: 100, height: 50 };

Deno.test("niceMax: 1, 2 or 5 × 10^n at or above the largest value; 1 when there is none", () => {
  assert.equal(niceMax([0.3, null, 0.7]), 1);
  assert.equal(niceMax([12]), 20);
  assert.equal(niceMax([45, 3]), 50);
  assert.equal(niceMax([100]), 100);
  assert.equal(niceMax([null, null]), 1);
  assert.equal(niceMax([0]), 1);
});

Deno.test("linePath: one run per stretch without gaps, scaled to the box (y grows downwards)", () => {
  assert.equal(linePath([0, 10, 5], box, 10), "M0 50 L50 0 L100 25");
  // A gap ends the run; the next value starts a new one with M.
  assert.equal(linePath([0, null, 10, 10, 10], box, 10), "M0 50 L12.5 50 M50 0 L75 0 L100 0");
});

Deno.test("linePath: a lone point between gaps is a short dash, still two points to draw", () => {
  const d = linePath([null, 5, null], box, 10);
  assert.match(d, /^M50 25 L\d+(\.\d)? 25$/);
});

Deno.test("linePath: values above the axis maximum or below zero are clipped to the box", () => {
  assert.equal(linePath([-1, 20], box, 10), "M0 50 L100 0");
  assert.equal(linePath([], box, 10), "");
  assert.equal(linePath([null, null], box, 10), "");
});

Deno.test("timeTicks: evenly spaced indices including both ends; lastValue skips trailing gaps", () => {
  const t = timeTicks(0, 10, 31, 4);
  assert.deepEqual(t.map((x: { i: number }) => x.i), [0, 10, 20, 30]);
  assert.deepEqual(timeTicks(0, 10, 1), []);
  assert.equal(lastValue([1, 2, null]), 2);
  assert.equal(lastValue([null]), null);
});
