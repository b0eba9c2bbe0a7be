import assert from "node:assert/strict";
import { FakeClock } from "../../proto/support/fake_clock.ts";
import { HttpError } from "../http/message.ts";
import { Balancer, type BalancerEvent, BalancerStats, type Lease } from "./balancer.ts";
import { seededRng } from "../core/rng.ts";

const flush = () => new Promise((r) => setTimeout(r, 0));

function endpoints(...keys: string[]): Map<string, { addr: string }> {
  return new Map(keys.map((k) => [k, { addr: k }]));
}

/** Serial requests where each endpoint answers after its own latency. */
function simulate(
  b: Balancer<{ addr: string }>,
  clock: FakeClock,
  latencyMs: Record<string, number>,
  n: number,
): Record<string, number> {
  const count: Record<string, number> = {};
  for (let i = 0; i < n; i++) {
    const l = b.pick()!;
    count[l.key] = (count[l.key] ?? 0) + 1;
    clock.advance(latencyMs[l.key]);
    l.done(true);
  }
  return count;
}

Deno.test("balancer: P2C peak-EWMA sends most requests to the fast endpoints", () => {
  const clock = new FakeClock();
  const two = new Balancer<{ addr: string }>({ clock, rng: seededRng(7) });
  two.update(endpoints("fast", "slow"));
  const c2 = simulate(two, clock, { fast: 2, slow: 40 }, 3_000);
  assert.ok(c2.fast > 2_950, `fast got ${c2.fast} of 3000: ${JSON.stringify(c2)}`);

  const three = new Balancer<{ addr: string }>({ clock, rng: seededRng(8) });
  three.update(endpoints("fast1", "fast2", "slow"));
  const c3 = simulate(three, clock, { fast1: 2, fast2: 3, slow: 40 }, 3_000);
  assert.ok((c3.slow ?? 0) < 60, `slow got ${c3.slow} of 3000: ${JSON.stringify(c3)}`);
  // fast1 wins whenever it is one of the two candidates (2/3 of picks), fast2 the rest.
  assert.ok(c3.fast1 > 1_800 && c3.fast2 > 800, JSON.stringify(c3));
});

Deno.test("balancer: equal RTTs spread evenly; pending requests steer picks away", () => {
  const clock = new FakeClock();
  const b = new Balancer<{ addr: string }>({ clock, rng: seededRng(1) });
  b.update(endpoints("a", "b"));
  const even = simulate(b, clock, { a: 10, b: 10 }, 2_000);
  assert.ok(Math.abs(even.a - even.b) < 300, JSON.stringify(even));

  // Fresh pair, same estimate: while one request is outstanding on the first pick, its cost
  // doubles and P2C (which compares both of two endpoints) sends everything to the other.
  const c = new Balancer<{ addr: string }>({ clock, rng: seededRng(4) });
  c.update(endpoints("a", "b"));
  const held = c.pick()!;
  const other = held.key === "a" ? "b" : "a";
  assert.equal(c.loadOf(held.key)!.pending, 1);
  for (let i = 0; i < 100; i++) {
    const l = c.pick()!;
    assert.equal(l.key, other);
    l.done(true);
  }
  held.done(true);
  assert.equal(c.loadOf(held.key)!.pending, 0);
  const both = new Set<string>();
  for (let i = 0; i < 50; i++) {
    const l = c.pick()!;
    both.add(l.key);
    l.done(true);
  }
  assert.equal(both.size, 2, "once released it is picked again");
});

Deno.test("balancer: updates keep unchanged endpoints' stats, swap metadata, never pick removed ones", () => {
  const clock = new FakeClock();
  const b = new Balancer<{ addr: string; zone?: string }>({ clock, rng: seededRng(3) });
  b.update(endpoints("a", "b", "c"));
  const l = b.pick()!;
  clock.advance(500);
  l.done(true);
  const statsBefore = b.loadOf(l.key)!;
  assert.equal(statsBefore.rttMs, 500);

  const changed = l.key === "a" ? "b" : "a";
  const changedBefore = b.loadOf(changed)!;
  const next = new Map<string, { addr: string; zone?: string }>(endpoints("a", "b", "c"));
  next.set(changed, { addr: changed, zone: "west" });
  b.update(next);
  assert.deepEqual(b.loadOf(changed), changedBefore, "stats survive a metadata change");
  assert.deepEqual(b.loadOf(l.key), statsBefore, "an unchanged endpoint keeps its stats");
  let seenZone = false;
  for (let i = 0; i < 200; i++) {
    const x = b.pick()!;
    if (x.key === changed) seenZone ||= x.endpoint.zone === "west";
    x.done(true);
  }
  assert.ok(seenZone, "the new metadata is what picks see");

  const removed = l.key;
  const rest = ["a", "b", "c"].filter((k) => k !== removed);
  b.update(endpoints(...rest));
  assert.equal(b.size, 2);
  assert.equal(b.stateOf(removed), undefined);
  for (let i = 0; i < 1_000; i++) {
    const x = b.pick()!;
    assert.notEqual(x.key, removed);
    x.done(true);
  }
  const kept = b.loadOf(rest[0])!;
  b.update(endpoints(...rest, "d"));
  assert.deepEqual(b.loadOf(rest[0]), kept, "adding an endpoint keeps the others' stats");
});

Deno.test("balancer: consecutive failures eject; backoff, single probe, doubling, restore", () => {
  const clock = new FakeClock();
  const events: [BalancerEvent, string, number][] = [];
  const b = new Balancer<{ addr: string }>({
    clock,
    rng: seededRng(5),
    accrual: { maxFailures: 3, backoff: { minMs: 1_000, maxMs: 8_000, jitter: 0 }, minReady: 1 },
    onEvent: (e, k) => events.push([e, k, clock.now()]),
  });
  b.update(endpoints("bad", "good"));
  const t0 = clock.now();
  const pickKey = (key: string) => {
    for (let i = 0; i < 1_000; i++) {
      const l = b.pick()!;
      if (l.key === key) return l;
      l.done(true);
    }
    throw new Error(`${key} never picked`);
  };
  // A success in between resets the count: only consecutive failures eject.
  pickKey("bad").done(false);
  pickKey("bad").done(false);
  pickKey("bad").done(true);
  pickKey("bad").done(false);
  pickKey("bad").done(false);
  assert.equal(b.stateOf("bad"), "ready");
  pickKey("bad").done(false);
  assert.equal(b.stateOf("bad"), "ejected");
  for (let i = 0; i < 200; i++) {
    const l = b.pick()!;
    assert.equal(l.key, "good");
    l.done(true);
  }
  clock.advance(999);
  assert.equal(b.stateOf("bad"), "ejected");
  clock.advance(1);
  assert.equal(b.stateOf("bad"), "probation");
  const probe = pickKey("bad");
  assert.equal(probe.probe, true);
  assert.equal(b.stateOf("bad"), "probing");
  for (let i = 0; i < 100; i++) {
    const l = b.pick()!;
    assert.equal(l.key, "good", "only one probe request is admitted");
    l.done(true);
  }
  probe.done(false);
  assert.equal(b.stateOf("bad"), "ejected");
  const tFail = clock.now();
  clock.advance(1_999);
  assert.equal(b.stateOf("bad"), "ejected", "second ejection lasts twice as long");
  clock.advance(1);
  assert.equal(b.stateOf("bad"), "probation");
  pickKey("bad").done(true);
  assert.equal(b.stateOf("bad"), "ready");
  assert.deepEqual(events, [
    ["eject", "bad", t0],
    ["probation", "bad", t0 + 1_000],
    ["eject", "bad", tFail],
    ["probation", "bad", tFail + 2_000],
    ["restore", "bad", tFail + 2_000],
  ]);
  // Healthy again: the backoff starts from the minimum next time.
  for (let i = 0; i < 3; i++) pickKey("bad").done(false);
  assert.equal(b.stateOf("bad"), "ejected");
  clock.advance(1_000);
  assert.equal(b.stateOf("bad"), "probation");
});

Deno.test("balancer: ejection backoff has jitter within [base, base·(1+ratio)] and caps at max", () => {
  const delays: number[] = [];
  for (let seed = 0; seed < 20; seed++) {
    const clock = new FakeClock();
    const b = new Balancer<{ addr: string }>({
      clock,
      rng: seededRng(seed),
      accrual: { maxFailures: 1, backoff: { minMs: 1_000, maxMs: 60_000, jitter: 0.5 }, minReady: 1 },
    });
    b.update(endpoints("x", "y"));
    for (;;) {
      const l = b.pick()!;
      if (l.key === "x") {
        l.done(false);
        break;
      }
      l.done(true);
    }
    let waited = 0;
    while (b.stateOf("x") === "ejected") {
      clock.advance(10);
      waited += 10;
    }
    delays.push(waited);
  }
  assert.ok(delays.every((d) => d >= 1_000 && d <= 1_510), JSON.stringify(delays));
  assert.ok(new Set(delays).size > 5, "jitter varies the delay");
});

Deno.test("balancer: never ejects the last ready endpoint, nor below min_ready_endpoints", () => {
  const clock = new FakeClock();
  const events: string[] = [];
  const one = new Balancer<{ addr: string }>({
    clock,
    accrual: { maxFailures: 2, backoff: { minMs: 1_000, maxMs: 1_000, jitter: 0 }, minReady: 0 },
    onEvent: (e, k) => events.push(`${e} ${k}`),
  });
  one.update(endpoints("only"));
  for (let i = 0; i < 10; i++) one.pick()!.done(false);
  assert.equal(one.stateOf("only"), "ready");
  assert.equal(events.filter((e) => e === "eject_deferred only").length, 9);

  const three = new Balancer<{ addr: string }>({
    clock,
    rng: seededRng(9),
    accrual: { maxFailures: 1, backoff: { minMs: 1_000, maxMs: 1_000, jitter: 0 }, minReady: 2 },
  });
  three.update(endpoints("a", "b", "c"));
  const failFirst = (key: string) => {
    for (;;) {
      const l = three.pick()!;
      l.done(l.key !== key);
      if (l.key === key) return;
    }
  };
  failFirst("a");
  assert.equal(three.stateOf("a"), "ejected");
  failFirst("b");
  assert.equal(three.stateOf("b"), "ready", "ejecting b would leave 1 < min_ready 2");
  assert.equal(three.readyCount, 2);
});

Deno.test("balancer queue: waits for an endpoint, fails fast after the timeout, sheds when full", async () => {
  const clock = new FakeClock();
  const b = new Balancer<{ addr: string }>({
    clock,
    name: "web.ns.svc.cluster.local:80",
    queue: { capacity: 2, failfastMs: 3_000 },
  });
  const outcome = (p: Promise<Lease<{ addr: string }>>) => {
    const o: { lease?: Lease<{ addr: string }>; error?: unknown; at?: number } = {};
    p.then((l) => (o.lease = l, o.at = clock.now()), (e) => (o.error = e, o.at = clock.now()));
    return o;
  };
  const t0 = clock.now();

  // Served as soon as an endpoint arrives.
  const early = outcome(b.acquire());
  clock.advance(1_000);
  b.update(endpoints("a"));
  await flush();
  assert.equal(early.lease?.key, "a");
  early.lease!.done(true);
  b.update(new Map());

  const first = outcome(b.acquire());
  clock.advance(2_000);
  const second = outcome(b.acquire());
  const third = outcome(b.acquire());
  await flush();
  assert.ok(third.error instanceof HttpError);
  assert.equal((third.error as HttpError).status, 503);
  assert.equal((third.error as HttpError).reason, "queue_full");
  assert.equal(third.at, t0 + 3_000, "a full queue refuses at once");

  clock.advance(999);
  await flush();
  assert.ok(first.error === undefined, "still waiting");
  clock.advance(1);
  await flush();
  // The first waiter waited the whole failfast timeout (3 s), the second the rest of it.
  for (const o of [first, second]) {
    const e = o.error as HttpError;
    assert.ok(e instanceof HttpError);
    assert.deepEqual([e.status, e.reason, e.grpcStatus], [503, "no_endpoints", 14]);
    assert.equal(o.at, t0 + 4_000);
  }
  assert.match((first.error as unknown as Error).message, /web\.ns\.svc\.cluster\.local:80/);
  assert.equal(b.failingFast, true);

  const during = outcome(b.acquire());
  await flush();
  assert.equal((during.error as HttpError).reason, "no_endpoints");
  assert.equal(during.at, t0 + 4_000, "in failfast new requests fail at once");

  b.update(endpoints("b"));
  assert.equal(b.failingFast, false);
  const after = outcome(b.acquire());
  await flush();
  assert.equal(after.lease?.key, "b");
});

Deno.test("balancer queue: an aborted waiter leaves the queue with the signal's reason", async () => {
  const clock = new FakeClock();
  const b = new Balancer<{ addr: string }>({ clock, queue: { capacity: 1, failfastMs: 3_000 } });
  const ac = new AbortController();
  const p = b.acquire(ac.signal);
  assert.equal(b.waiting, 1);
  ac.abort(new Error("client went away"));
  await assert.rejects(p, /client went away/);
  assert.equal(b.waiting, 0);
  // The slot is free again.
  const q = b.acquire();
  assert.equal(b.waiting, 1);
  b.update(endpoints("a"));
  assert.equal((await q).key, "a");
  assert.equal(clock.pendingTimers, 0, "no failfast timer left behind");
});

Deno.test("balancer queue: 'failfast' when endpoints exist but none becomes available", async () => {
  const clock = new FakeClock();
  const b = new Balancer<{ addr: string }>({
    clock,
    rng: seededRng(2),
    queue: { capacity: 10, failfastMs: 1_000 },
    accrual: { maxFailures: 1, backoff: { minMs: 5_000, maxMs: 5_000, jitter: 0 }, minReady: 1 },
  });
  b.update(endpoints("a", "b"));
  for (;;) {
    const l = b.pick()!;
    l.done(l.key !== "a");
    if (l.key === "a") break;
  }
  assert.equal(b.stateOf("a"), "ejected");
  b.update(endpoints("a")); // "b" leaves discovery; "a" stays ejected
  const p = b.acquire();
  clock.advance(1_000);
  await assert.rejects(p, (e: HttpError) => e.status === 503 && e.reason === "failfast");
  clock.advance(4_000);
  assert.equal(b.stateOf("a"), "probation");
  const l = await b.acquire();
  assert.equal(l.probe, true);
});

Deno.test("balancer stats: queue requests and latency, failfast gate, endpoint updates; shared per label set", async () => {
  const clock = new FakeClock();
  const stats = new BalancerStats();
  const b = new Balancer<{ addr: string }>({ clock, queue: { capacity: 10, failfastMs: 1_000 }, stats });
  assert.equal(stats.gateOpens, 1, "a new balancer's gate starts open");
  assert.ok(stats.gateOpenTime > 0 && stats.gateShutTime === 0);
  assert.equal(stats.gateTimeout, 1);

  // Two requests wait 0.2 s for the first endpoint; a third is served at once.
  const waiting = [b.acquire(), b.acquire()];
  assert.equal(stats.queueRequests, 2);
  clock.advance(200);
  b.update(endpoints("a", "b"));
  (await Promise.all(waiting)).forEach((l) => l.done(true));
  b.pick()!.done(true);
  assert.equal(stats.queueRequests, 3);
  assert.equal(stats.updatesAdd, 2);
  // Buckets 0.0005, 0.005, 0.05, 0.5, 1, 3, +Inf: one at once, two at 0.2 s.
  assert.deepEqual(stats.queueLatency, [1, 0, 0, 2, 0, 0, 0]);
  assert.ok(Math.abs(stats.queueLatencySum - 0.4) < 1e-9);

  // No endpoint: a waiter is failed by failfast after 1 s, which shuts the gate; requests in failfast are
  // refused at once and never enter the queue (Linkerd's shut gate sheds them before the queue).
  b.update(endpoints());
  assert.equal(stats.updatesRemove, 2);
  const failed = b.acquire();
  clock.advance(1_000);
  await assert.rejects(failed, (e: HttpError) => e.reason === "no_endpoints");
  assert.equal(stats.gateShuts, 1);
  assert.ok(stats.gateShutTime > 0 && stats.gateOpenTime === 0);
  await assert.rejects(b.acquire());
  assert.equal(stats.queueRequests, 4);
  assert.equal(stats.queueLatency[4], 1, "the failed waiter waited 1 s");
  // An endpoint reopens the gate; a changed value counts as an add, an unchanged one does not.
  b.update(endpoints("a"));
  assert.equal(stats.gateOpens, 2);
  assert.ok(stats.gateOpenTime > 0 && stats.gateShutTime === 0);
  b.update(new Map([["a", { addr: "a2" }]]));
  assert.equal(stats.updatesAdd, 4);

  // A rebuilt balancer with the same stats keeps counting; closing it does not count a shut gate.
  b.close();
  assert.equal(stats.gateShuts, 1);
  const again = new Balancer<{ addr: string }>({ clock, stats });
  again.update(endpoints("a"));
  again.pick()!.done(true);
  assert.equal(stats.queueRequests, 5);
  assert.equal(stats.gateOpens, 3);
  again.close();
});

Deno.test("an unreachable endpoint leaves rotation until it is reachable again; waiters get it back", async () => {
  const b = new Balancer<string>({ rng: seededRng(7), queue: { capacity: 10, failfastMs: 60_000 } });
  b.update(new Map([["a", "A"], ["b", "B"]]));
  b.setReachable("a", false);
  for (let i = 0; i < 50; i++) {
    const l = b.pick()!;
    assert.equal(l.key, "b");
    l.done(true);
  }
  b.setReachable("b", false);
  assert.equal(b.pick(), undefined, "no endpoint is reachable");
  const waiting = b.acquire(undefined);
  b.setReachable("a", true);
  assert.equal((await waiting).key, "a");
  // An endpoint already known to be down starts out of rotation.
  b.reachability = (k) => k === "c";
  b.update(new Map([["a", "A"], ["b", "B"], ["c", "C"]]));
  for (let i = 0; i < 30; i++) {
    const l = b.pick()!;
    assert.equal(l.key, "a");
    l.done(true);
  }
  b.close();
});

Deno.test("reachability and failure accrual compose: an ejected endpoint that comes back reachable stays ejected", () => {
  const clock = new FakeClock();
  const b = new Balancer<string>({
    rng: seededRng(3),
    clock,
    accrual: { maxFailures: 1, backoff: { minMs: 1000, maxMs: 1000, jitter: 0 }, minReady: 1 },
  });
  b.update(new Map([["a", "A"], ["b", "B"]]));
  // Eject "a" by one failure.
  for (let i = 0; i < 20; i++) {
    const l = b.pick()!;
    l.done(l.key !== "a");
    if (l.key === "a") break;
  }
  b.setReachable("a", false);
  b.setReachable("a", true);
  for (let i = 0; i < 20; i++) assert.equal(b.pick()!.key, "b", "an ejected endpoint came back early");
  b.close();
});
