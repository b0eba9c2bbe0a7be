import assert from "node:assert/strict";
import { FakeClock } from "../../proto/support/fake_clock.ts";
import { LocalRateLimit, localRateLimit } from "./local_rate_limit.ts";

const A = "a.ns.serviceaccount.identity.linkerd.cluster.local";
const B = "b.ns.serviceaccount.identity.linkerd.cluster.local";
const VIP = "vip.ns.serviceaccount.identity.linkerd.cluster.local";

function burst(l: LocalRateLimit, id: string | undefined, n: number): number {
  let ok = 0;
  for (let i = 0; i < n; i++) if (l.check(id) === undefined) ok++;
  return ok;
}

Deno.test("local rate limit: per-identity buckets hold rps tokens and refill rps per second", () => {
  const clock = new FakeClock();
  const l = new LocalRateLimit({ identityRps: 5 }, clock);
  assert.equal(burst(l, A, 10), 5);
  assert.equal(burst(l, B, 10), 5, "each identity has its own bucket");
  assert.deepEqual(l.check(A), { scope: "identity", rps: 5 });
  clock.advance(400);
  assert.equal(burst(l, A, 10), 2, "0.4 s refills 2 tokens");
  assert.equal(burst(l, undefined, 10), 5);
  assert.equal(burst(l, undefined, 10), 0, "clients without identity share one bucket");
});

Deno.test("local rate limit: the total bucket applies first; overrides replace the per-identity limit", () => {
  const clock = new FakeClock();
  const l = localRateLimit({
    metadata: undefined,
    total: { requestsPerSecond: 20 },
    identity: { requestsPerSecond: 2 },
    overrides: [{ limit: { requestsPerSecond: 8 }, clients: { identities: [{ name: VIP }] } }],
  }, clock)!;
  assert.equal(burst(l, A, 5), 2);
  assert.equal(burst(l, VIP, 10), 8);
  assert.deepEqual(l.check(VIP), { scope: "override", rps: 8 });
  assert.equal(burst(l, B, 20), 2);
  // 2 + 8 + 1 refused VIP + 2 + 18 refused B: the total bucket (20) has been drawn down by all of them.
  assert.deepEqual(l.check(undefined), { scope: "total", rps: 20 });
  assert.equal(localRateLimit({ metadata: undefined, overrides: [] }, clock), undefined);
});
