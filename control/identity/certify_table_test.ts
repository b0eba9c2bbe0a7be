import assert from "node:assert/strict";
import * as grpc from "@grpc/grpc-js";
import { Registry } from "prom-client";
import { type CertifyResponse, IdentityClient } from "../../proto/gen/identity.ts";
import { systemClock } from "../../proto/support/clock.ts";
import { FakeReviewer, serviceAccountToken } from "./fake_reviewer.ts";
import { serveIdentityGrpc } from "./grpc_server.ts";
import type { Issuer } from "./issuer.ts";
import { IdentityMetrics } from "./metrics.ts";
import { CertifyService } from "./service.ts";
import { csrFor, identityOf, makeCa, makeCsr, TEST_CERTIFY_CONFIG, testTokenScreen } from "./test_pki.ts";
import { TokenValidator } from "./token_validator.ts";
import { DEFAULT_TOKEN_MAX_BYTES } from "./token_screen.ts";
import { serviceAccountJwt } from "./test_tokens.ts";
import { x509 } from "../../proto/support/x509.ts";

const A = identityOf("sa-a", "ns-a");

/** Names used in the tables below → the JWT sent; other strings are sent as they are. */
const TOKENS: Record<string, string> = {
  "tok-a": serviceAccountJwt("ns-a", "sa-a"),
  "tok-b": serviceAccountJwt("ns-b", "sa-b"),
  "tok-unauth": serviceAccountJwt("ns-a", "sa-a"),
  "tok-aud": serviceAccountJwt("ns-a", "sa-a"),
  "tok-user": serviceAccountJwt("ns-a", "sa-a"),
  "tok-review-no-aud": serviceAccountJwt("ns-a", "sa-a"),
  "tok-nope": serviceAccountJwt("ns-a", "sa-a"),
  "tok-api-down": serviceAccountJwt("ns-a", "sa-a"),
  "tok-expired": serviceAccountJwt("ns-a", "sa-a", { exp: Math.floor(Date.now() / 1000) - 3600 }),
  "tok-no-exp": serviceAccountJwt("ns-a", "sa-a", { exp: undefined }),
  "tok-future": serviceAccountJwt("ns-a", "sa-a", { nbf: Math.floor(Date.now() / 1000) + 3600 }),
  "tok-other-aud": serviceAccountJwt("ns-a", "sa-a", { aud: ["https://kubernetes.default.svc"] }),
  "tok-no-aud": serviceAccountJwt("ns-a", "sa-a", { aud: undefined }),
  "tok-not-sa": serviceAccountJwt("ns-a", "sa-a", { sub: "alice" }),
  "tok-huge": serviceAccountJwt("ns-a", "sa-a", { pad: "x".repeat(DEFAULT_TOKEN_MAX_BYTES) }),
};
const jwtOf = (name: string) => TOKENS[name] ?? name;

function reviewerOf(answers: Record<string, ConstructorParameters<typeof FakeReviewer>[0][string]>) {
  return new FakeReviewer(Object.fromEntries(Object.entries(answers).map(([k, v]) => [jwtOf(k), v])));
}

async function startServer(issuer: () => Issuer | undefined, reviewer: FakeReviewer) {
  const registry = new Registry();
  const metrics = new IdentityMetrics(registry);
  const validator = new TokenValidator(
    reviewer,
    {
      audiences: ["identity.l5d.io"],
      rateLimit: { ratePerSecond: 1000, burst: 1000, maxQueued: 1000 },
      timeoutMs: 5000,
    },
    systemClock,
    metrics,
  );
  const service = new CertifyService({
    config: TEST_CERTIFY_CONFIG,
    issuer,
    screenToken: testTokenScreen(),
    validateToken: (t, client) => validator.validate(t, client),
    clock: systemClock,
    metrics,
  });
  const server = await serveIdentityGrpc({ service, registry, address: "127.0.0.1:0" });
  const client = new IdentityClient(`127.0.0.1:${server.port}`, grpc.credentials.createInsecure());
  const certify = (identity: string, token: string, csr: Uint8Array) =>
    new Promise<{ err: grpc.ServiceError | null; res?: CertifyResponse }>((resolve) =>
      client.certify(
        { identity, token: new TextEncoder().encode(jwtOf(token)), certificateSigningRequest: csr },
        (err, res) => resolve({ err, res }),
      )
    );
  return {
    certify,
    registry,
    close: async () => {
      client.close();
      await server.close(100);
      validator.close();
    },
  };
}

Deno.test("Certify refuses each bad CSR or token with its status and a message naming the problem, and keeps serving", async () => {
  const ca = await makeCa();
  const reviewer = reviewerOf({
    "tok-a": serviceAccountToken("ns-a", "sa-a"),
    "tok-b": serviceAccountToken("ns-b", "sa-b"),
    "tok-unauth": {
      authenticated: false,
      error: "[invalid bearer token, square/go-jose: error in cryptographic primitive]",
    },
    "tok-aud": {
      authenticated: false,
      error:
        '[invalid bearer token, token audiences ["kubernetes"] is invalid for the target audiences ["identity.l5d.io"]]',
    },
    "tok-user": { authenticated: true, username: "alice", audiences: ["identity.l5d.io"] },
    "tok-review-no-aud": { authenticated: true, username: "system:serviceaccount:ns-a:sa-a" },
    "tok-api-down": new Error("connect ECONNREFUSED 10.96.0.1:443"),
  });
  const srv = await startServer(() => ca.issuer, reviewer);
  const good = (await csrFor(A)).der;
  const badSig = good.slice();
  badSig[badSig.length - 1] ^= 0x01;
  const { INVALID_ARGUMENT: IA, FAILED_PRECONDITION: FP, UNAVAILABLE: UN } = grpc.status;
  const cases: [string, string, string, Uint8Array | Promise<Uint8Array>, grpc.status, RegExp][] = [
    ["no identity", "", "tok-a", good, IA, /^Cannot issue certificate: request has no identity$/],
    ["no token", A, "", good, IA, /request has no token$/],
    ["no CSR", A, "tok-a", new Uint8Array(), IA, /request has no certificate signing request$/],
    [
      "CSR not DER",
      A,
      "tok-a",
      new TextEncoder().encode("-----BEGIN CERTIFICATE REQUEST-----"),
      FP,
      /CSR is not valid DER PKCS#10: CertificationRequest: expected tag 0x30/,
    ],
    [
      "truncated CSR",
      A,
      "tok-a",
      good.slice(0, 100),
      FP,
      /CSR is not valid DER PKCS#10: .*runs past its container/,
    ],
    [
      "wrong SAN",
      A,
      "tok-a",
      makeCsr({ cn: A, names: [{ type: "dns", value: identityOf("x", "ns-a") }] }).then((c) => c.der),
      FP,
      /CSR DNS name "x\.ns-a\.serviceaccount\.identity\.linkerd\.cluster\.local" is not the requested identity/,
    ],
    [
      "two SANs",
      A,
      "tok-a",
      makeCsr({ cn: A, names: [{ type: "dns", value: A }, { type: "dns", value: "b.example" }] }).then((c) =>
        c.der
      ),
      FP,
      /^Cannot issue certificate for "sa-a\.ns-a\.serviceaccount\.identity\.linkerd\.cluster\.local": CSR has 2 DNS names, want 1$/,
    ],
    ["no SAN", A, "tok-a", makeCsr({ cn: A }).then((c) => c.der), FP, /CSR has 0 DNS names, want 1/],
    [
      "IP SAN",
      A,
      "tok-a",
      makeCsr({ cn: A, names: [{ type: "dns", value: A }, { type: "ip", value: "10.0.0.1" }] }).then((c) =>
        c.der
      ),
      FP,
      /CSR has 1 IP address SAN\(s\), want none/,
    ],
    [
      "email SAN",
      A,
      "tok-a",
      makeCsr({ names: [{ type: "dns", value: A }, { type: "email", value: "a@b.c" }] }).then((c) => c.der),
      FP,
      /CSR has 1 email SAN\(s\), want none/,
    ],
    [
      "URI SAN",
      A,
      "tok-a",
      makeCsr({ names: [{ type: "dns", value: A }, { type: "url", value: "spiffe://x/y" }] }).then((c) =>
        c.der
      ),
      FP,
      /CSR has 1 URI SAN\(s\), want none/,
    ],
    [
      "other CN",
      A,
      "tok-a",
      makeCsr({ cn: "someone.else", names: [{ type: "dns", value: A }] }).then((c) => c.der),
      FP,
      /CSR common name "someone\.else" must be empty or the requested identity/,
    ],
    [
      "RSA key",
      A,
      "tok-a",
      makeCsr({
        cn: A,
        names: [{ type: "dns", value: A }],
        keyAlg: {
          name: "RSASSA-PKCS1-v1_5",
          modulusLength: 2048,
          publicExponent: new Uint8Array([1, 0, 1]),
          hash: "SHA-256",
        },
      }).then((c) => c.der),
      FP,
      /CSR key is RSA, want ECDSA P-256/,
    ],
    [
      "P-384 key",
      A,
      "tok-a",
      makeCsr({
        cn: A,
        names: [{ type: "dns", value: A }],
        keyAlg: { name: "ECDSA", namedCurve: "P-384" },
        signAlg: { name: "ECDSA", hash: "SHA-384" } as Algorithm,
      }).then((c) => c.der),
      FP,
      /CSR key is ECDSA on P-384, want ECDSA P-256/,
    ],
    ["bad signature", A, "tok-a", badSig, FP, /CSR signature does not verify with its public key/],
    [
      "token of another ServiceAccount",
      A,
      "tok-b",
      good,
      FP,
      /token is for ServiceAccount ns-b\/sa-b, whose identity is "sa-b\.ns-b\.serviceaccount\.identity\.linkerd\.cluster\.local"/,
    ],
    [
      "unauthenticated token",
      A,
      "tok-unauth",
      good,
      FP,
      /token is not authenticated for audience "identity\.l5d\.io": \[invalid bearer token/,
    ],
    [
      "wrong audience",
      A,
      "tok-aud",
      good,
      FP,
      /token audiences \["kubernetes"\] is invalid for the target audiences/,
    ],
    ["token of a user", A, "tok-user", good, FP, /token belongs to "alice", which is not a ServiceAccount/],
    [
      "review lists no audiences",
      A,
      "tok-review-no-aud",
      good,
      FP,
      /TokenReview lists no audiences for the token, want \["identity\.l5d\.io"\]/,
    ],
    ["unknown token", A, "tok-nope", good, FP, /token is not authenticated/],
    // Refused by the cheap checks, before any TokenReview:
    ["opaque token", A, "not-a-jwt", good, FP, /: token is not a JWT \(1 part, want 3\)$/],
    ["two-part token", A, "a.b", good, FP, /token is not a JWT \(2 parts, want 3\)$/],
    ["header not JSON", A, "e30x.e30.c2ln", good, FP, /token header is not base64url-encoded JSON$/],
    ["payload not base64url", A, "e30.e3+0.c2ln", good, FP, /token payload is not base64url$/],
    ["alg none", A, "eyJhbGciOiJub25lIn0.e30.c2ln", good, FP, /token header alg "none" is not a signature/],
    ["expired token", A, "tok-expired", good, FP, /: token expired at 20\d\d-/],
    ["token without exp", A, "tok-no-exp", good, FP, /: token has no expiry \(exp\)$/],
    ["token not yet valid", A, "tok-future", good, FP, /: token is not valid before 20\d\d-/],
    [
      "token for another audience",
      A,
      "tok-other-aud",
      good,
      FP,
      /: token audience \["https:\/\/kubernetes\.default\.svc"\] does not include "identity\.l5d\.io"$/,
    ],
    [
      "token without aud",
      A,
      "tok-no-aud",
      good,
      FP,
      /: token has no audience \(aud\), want "identity\.l5d\.io"$/,
    ],
    [
      "token of no ServiceAccount",
      A,
      "tok-not-sa",
      good,
      FP,
      /token subject "alice" is not a ServiceAccount$/,
    ],
    ["oversized token", A, "tok-huge", good, FP, /: token is \d+ bytes, over the 16384-byte limit$/],
    ["API server down", A, "tok-api-down", good, UN, /TokenReview failed: connect ECONNREFUSED/],
  ];
  try {
    for (const [name, identity, token, csr, code, message] of cases) {
      const { err, res } = await srv.certify(identity, token, await csr);
      assert.ok(err, `${name}: expected an error, got a certificate`);
      assert.equal(err.code, code, `${name}: status ${grpc.status[err.code]}: ${err.details}`);
      assert.match(err.details, message, `${name}: ${err.details}`);
      assert.equal(res, undefined);
      // After each refusal a good request still succeeds.
      const ok = await srv.certify(A, "tok-a", good);
      assert.equal(ok.err, null, `after "${name}": ${ok.err?.details}`);
    }
    // Audience is passed to every TokenReview.
    assert.ok(reviewer.calls.every((c) => c.audiences.length === 1 && c.audiences[0] === "identity.l5d.io"));
    // Tokens refused by the cheap checks, and bad CSRs, never cost a TokenReview.
    const reviewed = new Set(reviewer.calls.map((c) => c.token));
    for (const name of ["tok-b", "tok-expired", "tok-no-exp", "tok-future", "tok-other-aud", "tok-no-aud"]) {
      assert.ok(!reviewed.has(jwtOf(name)), `${name} was sent to TokenReview`);
    }
    // One review per good request after each case, plus the 7 cases that reach the review (bad CSR
    // signature, and the six the API server refuses).
    assert.equal(reviewer.calls.length, cases.length + 7);
    const text = await srv.registry.metrics();
    assert.match(text, /identity_certificates_rejected_total\{reason="invalid_csr"\} 5/);
    assert.match(text, /identity_certificates_rejected_total\{reason="token_identity_mismatch"\} 1/);
    assert.match(text, /identity_certificates_rejected_total\{reason="token_audience"\} 4/);
    assert.match(text, /identity_certificates_rejected_total\{reason="token_malformed"\} 6/);
    assert.match(text, /identity_certificates_rejected_total\{reason="token_expired"\} 2/);
    assert.match(text, /identity_certificates_rejected_total\{reason="token_not_yet_valid"\} 1/);
    assert.match(text, /identity_certificates_rejected_total\{reason="token_not_serviceaccount"\} 2/);
    assert.match(text, /identity_certificates_rejected_total\{reason="csr_identity_mismatch"\} 7/);
    assert.match(text, new RegExp(`identity_certificates_issued_total ${cases.length}\\b`));
    assert.match(text, /grpc_server_handled_total\{[^}]*grpc_code="FAILED_PRECONDITION"\} 30/);
  } finally {
    await srv.close();
  }
});

Deno.test("Certify is Unavailable until an issuer is loaded", async () => {
  let issuer: Issuer | undefined;
  const srv = await startServer(
    () => issuer,
    reviewerOf({ "tok-a": serviceAccountToken("ns-a", "sa-a") }),
  );
  try {
    const csr = (await csrFor(A)).der;
    const before = await srv.certify(A, "tok-a", csr);
    assert.equal(before.err?.code, grpc.status.UNAVAILABLE);
    assert.match(before.err!.details, /cert issuer not ready yet/);
    issuer = (await makeCa()).issuer;
    const after = await srv.certify(A, "tok-a", csr);
    assert.equal(after.err, null);
  } finally {
    await srv.close();
  }
});

Deno.test("an issued leaf has the CSR's subject and key, both EKUs, 24h + skew, and chains to the issuer", async () => {
  const now = Date.now();
  const ca = await makeCa(now);
  const srv = await startServer(
    () => ca.issuer,
    reviewerOf({ "tok-a": serviceAccountToken("ns-a", "sa-a") }),
  );
  try {
    const { der, keys } = await csrFor(A);
    const { err, res } = await srv.certify(A, "tok-a", der);
    assert.equal(err, null);
    const leaf = new x509.X509Certificate(Uint8Array.from(res!.leafCertificate));
    assert.equal(leaf.subject, `CN=${A}`);
    assert.deepEqual(leaf.getExtension(x509.SubjectAlternativeNameExtension)?.names.toJSON(), [{
      type: "dns",
      value: A,
    }]);
    const eku = leaf.getExtension(x509.ExtendedKeyUsageExtension)!;
    assert.deepEqual([...eku.usages], [x509.ExtendedKeyUsage.serverAuth, x509.ExtendedKeyUsage.clientAuth]);
    const ku = leaf.getExtension(x509.KeyUsagesExtension)!;
    assert.equal(ku.usages, x509.KeyUsageFlags.digitalSignature);
    assert.equal(leaf.getExtension(x509.BasicConstraintsExtension)?.ca, false);
    const spki = new Uint8Array(await crypto.subtle.exportKey("spki", keys.publicKey));
    assert.deepEqual(new Uint8Array(leaf.publicKey.rawData), spki);
    // 24h lifetime plus the 20s skew allowance on both ends (whole seconds).
    const span = leaf.notAfter.getTime() - leaf.notBefore.getTime();
    assert.ok(Math.abs(span - (86_400_000 + 40_000)) <= 1000, `validity span ${span}ms`);
    assert.ok(Math.abs(leaf.notBefore.getTime() - (now - 20_000)) < 5000);
    assert.equal(Number(res!.validUntil!.seconds) * 1000, leaf.notAfter.getTime());
    assert.equal(res!.intermediateCertificates.length, 1);
    const issuerCert = new x509.X509Certificate(Uint8Array.from(res!.intermediateCertificates[0]));
    assert.equal(issuerCert.serialNumber, ca.issuer.certificate.serialNumber);
    assert.ok(await leaf.verify({ publicKey: issuerCert.publicKey, signatureOnly: true }));
  } finally {
    await srv.close();
  }
});

Deno.test("a leaf never outlives the issuer", async () => {
  const now = Date.now();
  const ca = await makeCa(now, { issuerLifetimeMs: 3_600_000 });
  const { der } = await csrFor(A);
  const { parseCsr } = await import("./csr.ts");
  const cert = await ca.issuer.issue(parseCsr(der), A, now, { lifetimeMs: 86_400_000, clockSkewMs: 20_000 });
  assert.ok(cert.notAfter.getTime() <= ca.issuer.notAfter.getTime());
  assert.ok(cert.notAfter.getTime() > now + 3_000_000);
});
