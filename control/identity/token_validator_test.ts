import assert from "node:assert/strict";
import { Registry } from "prom-client";
import { FakeClock } from "../../proto/support/fake_clock.ts";
import { FakeReviewer, serviceAccountToken } from "./fake_reviewer.ts";
import { IdentityMetrics } from "./metrics.ts";
import {
  TokenRejected,
  TokenReviewQuotaExceeded,
  TokenReviewUnavailable,
  TokenValidator,
} from "./token_validator.ts";

const settle = () => new Promise((r) => setTimeout(r, 0));

function setup(rate: { ratePerSecond: number; burst: number; maxQueued: number }, timeoutMs = 10_000) {
  const clock = new FakeClock();
  const answers: Record<string, ReturnType<typeof serviceAccountToken>> = {};
  for (let i = 0; i < 20; i++) answers[`tok-${i}`] = serviceAccountToken("ns", `sa-${i}`);
  const reviewer = new FakeReviewer(answers);
  const registry = new Registry();
  const metrics = new IdentityMetrics(registry);
  const validator = new TokenValidator(
    reviewer,
    { audiences: ["identity.l5d.io"], rateLimit: rate, timeoutMs },
    clock,
    metrics,
  );
  return { clock, reviewer, registry, validator };
}

Deno.test("concurrent validations of the same token share one TokenReview", async () => {
  const { reviewer, registry, validator } = setup({ ratePerSecond: 100, burst: 100, maxQueued: 100 });
  reviewer.hold();
  const all = Array.from({ length: 50 }, () => validator.validate("tok-1"));
  const other = validator.validate("tok-2");
  await settle();
  assert.equal(reviewer.calls.length, 2);
  reviewer.release();
  const results = await Promise.all(all);
  assert.ok(results.every((r) => r.serviceAccount === "sa-1" && r.namespace === "ns"));
  assert.equal((await other).serviceAccount, "sa-2");
  assert.equal(validator.inflight, 0);
  assert.match(await registry.metrics(), /identity_token_reviews_coalesced_total 49/);
  // Once settled nothing is cached: the next request reviews the token again.
  await validator.validate("tok-1");
  assert.equal(reviewer.calls.length, 3);
});

Deno.test("a coalesced rejection reaches every waiter", async () => {
  const { reviewer, validator } = setup({ ratePerSecond: 100, burst: 100, maxQueued: 100 });
  reviewer.hold();
  const all = Array.from({ length: 5 }, () => validator.validate("tok-unknown"));
  await settle();
  reviewer.release();
  for (const p of all) await assert.rejects(p, TokenRejected);
  assert.equal(reviewer.calls.length, 1);
});

Deno.test("TokenReviews are rate-limited: burst, then the sustained rate, and a full queue is refused at once", async () => {
  const { clock, reviewer, registry, validator } = setup({ ratePerSecond: 1, burst: 2, maxQueued: 3 });
  const ps = Array.from({ length: 6 }, (_, i) => validator.validate(`tok-${i}`));
  ps.forEach((p) => p.catch(() => {}));
  await settle();
  assert.equal(reviewer.calls.length, 2, "the burst goes through at once");
  await assert.rejects(
    ps[5],
    (e) => e instanceof TokenReviewUnavailable && /3 requests already waiting \(limit 3\)/.test(e.message),
  );
  assert.match(await registry.metrics(), /identity_token_review_waiting 3/);
  clock.advance(999);
  await settle();
  assert.equal(reviewer.calls.length, 2);
  clock.advance(1);
  await settle();
  assert.equal(reviewer.calls.length, 3, "one more after 1s at 1/s");
  clock.advance(1000);
  await settle();
  assert.equal(reviewer.calls.length, 4);
  clock.advance(1000);
  await settle();
  assert.equal(reviewer.calls.length, 5);
  const ok = await Promise.all(ps.slice(0, 5));
  assert.deepEqual(ok.map((r) => r.serviceAccount), ["sa-0", "sa-1", "sa-2", "sa-3", "sa-4"], "FIFO order");
  assert.match(await registry.metrics(), /identity_token_reviews_total\{result="throttled"\} 1/);
});

Deno.test("a TokenReview that does not answer in time fails as unavailable", async () => {
  const { clock, reviewer, validator } = setup({ ratePerSecond: 10, burst: 10, maxQueued: 10 }, 2000);
  reviewer.hold();
  const p = validator.validate("tok-1");
  p.catch(() => {});
  await settle();
  clock.advance(2000);
  await assert.rejects(
    p,
    (e) => e instanceof TokenReviewUnavailable && /no answer within 2000ms/.test(e.message),
  );
  reviewer.release();
  assert.equal(validator.inflight, 0);
});

Deno.test("a wait for the rate limit counts against the timeout", async () => {
  const { clock, reviewer, validator } = setup({ ratePerSecond: 0.1, burst: 1, maxQueued: 10 }, 3000);
  await validator.validate("tok-0");
  const p = validator.validate("tok-1");
  p.catch(() => {});
  await settle();
  clock.advance(3000);
  await assert.rejects(
    p,
    (e) =>
      e instanceof TokenReviewUnavailable && /throttled: no rate-limit slot within 3000ms/.test(e.message),
  );
  assert.equal(reviewer.calls.length, 1);
});

Deno.test("reviews are fair-queued per client: one client's backlog is refused past its share, others go next", async () => {
  const clock = new FakeClock();
  const answers: Record<string, ReturnType<typeof serviceAccountToken>> = {};
  for (let i = 0; i < 10; i++) answers[`flood-${i}`] = serviceAccountToken("evil", "flood");
  answers["good"] = serviceAccountToken("ns", "good");
  const reviewer = new FakeReviewer(answers);
  const validator = new TokenValidator(reviewer, {
    audiences: ["identity.l5d.io"],
    rateLimit: { ratePerSecond: 1, burst: 1, maxQueued: 100 },
    maxQueuedPerClient: 3,
    timeoutMs: 60_000,
  }, clock);
  const flood = Array.from({ length: 5 }, (_, i) => validator.validate(`flood-${i}`, "evil/flood"));
  flood.forEach((p) => p.catch(() => {}));
  const good = validator.validate("good", "ns/good");
  await settle();
  assert.deepEqual(reviewer.calls.map((c) => c.token), ["flood-0"]);
  await assert.rejects(
    flood[4],
    (e) =>
      e instanceof TokenReviewQuotaExceeded &&
      e.message ===
        "TokenReview refused: 3 requests from evil/flood already waiting (limit 3 per client); retry later",
  );
  clock.advance(1000);
  await settle();
  clock.advance(1000);
  await settle();
  // flood-1 was first in line, then it is the good client's turn, ahead of flood-2 and flood-3.
  assert.deepEqual(reviewer.calls.map((c) => c.token), ["flood-0", "flood-1", "good"]);
  assert.equal((await good).serviceAccount, "good");
  validator.close();
});

Deno.test("a TokenReview that lists no audiences is refused when audiences were asked for", async () => {
  const reviewer = new FakeReviewer({
    "no-aud": { authenticated: true, username: "system:serviceaccount:ns:sa" },
    "empty-aud": { authenticated: true, username: "system:serviceaccount:ns:sa", audiences: [] },
  });
  const validator = new TokenValidator(reviewer, {
    audiences: ["identity.l5d.io"],
    rateLimit: { ratePerSecond: 10, burst: 10, maxQueued: 10 },
    timeoutMs: 1000,
  }, new FakeClock());
  for (const token of ["no-aud", "empty-aud"]) {
    await assert.rejects(
      validator.validate(token),
      (e) =>
        e instanceof TokenRejected && e.reason === "token_audience" &&
        e.message === 'TokenReview lists no audiences for the token, want ["identity.l5d.io"]',
    );
  }
  validator.close();
});

Deno.test("a client whose token the API server refused waits behind the others and leaves them the burst reserve", async () => {
  const clock = new FakeClock();
  const reviewer = new FakeReviewer({
    good: serviceAccountToken("ns", "good"),
    "evil-ok": serviceAccountToken("evil", "flood"),
  });
  const validator = new TokenValidator(reviewer, {
    audiences: ["identity.l5d.io"],
    rateLimit: { ratePerSecond: 1, burst: 2, maxQueued: 100 }, // reserve: 1 slot
    timeoutMs: 60_000,
  }, clock);
  await assert.rejects(validator.validate("evil-0", "evil/flood"), TokenRejected);
  const evil = [1, 2].map((i) => validator.validate(`evil-${i}`, "evil/flood"));
  evil.forEach((p) => p.catch(() => {}));
  await settle();
  assert.deepEqual(reviewer.calls.map((c) => c.token), ["evil-0"], "the suspect may not take the last slot");
  assert.equal((await validator.validate("good", "ns/good")).serviceAccount, "good");
  for (let i = 0; i < 4; i++) {
    clock.advance(1000);
    await settle();
  }
  assert.deepEqual(reviewer.calls.map((c) => c.token), ["evil-0", "good", "evil-1", "evil-2"]);
  for (const p of evil) await assert.rejects(p, TokenRejected);
  // A token of that client that passes review clears the suspicion.
  clock.advance(2000);
  const accepted = validator.validate("evil-ok", "evil/flood");
  await settle();
  clock.advance(1000);
  assert.equal((await accepted).serviceAccount, "flood");
  clock.advance(1000);
  await validator.validate("good", "ns/good");
  assert.equal(
    (await validator.validate("evil-ok", "evil/flood")).serviceAccount,
    "flood",
    "normal class again",
  );
  validator.close();
});

Deno.test("a client with many reviews in flight yields to the others before its answers are in", async () => {
  const clock = new FakeClock();
  const answers: Record<string, ReturnType<typeof serviceAccountToken>> = {};
  for (let i = 0; i < 10; i++) answers[`big-${i}`] = serviceAccountToken("big", "big");
  answers["small"] = serviceAccountToken("ns", "small");
  const reviewer = new FakeReviewer(answers);
  const validator = new TokenValidator(reviewer, {
    audiences: ["identity.l5d.io"],
    rateLimit: { ratePerSecond: 1, burst: 10, maxQueued: 100 }, // reserve: 5 slots
    timeoutMs: 60_000,
  }, clock);
  reviewer.hold();
  const big = Array.from({ length: 10 }, (_, i) => validator.validate(`big-${i}`, "big/big"));
  await settle();
  // 8 start from the burst; the 9th would need the reserve, so big waits while it has 8 in flight...
  assert.equal(reviewer.calls.length, 8);
  const small = validator.validate("small", "ns/small");
  await settle();
  // ...and a small client goes at once from the reserve.
  assert.equal(reviewer.calls.at(-1)?.token, "small");
  reviewer.release();
  assert.equal((await small).serviceAccount, "small");
  // The last two (low priority) wait until the bucket is back above the reserve: 6 slots at 1/s.
  for (let i = 0; i < 5; i++) {
    clock.advance(1000);
    await settle();
  }
  assert.equal(reviewer.calls.length, 10);
  clock.advance(1000);
  await settle();
  assert.equal(reviewer.calls.length, 11);
  assert.equal((await Promise.all(big)).length, 10);
  validator.close();
});
