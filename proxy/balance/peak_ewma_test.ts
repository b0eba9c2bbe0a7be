import assert from "node:assert/strict";
import { DEFAULT_PEAK_EWMA, PeakEwma } from "./peak_ewma.ts";

const close = (a: number, b: number, eps = 1e-9) => assert.ok(Math.abs(a - b) < eps, `${a} ≉ ${b}`);

Deno.test("peak EWMA: starts at the default RTT (30 ms) with Linkerd's 10 s decay", () => {
  assert.deepEqual(DEFAULT_PEAK_EWMA, { defaultRttMs: 30, decayMs: 10_000 });
  const e = new PeakEwma(DEFAULT_PEAK_EWMA, 0);
  assert.equal(e.cost(0), 30);
});

Deno.test("peak EWMA: a slower observation raises the estimate at once", () => {
  const e = new PeakEwma(DEFAULT_PEAK_EWMA, 0);
  e.observe(250, 1);
  assert.equal(e.rttMs, 250);
  assert.equal(e.cost(1), 250);
});

Deno.test("peak EWMA: faster observations pull the estimate down by the decay weight", () => {
  const e = new PeakEwma({ defaultRttMs: 100, decayMs: 1_000 }, 0);
  e.observe(10, 1_000); // one time constant later: weight e^-1 on the old estimate
  close(e.rttMs, 100 * Math.exp(-1) + 10 * (1 - Math.exp(-1)));
  const before = e.rttMs;
  e.observe(10, 1_000); // no time elapsed: the old estimate keeps all its weight
  close(e.rttMs, before);
});

Deno.test("peak EWMA: an idle estimate decays toward zero, and pending requests multiply the cost", () => {
  const e = new PeakEwma({ defaultRttMs: 100, decayMs: 1_000 }, 0);
  close(e.cost(2_000), 100 * Math.exp(-2));
  e.pending = 3;
  close(e.cost(2_000), 100 * Math.exp(-2) * 4);
});
