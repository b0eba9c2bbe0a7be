import assert from "node:assert/strict";
import { FakeClock } from "../../proto/support/fake_clock.ts";
import { EndpointReachability } from "./reachability.ts";

const backoff = { minMs: 100, maxMs: 400, jitter: 0 };
const tick = () => new Promise((r) => setTimeout(r, 0));

Deno.test("a failed endpoint is down until a background probe connects; listeners see both transitions", async () => {
  const clock = new FakeClock();
  let answer = false;
  const probes: string[] = [];
  const r = new EndpointReachability({
    clock,
    backoff,
    probe: (ip, port) => {
      probes.push(`${ip}:${port}`);
      return Promise.resolve(answer);
    },
  });
  const seen: boolean[] = [];
  r.watch("10.0.0.1:8080", (up) => seen.push(up));
  r.failed("10.0.0.1:8080", "10.0.0.1", 4143);
  r.failed("10.0.0.1:8080", "10.0.0.1", 4143); // already down: no second probe loop
  assert.equal(r.isDown("10.0.0.1:8080"), true);
  assert.deepEqual(seen, [false]);
  // Backoff 100, 200, 400, 400 … ms; each probe goes to the connect address (the peer's inbound port).
  for (const ms of [100, 200, 400]) {
    clock.advance(ms);
    await tick();
  }
  assert.deepEqual(probes, ["10.0.0.1:4143", "10.0.0.1:4143", "10.0.0.1:4143"]);
  assert.equal(r.isDown("10.0.0.1:8080"), true);
  answer = true;
  clock.advance(400);
  await tick();
  assert.equal(r.isDown("10.0.0.1:8080"), false);
  assert.deepEqual(seen, [false, true]);
  assert.equal(r.downCount, 0);
  r.close();
});

Deno.test("a request's own successful connect brings the endpoint back and stops the probes", async () => {
  const clock = new FakeClock();
  let probes = 0;
  const r = new EndpointReachability({ clock, backoff, probe: () => (probes++, Promise.resolve(false)) });
  r.failed("a", "10.0.0.2", 80);
  r.succeeded("a");
  assert.equal(r.isDown("a"), false);
  clock.advance(10_000);
  await tick();
  assert.equal(probes, 0);
  assert.equal(clock.pendingTimers, 0);
  r.close();
});

Deno.test("an endpoint unreachable for longer than forgetAfterMs is forgotten (no probing for ever)", async () => {
  const clock = new FakeClock();
  let probes = 0;
  const r = new EndpointReachability({
    clock,
    backoff,
    forgetAfterMs: 1000,
    probe: () => (probes++, Promise.resolve(false)),
  });
  const seen: boolean[] = [];
  r.watch("gone", (up) => seen.push(up));
  r.failed("gone", "10.0.0.3", 80);
  for (let i = 0; i < 10; i++) {
    clock.advance(400);
    await tick();
  }
  assert.equal(r.isDown("gone"), false);
  assert.deepEqual(seen, [false, true]);
  const after = probes;
  clock.advance(10_000);
  await tick();
  assert.equal(probes, after, "still probing a forgotten endpoint");
  r.close();
});
