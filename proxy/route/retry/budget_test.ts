import assert from "node:assert/strict";
import { FakeClock } from "../../../proto/support/fake_clock.ts";
import { msDuration } from "../../core/duration.ts";
import { DEFAULT_RETRY_BUDGET, RetryBudget, retryBudgetConfig } from "./budget.ts";

const drain = (b: RetryBudget) => {
  let n = 0;
  while (b.withdraw()) n++;
  return n;
};

Deno.test("retry budget: reserve of min_retries_per_second × ttl without traffic", () => {
  const b = new RetryBudget(DEFAULT_RETRY_BUDGET, new FakeClock());
  assert.equal(b.available, 100);
  assert.equal(drain(b), 100);
  assert.equal(b.withdraw(), false);
});

Deno.test("retry budget: each request deposits retry_ratio of a retry; withdrawals expire after ttl", () => {
  const clock = new FakeClock();
  const b = new RetryBudget({ ttlMs: 10_000, minRetriesPerSecond: 0, retryRatio: 0.2 }, clock);
  assert.equal(b.withdraw(), false, "no reserve, no requests: no retries");
  for (let i = 0; i < 1_000; i++) b.deposit();
  assert.equal(b.available, 200);
  assert.equal(drain(b), 200);
  clock.advance(5_000);
  for (let i = 0; i < 100; i++) b.deposit();
  assert.equal(b.available, 20);
  clock.advance(5_000); // the first deposits and the withdrawals against them expire together
  assert.equal(b.available, 20);
  clock.advance(5_000);
  assert.equal(b.available, 0, "everything expired");
});

Deno.test("retry budget: withdrawals against the reserve come back after ttl (min retries per second)", () => {
  const clock = new FakeClock();
  const b = new RetryBudget({ ttlMs: 2_000, minRetriesPerSecond: 5, retryRatio: 0 }, clock);
  assert.equal(drain(b), 10);
  clock.advance(1_000);
  assert.equal(b.withdraw(), false);
  clock.advance(1_000);
  assert.equal(drain(b), 10);
});

Deno.test("retry budget: ratio above 1 allows several retries per request; validation as Linkerd", () => {
  const b = new RetryBudget({ ttlMs: 1_000, minRetriesPerSecond: 0, retryRatio: 3 }, new FakeClock());
  b.deposit();
  assert.equal(drain(b), 3);
  assert.throws(
    () => new RetryBudget({ ttlMs: 61_000, minRetriesPerSecond: 1, retryRatio: 0.1 }, new FakeClock()),
    /ttl/,
  );
  assert.throws(
    () => new RetryBudget({ ttlMs: 10_000, minRetriesPerSecond: 1, retryRatio: 1001 }, new FakeClock()),
    /ratio/,
  );
  assert.deepEqual(
    retryBudgetConfig({ retryRatio: 0.5, minRetriesPerSecond: 3, ttl: msDuration(5_000) }),
    { ttlMs: 5_000, minRetriesPerSecond: 3, retryRatio: 0.5 },
  );
  assert.throws(
    () => retryBudgetConfig({ retryRatio: 0.5, minRetriesPerSecond: 3, ttl: undefined }),
    /no ttl/,
  );
});
