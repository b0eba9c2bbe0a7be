import assert from "node:assert/strict";
import { Registry } from "prom-client";
import { FakeClock } from "../../proto/support/fake_clock.ts";
import { FakeLeaseStore } from "./fake_lease_api.ts";
import { LeaderElector, microTime } from "./leader_election.ts";

const START = Date.UTC(2026, 0, 1);

function elector(store: FakeLeaseStore, clock: FakeClock, identity: string, registry?: Registry) {
  const events: boolean[] = [];
  const api = store.api();
  const e = new LeaderElector({
    api,
    clock,
    lease: "weft-test",
    namespace: "weft",
    identity,
    registry,
    random: () => 0,
  });
  e.onChange((l) => events.push(l));
  return { e, events, api };
}

async function flush(): Promise<void> {
  for (let i = 0; i < 5; i++) await new Promise((r) => setTimeout(r, 0));
}

/** Advances the fake clock in 100 ms steps, letting the electors' promises run in between. */
async function run(clock: FakeClock, ms: number): Promise<void> {
  await flush();
  for (let t = 0; t < ms; t += 100) {
    clock.advance(100);
    await flush();
  }
}

Deno.test("microTime has microseconds", () => {
  assert.equal(microTime(Date.UTC(2026, 0, 1, 0, 0, 0, 123)), "2026-01-01T00:00:00.123000Z");
});

Deno.test("the first candidate creates the Lease and leads at once", async () => {
  const store = new FakeLeaseStore();
  const clock = new FakeClock(START);
  const registry = new Registry();
  const { e, events } = elector(store, clock, "pod-a", registry);
  const ctl = new AbortController();
  const done = e.start(ctl.signal);
  await flush();
  assert.equal(e.isLeader(), true);
  assert.deepEqual(events, [true]);
  assert.equal(store.calls, 2); // one GET (404) and one create: no waiting
  const spec = store.lease!.spec!;
  assert.equal(spec.holderIdentity, "pod-a");
  assert.equal(spec.leaseDurationSeconds, 15);
  assert.equal(spec.leaseTransitions, 0);
  assert.equal(spec.acquireTime, "2026-01-01T00:00:00.000000Z");
  assert.match(await registry.getSingleMetricAsString("weft_leader"), /weft_leader\{lease="weft-test"\} 1/);
  ctl.abort();
  await done;
  assert.match(await registry.getSingleMetricAsString("weft_leader"), /weft_leader\{lease="weft-test"\} 0/);
});

Deno.test("the leader renews every retryPeriod, keeping acquireTime and transitions", async () => {
  const store = new FakeLeaseStore();
  const clock = new FakeClock(START);
  const { e } = elector(store, clock, "pod-a");
  const ctl = new AbortController();
  const done = e.start(ctl.signal);
  await run(clock, 6_000);
  const spec = store.lease!.spec!;
  assert.equal(spec.acquireTime, microTime(START));
  assert.equal(spec.renewTime, microTime(START + 6_000));
  assert.equal(spec.leaseTransitions, 0);
  assert.equal(e.isLeader(), true);
  ctl.abort();
  await done;
});

Deno.test("a follower waits while the lease is renewed and takes over after it expires", async () => {
  const store = new FakeLeaseStore();
  const clock = new FakeClock(START);
  const a = elector(store, clock, "pod-a");
  const b = elector(store, clock, "pod-b");
  const ctlA = new AbortController();
  const ctlB = new AbortController();
  const doneA = a.e.start(ctlA.signal);
  await flush();
  const doneB = b.e.start(ctlB.signal);
  await run(clock, 30_000);
  assert.equal(a.e.isLeader(), true);
  assert.equal(b.e.isLeader(), false);
  assert.equal(b.e.holder(), "pod-a");
  // pod-a is cut off (as a crash: no more renewals, no release); it steps down at its renew deadline.
  a.api.hang = true;
  a.api.ignoreAbort = true;
  const crashedAt = clock.now();
  let tookOverAt = 0;
  b.e.onChange((l) => l && (tookOverAt = clock.now()));
  await run(clock, 20_000);
  assert.equal(b.e.isLeader(), true);
  assert.equal(a.e.isLeader(), false);
  const waited = tookOverAt - crashedAt;
  assert.ok(waited >= 13_000 && waited <= 15_000 + 2_000 + 400, `took over after ${waited}ms`);
  assert.equal(store.lease!.spec!.holderIdentity, "pod-b");
  assert.equal(store.lease!.spec!.leaseTransitions, 1);
  assert.equal(store.lease!.spec!.acquireTime, microTime(tookOverAt));
  ctlA.abort();
  ctlB.abort();
  await Promise.all([doneA, doneB]);
});

Deno.test("a conflict while renewing makes the leader step down at once", async () => {
  const store = new FakeLeaseStore();
  const clock = new FakeClock(START);
  const { e, events } = elector(store, clock, "pod-a");
  const ctl = new AbortController();
  const done = e.start(ctl.signal);
  await flush();
  assert.equal(e.isLeader(), true);
  // Someone else writes the Lease (e.g. took it over after a long pause of this process).
  const now = microTime(clock.now());
  store.set({
    ...store.lease!,
    spec: { ...store.lease!.spec, holderIdentity: "pod-x", renewTime: now, acquireTime: now },
  });
  await run(clock, 2_000);
  assert.equal(e.isLeader(), false);
  assert.deepEqual(events, [true, false]);
  // pod-x renews: pod-a stays a follower.
  for (let i = 0; i < 5; i++) {
    store.set({ ...store.lease!, spec: { ...store.lease!.spec, renewTime: microTime(clock.now()) } });
    await run(clock, 2_000);
    assert.equal(e.isLeader(), false);
  }
  assert.equal(e.holder(), "pod-x");
  ctl.abort();
  await done;
  assert.equal(store.lease!.spec!.holderIdentity, "pod-x"); // not ours to release
});

Deno.test("two candidates racing for a free Lease: exactly one leads", async () => {
  const store = new FakeLeaseStore();
  const clock = new FakeClock(START);
  const ctl = new AbortController();
  const all = ["pod-a", "pod-b", "pod-c"].map((id) => elector(store, clock, id));
  const done = all.map((x) => x.e.start(ctl.signal));
  for (let i = 0; i < 50; i++) {
    await run(clock, 500);
    assert.equal(all.filter((x) => x.e.isLeader()).length, 1);
  }
  ctl.abort();
  await Promise.all(done);
});

Deno.test("on abort the leader releases the Lease and a follower takes over on its next attempt", async () => {
  const store = new FakeLeaseStore();
  const clock = new FakeClock(START);
  const a = elector(store, clock, "pod-a");
  const b = elector(store, clock, "pod-b");
  const ctlA = new AbortController();
  const ctlB = new AbortController();
  const doneA = a.e.start(ctlA.signal);
  await flush();
  const doneB = b.e.start(ctlB.signal);
  await run(clock, 5_000);
  ctlA.abort();
  await doneA;
  assert.equal(a.e.isLeader(), false);
  assert.deepEqual(a.events, [true, false]);
  assert.equal(store.lease!.spec!.holderIdentity, "");
  assert.equal(store.lease!.spec!.leaseDurationSeconds, 1);
  const releasedAt = clock.now();
  let tookOverAt = 0;
  b.e.onChange((l) => l && (tookOverAt = clock.now()));
  await run(clock, 3_000);
  assert.equal(b.e.isLeader(), true);
  assert.ok(tookOverAt - releasedAt <= 2_000, `took over after ${tookOverAt - releasedAt}ms`);
  assert.equal(store.lease!.spec!.leaseTransitions, 1); // the release keeps the count
  ctlB.abort();
  await doneB;
});

Deno.test("an unreachable API: the leader steps down by the renew deadline", async () => {
  const store = new FakeLeaseStore();
  const clock = new FakeClock(START);
  const { e, events, api } = elector(store, clock, "pod-a");
  const ctl = new AbortController();
  const done = e.start(ctl.signal);
  await run(clock, 4_000);
  const lastRenew = Date.parse(store.lease!.spec!.renewTime!);
  api.failWith = new Error("connection refused");
  await run(clock, 7_000);
  assert.equal(e.isLeader(), true, "still within the deadline");
  await run(clock, 3_000);
  assert.equal(e.isLeader(), false);
  assert.ok(clock.now() - lastRenew <= 10_100);
  assert.deepEqual(events, [true, false]);
  // The API comes back: the Lease is still ours, so it leads again.
  api.failWith = undefined;
  await run(clock, 3_000);
  assert.equal(e.isLeader(), true);
  ctl.abort();
  await done;
});

Deno.test("a slow API that never answers: the leader steps down by the renew deadline", async () => {
  const store = new FakeLeaseStore();
  const clock = new FakeClock(START);
  const { e, api } = elector(store, clock, "pod-a");
  const ctl = new AbortController();
  const done = e.start(ctl.signal);
  await run(clock, 2_000);
  const lastRenew = Date.parse(store.lease!.spec!.renewTime!);
  api.hang = true;
  api.ignoreAbort = true;
  let lostAt = 0;
  e.onChange((l) => !l && (lostAt = clock.now()));
  await run(clock, 12_000);
  assert.equal(e.isLeader(), false);
  assert.equal(lostAt - lastRenew, 10_000);
  ctl.abort();
  await done;
});

Deno.test("renewDeadline must be shorter than leaseDuration", () => {
  assert.throws(() =>
    new LeaderElector({
      api: new FakeLeaseStore().api(),
      clock: new FakeClock(),
      lease: "x",
      namespace: "y",
      identity: "z",
      leaseDurationSeconds: 10,
      renewDeadlineSeconds: 10,
    })
  );
});
