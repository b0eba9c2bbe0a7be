import assert from "node:assert/strict";
import { FakeClock } from "../../../proto/support/fake_clock.ts";
import { msDuration } from "../../core/duration.ts";
import { NO_TIMEOUTS, routeTimeouts, StreamTimer, TimeoutError } from "./timeouts.ts";

Deno.test("route timeouts: from Timeouts, with the deprecated requestTimeout as fallback; 0 = none", () => {
  assert.deepEqual(
    routeTimeouts(
      { request: msDuration(1_500), response: msDuration(200), idle: msDuration(0) },
      msDuration(9_000),
      "r",
    ),
    { requestMs: 1_500, responseMs: 200 },
  );
  assert.deepEqual(routeTimeouts(undefined, msDuration(9_000), "r"), { requestMs: 9_000 });
  assert.equal(routeTimeouts(undefined, undefined, "r"), NO_TIMEOUTS);
  assert.throws(
    () => routeTimeouts({ request: { seconds: -1n, nanos: 0 } }, undefined, "rule 2"),
    /rule 2 timeouts.request/,
  );
});

Deno.test("stream timer: fires once with a TimeoutError; parent aborts pass through; clear stops all", () => {
  const clock = new FakeClock();
  const t = new StreamTimer(clock, undefined);
  t.arm("response_headers", 100);
  t.arm("response_headers", 10); // already armed: unchanged
  clock.advance(99);
  assert.equal(t.signal.aborted, false);
  clock.advance(1);
  assert.ok(t.signal.reason instanceof TimeoutError);
  assert.equal((t.signal.reason as TimeoutError).kind, "response_headers");
  assert.equal(clock.pendingTimers, 0);

  const parent = new AbortController();
  const child = new StreamTimer(clock, parent.signal);
  child.arm("request", 1_000);
  parent.abort(new Error("client went away"));
  assert.equal((child.signal.reason as Error).message, "client went away");
  child.clear();
  assert.equal(clock.pendingTimers, 0);

  const idle = new StreamTimer(clock, undefined);
  idle.idle(100);
  clock.advance(60);
  idle.touch();
  clock.advance(60);
  assert.equal(idle.signal.aborted, false, "activity at 60 ms moved the deadline to 160 ms");
  clock.advance(40);
  assert.equal((idle.signal.reason as TimeoutError).kind, "idle");
});
