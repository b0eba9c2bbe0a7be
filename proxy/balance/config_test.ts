import assert from "node:assert/strict";
import { msDuration } from "../core/duration.ts";
import { balancerBackend } from "../route/testing.ts";
import { DEFAULT_QUEUE } from "./balancer.ts";
import { failureAccrualConfig, peakEwmaConfig, queueConfig } from "./config.ts";

Deno.test("balancer config from policy: peak EWMA, queue, consecutive-failure accrual with defaults", () => {
  const b = balancerBackend("web");
  assert.deepEqual(peakEwmaConfig(b), { defaultRttMs: 30, decayMs: 10_000 });
  assert.deepEqual(queueConfig(b), { capacity: 100, failfastMs: 3_000 });
  assert.deepEqual(queueConfig({ ...b, queue: undefined }), DEFAULT_QUEUE);
  assert.deepEqual(
    failureAccrualConfig({
      kind: {
        $case: "consecutiveFailures",
        value: {
          maxFailures: 5,
          backoff: {
            minBackoff: msDuration(500),
            maxBackoff: msDuration(10_000),
            jitterRatio: 0.25,
            respectRetryAfterHint: false,
          },
        },
      },
      ejection: undefined,
    }),
    { maxFailures: 5, backoff: { minMs: 500, maxMs: 10_000, jitter: 0.25 }, minReady: 0 },
  );
  assert.equal(failureAccrualConfig(undefined), undefined);
  assert.equal(failureAccrualConfig({ kind: undefined, ejection: undefined }), undefined);
  assert.throws(
    () =>
      failureAccrualConfig({
        kind: {
          $case: "consecutiveFailures",
          value: {
            maxFailures: 5,
            backoff: {
              minBackoff: msDuration(5_000),
              maxBackoff: msDuration(1_000),
              jitterRatio: 0,
              respectRetryAfterHint: false,
            },
          },
        },
      }),
    /max_backoff 1000 ms is below min_backoff 5000 ms/,
  );
});
