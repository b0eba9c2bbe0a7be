import assert from "node:assert/strict";
import { x509 } from "../../proto/support/x509.ts";
import { certInfo } from "./cert_info.ts";
import { Issuer } from "./issuer.ts";
import { csrFor, makeCa, newIssuerMaterial } from "./test_pki.ts";
import {
  formatRenewBefore,
  ISSUERS_KEY,
  parseRenewBefore,
  planTrustRoots,
  RENEW_BEFORE_KEY,
  renewBeforeFor,
  TRUST_ANCHORS_KEY,
} from "./trust_roots.ts";
import { readCsr } from "./csr.ts";
import { toPem } from "./pem.ts";

const DAY = 86_400_000;
const SKEW = 20_000;
const cert = (pem: string) => new x509.X509Certificate(pem);
const pemOf = (c: x509.X509Certificate) => c.toString("pem").trim() + "\n";
const fps = async (pem: string | undefined) =>
  pem === undefined ? undefined : await Promise.all(
    pem.split(/(?<=-----END CERTIFICATE-----\n)/).filter((b) => b.trim()).map((b) =>
      certInfo(cert(b)).then((i) => i.fingerprint)
    ),
  );

async function setup() {
  const now = Date.now();
  const ca = await makeCa(now);
  const root = { certPem: ca.anchorPem, keyPem: ca.anchorKeyPem };
  const second = await newIssuerMaterial(root, now, "identity-2.linkerd.cluster.local");
  return { now, ca, root, a: cert(ca.material.certPem), b: cert(second.certPem), second };
}

Deno.test("a fresh ConfigMap gets the current issuer and no renew-before", async () => {
  const { now, ca, a } = await setup();
  const plan = await planTrustRoots({
    data: { [TRUST_ANCHORS_KEY]: ca.anchorPem },
    current: { chain: [a], since: now },
    previous: [],
    clockSkewMs: SKEW,
    now,
  });
  assert.deepEqual(Object.keys(plan.patch), [ISSUERS_KEY]);
  assert.equal(plan.patch[ISSUERS_KEY], pemOf(a));
  assert.equal(plan.nextExpiry, a.notAfter.getTime());
  // Applied, the same input plans nothing.
  const again = await planTrustRoots({
    data: { [TRUST_ANCHORS_KEY]: ca.anchorPem, ...plan.patch },
    current: { chain: [a], since: now },
    previous: [],
    clockSkewMs: SKEW,
    now,
  });
  assert.deepEqual(again.patch, {});
});

Deno.test("an issuer change lists the new issuer first, keeps the old one, and sets renew-before", async () => {
  const { now, ca, a, b } = await setup();
  const since = now + 5_000;
  const plan = await planTrustRoots({
    data: { [TRUST_ANCHORS_KEY]: ca.anchorPem, [ISSUERS_KEY]: pemOf(a) },
    current: { chain: [b], since },
    previous: [],
    clockSkewMs: SKEW,
    now: since,
  });
  assert.deepEqual(await fps(plan.patch[ISSUERS_KEY]), [
    (await certInfo(b)).fingerprint,
    (await certInfo(a)).fingerprint,
  ]);
  assert.equal(plan.patch[RENEW_BEFORE_KEY], formatRenewBefore(renewBeforeFor(since, SKEW)));
  assert.match(plan.patch[RENEW_BEFORE_KEY], /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
  // Once published, the same issuer does not ask for renewal again.
  const after = await planTrustRoots({
    data: { [TRUST_ANCHORS_KEY]: ca.anchorPem, ...plan.patch },
    current: { chain: [b], since },
    previous: [],
    clockSkewMs: SKEW,
    now: since + 60_000,
  });
  assert.deepEqual(after.patch, {});
});

Deno.test("a later renew-before already in the ConfigMap (the rotation command's) is kept", async () => {
  const { now, ca, a, b } = await setup();
  const later = formatRenewBefore(new Date(now + DAY));
  const plan = await planTrustRoots({
    data: { [TRUST_ANCHORS_KEY]: ca.anchorPem, [ISSUERS_KEY]: pemOf(a), [RENEW_BEFORE_KEY]: later },
    current: { chain: [b], since: now },
    previous: [],
    clockSkewMs: SKEW,
    now,
  });
  assert.equal(plan.patch[RENEW_BEFORE_KEY], undefined);
  // An earlier or unreadable one is replaced.
  for (const old of [formatRenewBefore(new Date(now - DAY)), "not a time"]) {
    const p = await planTrustRoots({
      data: { [TRUST_ANCHORS_KEY]: ca.anchorPem, [ISSUERS_KEY]: pemOf(a), [RENEW_BEFORE_KEY]: old },
      current: { chain: [b], since: now },
      previous: [],
      clockSkewMs: SKEW,
      now,
    });
    assert.equal(p.patch[RENEW_BEFORE_KEY], formatRenewBefore(renewBeforeFor(now, SKEW)), old);
  }
});

Deno.test("expired issuers, issuers under a foreign anchor and issuers of a removed anchor are left out", async () => {
  const { now, ca, root, a, b } = await setup();
  const { createIssuer } = await import("../certs/pki.ts");
  const expired = cert(
    (await createIssuer(root, { commonName: "old", lifetimeMs: DAY, now: now - 3 * DAY })).certPem,
  );
  const foreign = await makeCa(now, { anchorCn: "other-root" });
  const f = cert(foreign.material.certPem);
  const published = [a, expired, f].map(pemOf).join("");
  const plan = await planTrustRoots({
    data: { [TRUST_ANCHORS_KEY]: ca.anchorPem, [ISSUERS_KEY]: published },
    current: { chain: [a], since: now },
    previous: [{ chain: [f], since: now - 1 }],
    clockSkewMs: SKEW,
    now,
  });
  assert.deepEqual(await fps(plan.patch[ISSUERS_KEY]), [(await certInfo(a)).fingerprint]);

  // After an anchor rotation (old anchor removed), the issuer under the old anchor is dropped and the
  // current one (under the new anchor) stays.
  const rotated = await planTrustRoots({
    data: { [TRUST_ANCHORS_KEY]: foreign.anchorPem, [ISSUERS_KEY]: [f, a, b].map(pemOf).join("") },
    current: { chain: [f], since: now },
    previous: [{ chain: [a], since: now - 1 }],
    clockSkewMs: SKEW,
    now,
  });
  assert.deepEqual(await fps(rotated.patch[ISSUERS_KEY]), [(await certInfo(f)).fingerprint]);
});

Deno.test("an unreadable ca-bundle.crt writes nothing; an unreadable weft-issuers.crt is rewritten", async () => {
  const { now, ca, a } = await setup();
  const none = await planTrustRoots({
    data: { [TRUST_ANCHORS_KEY]: "garbage", [ISSUERS_KEY]: pemOf(a) },
    current: { chain: [a], since: now },
    previous: [],
    clockSkewMs: SKEW,
    now,
  });
  assert.deepEqual(none.patch, {});
  assert.match(none.notes[0], /ca-bundle\.crt.*not publishing issuers/);
  const fixed = await planTrustRoots({
    data: {
      [TRUST_ANCHORS_KEY]: ca.anchorPem,
      [ISSUERS_KEY]: "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
    },
    current: { chain: [a], since: now },
    previous: [],
    clockSkewMs: SKEW,
    now,
  });
  assert.equal(fixed.patch[ISSUERS_KEY], pemOf(a));
  assert.equal(fixed.patch[RENEW_BEFORE_KEY], undefined);
});

Deno.test("renew-before separates leaves the old issuer signed from leaves the new one signs a second later", async () => {
  const { ca, second } = await setup();
  const { csr } = await csrForIssue();
  // Swap at `since`, with the clock at awkward sub-second offsets.
  for (const since of [Date.UTC(2026, 5, 1, 12, 0, 0, 0), Date.UTC(2026, 5, 1, 12, 0, 0, 999)]) {
    const rb = renewBeforeFor(since, SKEW).getTime();
    const oldIssuer = await Issuer.load(ca.material, ca.anchors, Date.now());
    const newIssuer = await Issuer.load(second, ca.anchors, Date.now());
    for (const t of [since - 3_600_000, since - 1, since]) {
      const leaf = cert(
        toPem((await oldIssuer.issue(csr, NAME, t, { lifetimeMs: DAY, clockSkewMs: SKEW })).leaf),
      );
      assert.ok(leaf.notBefore.getTime() < rb, `old leaf issued at ${t - since}ms renews`);
    }
    for (const t of [since + 1000, since + 1001, since + 60_000]) {
      const leaf = cert(
        toPem((await newIssuer.issue(csr, NAME, t, { lifetimeMs: DAY, clockSkewMs: SKEW })).leaf),
      );
      assert.ok(leaf.notBefore.getTime() >= rb, `new leaf issued at +${t - since}ms does not renew`);
    }
  }
  assert.equal(parseRenewBefore("2026-06-01T12:00:00Z")?.getTime(), Date.UTC(2026, 5, 1, 12));
  assert.equal(parseRenewBefore("yesterday"), undefined);
});

const NAME = "default.default.serviceaccount.identity.linkerd.cluster.local";

async function csrForIssue() {
  const parsed = readCsr((await csrFor(NAME)).der).fields;
  return { csr: { subject: parsed.subject, spki: parsed.spki } };
}
