import assert from "node:assert/strict";
import type { PromRangeSeries } from "../../cli/prometheus.ts";
import {
  CHART_WINDOWS,
  directionSeries,
  gridEnd,
  gridFor,
  quantilePoints,
  sumPoints,
  toPoints,
  trafficPoints,
} from "./series.ts";

const g = { start: 1000, step: 10, count: 5 }; // 1000, 1010, …, 1040

Deno.test("the grid ends at now rounded down to the step and holds the window's points", () => {
  const w = CHART_WINDOWS.find((x) => x.name === "5m")!;
  const grid = gridFor(w, 1_000_007);
  assert.equal(gridEnd(grid), 1_000_000);
  assert.equal(grid.start, 1_000_000 - 300);
  assert.equal(grid.count, 31);
});

Deno.test("toPoints: samples land on their step, missing steps and NaN/+Inf are gaps", () => {
  assert.deepEqual(toPoints([[1000, 1], [1020, 3], [1030, NaN], [1040, Infinity]], g), [
    1,
    null,
    3,
    null,
    null,
  ]);
  // Off-grid and out-of-range samples are dropped rather than shifted onto a neighbour.
  assert.deepEqual(toPoints([[995, 9], [1015, 9], [1050, 9], [1011, 2]], g), [null, 2, null, null, null]);
});

Deno.test("sumPoints: a step is null only when no series has a value there", () => {
  assert.deepEqual(sumPoints([[1, null, null, 2, null], [null, null, 3, 4, null]], 5), [1, null, 3, 6, null]);
});

function series(classification: string, tls: string, values: [number, number][]): PromRangeSeries {
  return { metric: { classification, tls, namespace: "d", deployment: "web" }, values };
}

Deno.test("trafficPoints: RPS from increase over the rate window, success rate from the classifications", () => {
  const rw = 30;
  const t = trafficPoints(
    [
      series("success", "true", [[1000, 60], [1010, 30], [1030, 0]]),
      series("success", "false", [[1000, 30]]), // tls split: summed, not a second row
      series("failure", "true", [[1000, 10], [1010, 30], [1040, 0]]),
    ],
    g,
    rw,
  );
  assert.deepEqual(t.rps, [100 / rw, 60 / rw, null, 0, 0]);
  assert.deepEqual(t.success, [90 / 100, 0.5, null, null, null]);
});

Deno.test("trafficPoints: only failures is 0% success, not a gap", () => {
  const t = trafficPoints([series("failure", "true", [[1000, 3]])], g, 30);
  assert.deepEqual(t.success.slice(0, 2), [0, null]);
  assert.equal(t.rps[0], 0.1);
});

Deno.test("quantilePoints: NaN (no requests) is a gap; of split series the highest is kept", () => {
  const q = quantilePoints([
    { metric: { a: "1" }, values: [[1000, 5], [1010, NaN], [1020, 7]] },
    { metric: { a: "2" }, values: [[1000, 9], [1020, 3]] },
  ], g);
  assert.deepEqual(q, [9, null, 7, null, null]);
});

Deno.test("directionSeries: one object per direction with rps, success, p50, p95, p99 on the grid", () => {
  const d = directionSeries(
    {
      responses: [series("success", "true", [[1000, 30]])],
      p50: [{ metric: {}, values: [[1000, 1]] }],
      p95: [{ metric: {}, values: [[1000, 2]] }],
      p99: [{ metric: {}, values: [[1000, 3]] }],
    },
    g,
    30,
  );
  assert.deepEqual(Object.keys(d).sort(), ["p50", "p95", "p99", "rps", "success"]);
  for (const k of Object.keys(d) as (keyof typeof d)[]) assert.equal(d[k].length, g.count, k);
  assert.deepEqual([d.rps[0], d.success[0], d.p50[0], d.p95[0], d.p99[0]], [1, 1, 1, 2, 3]);
});
