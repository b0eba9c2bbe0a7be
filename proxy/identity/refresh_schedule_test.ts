import assert from "node:assert/strict";
import { backoffDelayMs, earlyRenewalDelayMs, mustRenewEarly, refreshDelayMs } from "./refresh_schedule.ts";

const bounds = { minRefreshMs: 10_000, maxRefreshMs: 86_400_000 };
const H = 3_600_000;

Deno.test("renewal is at 70% of the remaining lifetime, jittered by ±10%", () => {
  assert.equal(refreshDelayMs(0, 10 * H, bounds, () => 0.5), 7 * H);
  assert.equal(refreshDelayMs(0, 10 * H, bounds, () => 0), Math.round(7 * H * 0.9));
  assert.equal(refreshDelayMs(0, 10 * H, bounds, () => 1), Math.round(7 * H * 1.1));
  // From the time of the answer, not the certificate's notBefore.
  assert.equal(refreshDelayMs(4 * H, 14 * H, bounds, () => 0.5), 7 * H);
});

Deno.test("renewal delay is clamped to [min, max] refresh", () => {
  assert.equal(refreshDelayMs(0, 5_000, bounds, () => 0.5), 10_000);
  assert.equal(refreshDelayMs(0, 0, bounds, () => 0.5), 10_000, "already expired: retry after min");
  assert.equal(refreshDelayMs(0, 100 * 24 * H, bounds, () => 0.5), 24 * H);
});

Deno.test("failure backoff doubles from min to max with jitter", () => {
  const b = { minMs: 100, maxMs: 60_000, jitter: 0.1 };
  assert.deepEqual([1, 2, 3, 4].map((n) => backoffDelayMs(n, b, () => 0.5)), [100, 200, 400, 800]);
  assert.equal(backoffDelayMs(20, b, () => 0.5), 60_000);
  assert.equal(backoffDelayMs(20, b, () => 1), 60_000, "never above max");
  assert.equal(backoffDelayMs(3, b, () => 0), 360);
  assert.equal(backoffDelayMs(1000, b, () => 0.5), 60_000, "no overflow for long outages");
});

Deno.test("refresh_schedule: early renewal only for a leaf issued and fetched before the renew-before time", () => {
  const t = Date.parse("2026-12-04T05:00:00Z");
  assert.equal(mustRenewEarly({ notBefore: t - 60_000, fetchedAt: t - 40_000 }, t), true);
  assert.equal(mustRenewEarly({ notBefore: t + 1_000, fetchedAt: t + 21_000 }, t), false);
  // Identity backdates notBefore by its skew allowance: a leaf fetched after the time is not renewed again.
  assert.equal(mustRenewEarly({ notBefore: t - 15_000, fetchedAt: t + 5_000 }, t), false);
});

Deno.test("refresh_schedule: the early renewal delay spreads over [0, 30 s)", () => {
  assert.equal(earlyRenewalDelayMs(() => 0), 0);
  assert.equal(earlyRenewalDelayMs(() => 0.5), 15_000);
  assert.equal(earlyRenewalDelayMs(() => 0.999999), 29_999);
});
