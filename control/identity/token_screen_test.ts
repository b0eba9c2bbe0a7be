import assert from "node:assert/strict";
import { TokenRejected } from "./token_validator.ts";
import { screenToken, type TokenScreenOptions } from "./token_screen.ts";
import { fakeJwt, serviceAccountJwt } from "./test_tokens.ts";

const NOW = Date.UTC(2026, 0, 1, 12);
const OPTS: TokenScreenOptions = { audiences: ["identity.l5d.io"], skewMs: 20_000, maxBytes: 4096 };
const sec = (ms: number) => Math.floor(ms / 1000);

function refusal(token: string, now = NOW): { reason: string; message: string } {
  try {
    screenToken(token, now, OPTS);
  } catch (e) {
    assert.ok(e instanceof TokenRejected, `not a TokenRejected: ${e}`);
    return { reason: e.reason, message: e.message };
  }
  assert.fail("token was accepted");
}

Deno.test("a projected ServiceAccount token passes and yields its claimed ServiceAccount", () => {
  assert.deepEqual(screenToken(serviceAccountJwt("ns-a", "sa-a", {}, NOW), NOW, OPTS), {
    namespace: "ns-a",
    serviceAccount: "sa-a",
  });
  // A single-string aud is allowed (RFC 7519 §4.1.3).
  const single = serviceAccountJwt("ns-a", "sa-a", { aud: "identity.l5d.io" }, NOW);
  assert.equal(screenToken(single, NOW, OPTS)?.serviceAccount, "sa-a");
});

Deno.test("junk of every shape is refused as malformed, naming the problem", () => {
  const cases: [string, RegExp][] = [
    ["opaque", /^token is not a JWT \(1 part, want 3\)$/],
    ["a.b", /^token is not a JWT \(2 parts, want 3\)$/],
    ["a.b.c.d.e", /^token is not a JWT \(5 parts, want 3\)$/],
    [".e30.c2ln", /^token header is not base64url$/],
    ["e30.e30.", /^token signature is empty or not base64url$/],
    ["e30x.e30.c2ln", /^token header is not base64url-encoded JSON$/],
    ["e30.W10.c2ln", /^token payload is not a JSON object$/], // []
    ["e30.bnVsbA.c2ln", /^token payload is not a JSON object$/], // null
    ["e30.e30.c2ln", /^token header alg null is not a signature algorithm$/],
    ["eyJhbGciOiJub25lIn0.e30.c2ln", /^token header alg "none" is not a signature algorithm$/],
    ["e30.//8.c2ln", /^token payload is not base64url$/],
    ["e30._-8.c2ln", /^token payload is not base64url-encoded JSON$/], // invalid UTF-8
    [fakeJwt({ exp: "soon", aud: ["identity.l5d.io"] }), /^token "exp" is not a number$/],
    ["x".repeat(5000), /^token is 5000 bytes, over the 4096-byte limit$/],
  ];
  for (const [token, want] of cases) {
    const r = refusal(token);
    assert.equal(r.reason, "token_malformed", `${token.slice(0, 30)}: ${r.reason} ${r.message}`);
    assert.match(r.message, want);
  }
});

Deno.test("expiry and not-before are checked with the skew allowance", () => {
  const exp = NOW - 60_000;
  const expired = serviceAccountJwt("ns", "sa", { exp: sec(exp) }, NOW - 3_600_000);
  assert.deepEqual(refusal(expired), {
    reason: "token_expired",
    message: `token expired at ${new Date(exp).toISOString()}`,
  });
  // Within the skew, a just-expired token still passes (the TokenReview has the last word).
  const justExpired = serviceAccountJwt("ns", "sa", { exp: sec(NOW - 10_000) }, NOW - 3_600_000);
  assert.equal(screenToken(justExpired, NOW, OPTS)?.namespace, "ns");
  assert.equal(refusal(justExpired, NOW + 10_000).reason, "token_expired");
  assert.deepEqual(refusal(serviceAccountJwt("ns", "sa", { exp: undefined }, NOW)), {
    reason: "token_expired",
    message: "token has no expiry (exp)",
  });

  const nbf = NOW + 60_000;
  const future = serviceAccountJwt("ns", "sa", { nbf: sec(nbf) }, NOW);
  assert.deepEqual(refusal(future), {
    reason: "token_not_yet_valid",
    message: `token is not valid before ${new Date(nbf).toISOString()}`,
  });
  const slightlyFuture = serviceAccountJwt("ns", "sa", { nbf: sec(NOW + 10_000) }, NOW);
  assert.equal(screenToken(slightlyFuture, NOW, OPTS)?.serviceAccount, "sa");
});

Deno.test("a token for another audience, or for none, is refused as token_audience", () => {
  assert.deepEqual(refusal(serviceAccountJwt("ns", "sa", { aud: ["https://kubernetes.default.svc"] }, NOW)), {
    reason: "token_audience",
    message: 'token audience ["https://kubernetes.default.svc"] does not include "identity.l5d.io"',
  });
  assert.deepEqual(refusal(serviceAccountJwt("ns", "sa", { aud: [] }, NOW)), {
    reason: "token_audience",
    message: 'token audience [] does not include "identity.l5d.io"',
  });
  assert.deepEqual(refusal(serviceAccountJwt("ns", "sa", { aud: undefined }, NOW)), {
    reason: "token_audience",
    message: 'token has no audience (aud), want "identity.l5d.io"',
  });
  assert.equal(refusal(serviceAccountJwt("ns", "sa", { aud: [7] }, NOW)).reason, "token_audience");
});

Deno.test("a token whose subject is not a ServiceAccount is refused", () => {
  for (const sub of ["alice", "system:node:n1", "system:serviceaccount::sa", undefined]) {
    const r = refusal(serviceAccountJwt("ns", "sa", { sub }, NOW));
    assert.equal(r.reason, "token_not_serviceaccount", `${sub}`);
    assert.match(r.message, /^token subject ".*" is not a ServiceAccount$/);
  }
});
