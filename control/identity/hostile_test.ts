/**
 * Attacks on the identity controller through the real grpc-js server over 127.0.0.1, with
 * TokenReviews sent by KubeTokenReviewer over HTTP to an API-server stand-in.
 */
import assert from "node:assert/strict";
import { percentile, runCertifyScenario } from "./certify_scenario.ts";

Deno.test("hostile: one client flooding junk tokens does not delay others", async () => {
  // The flooder keeps 64 calls open over 8 connections, 32 of them sending tokens that need a
  // review. Reviews are the bottleneck here (20/s): the queue of all clients holds 24 and one
  // client's share is 8, so with one shared FIFO (no per-client bound) the flood alone would fill
  // it and the well-behaved proxies would be refused as throttled.
  const r = await runCertifyScenario({
    proxies: 8,
    certifiesPerProxy: 8,
    proxyIntervalMs: 0,
    floodConcurrency: 64,
    floodConnections: 8,
    floodMaxCalls: 100_000,
    floodLeadMs: 300,
    reviewLatencyMs: 10,
    validator: {
      rateLimit: { ratePerSecond: 20, burst: 4, maxQueued: 24 },
      maxQueuedPerClient: 8,
      timeoutMs: 10_000,
    },
  });
  const flood = r.flood!;
  console.log(
    `well-behaved: ${r.goodLatenciesMs.length} Certify calls, p50 ${
      percentile(r.goodLatenciesMs, 50).toFixed(1)
    } ms, ` +
      `p99 ${percentile(r.goodLatenciesMs, 99).toFixed(1)} ms; flooder: ${flood.calls} calls ` +
      `${JSON.stringify(flood.byCode)} ${JSON.stringify(flood.byProblem)}; ` +
      `TokenReviews sent ${r.apiReviews} (at most ${r.apiMaxInFlight} at once)`,
  );
  assert.deepEqual(r.goodErrors, [], "every well-behaved Certify succeeds");
  assert.equal(r.goodLatenciesMs.length, 8 * 8);
  assert.equal(flood.byCode.OK ?? 0, 0, "the flooder gets no certificate");
  // The flood was real: it was refused by the cheap checks, by its TokenReviews, and past its
  // share of the queue (refused at once, not made to wait).
  for (const problem of ["token is not a JWT", "token audience", "token expired", "CSR is not valid DER"]) {
    assert.ok(
      (flood.byProblem[problem] ?? 0) > 0,
      `no "${problem}" refusals: ${JSON.stringify(flood.byProblem)}`,
    );
  }
  assert.ok(
    (flood.byProblem["token is not authenticated"] ?? 0) > 0,
    "some flood tokens were reviewed and refused",
  );
  assert.ok((flood.byCode.RESOURCE_EXHAUSTED ?? 0) > 0, "the flooder ran past its share of the review queue");
  assert.equal(flood.byProblem["TokenReview throttled"] ?? 0, 0, "the queue of all clients never filled");
  // Only reviews cost the API server: the cheap refusals never reached it.
  const cheap = ["token is not a JWT", "token audience", "token expired", "CSR is not valid DER"]
    .reduce((n, p) => n + (flood.byProblem[p] ?? 0), 0);
  assert.ok(
    r.apiReviews <= flood.calls - cheap + 8 * 8,
    `${r.apiReviews} reviews for ${flood.calls} flood calls`,
  );
  assert.match(r.metrics, /identity_certificates_rejected_total\{reason="token_review_client_quota"\} [1-9]/);
  assert.match(r.metrics, /identity_certificates_rejected_total\{reason="token_malformed"\} [1-9]/);
});
