import assert from "node:assert/strict";
import { createIssuer, createTrustAnchor } from "../control/certs/pki.ts";
import {
  CertError,
  certProblems,
  createIdentity,
  createWebhookCa,
  issueServingCert,
  planIdentity,
  RENEW_BEFORE_MS,
  serviceDnsNames,
} from "./certs.ts";

const DAY = 86_400_000;
const now = Date.now();
const names = { namespace: "weft", trustDomain: "cluster.local", now };
const { material, anchor } = await createIdentity(names);

Deno.test("planIdentity: nothing in the cluster → create", async () => {
  assert.deepEqual(await planIdentity({ existing: {}, now }), { action: "create" });
});

Deno.test("planIdentity: a valid issuer that is not due is kept, even without the anchor key", async () => {
  const plan = await planIdentity({
    existing: { anchorsPem: material.anchorsPem, issuer: material.issuer },
    now,
  });
  assert.equal(plan.action, "keep");
  assert.equal(plan.action === "keep" && plan.note, undefined);
});

Deno.test("planIdentity: half an install is refused with what is missing", async () => {
  await assert.rejects(
    planIdentity({ existing: { anchorsPem: material.anchorsPem }, now }),
    (e: Error) => e instanceof CertError && /trust roots but no issuer Secret/.test(e.message),
  );
});

Deno.test("planIdentity: given material is validated, and replaces what differs", async () => {
  const other = await createIdentity(names);
  const plan = await planIdentity({
    existing: { anchorsPem: material.anchorsPem, issuer: material.issuer },
    given: other.material,
    now,
  });
  assert.deepEqual(plan, { action: "use-given", material: other.material, replaces: true });
  const same = await planIdentity({
    existing: { anchorsPem: material.anchorsPem, issuer: material.issuer },
    given: material,
    now,
  });
  assert.equal(same.action, "keep");
  // An issuer from another anchor is refused, naming the problem.
  await assert.rejects(
    planIdentity({
      existing: {},
      given: { anchorsPem: material.anchorsPem, issuer: other.material.issuer },
      now,
    }),
    (e: Error) => e instanceof CertError && /does not chain/.test(e.message),
  );
});

Deno.test("planIdentity: an issuer due for renewal is renewed with the anchor key, else kept with a warning", async () => {
  const shortIssuer = await createIssuer(anchor, {
    commonName: "identity.weft.cluster.local",
    lifetimeMs: 10 * DAY,
    now,
  });
  const existing = {
    anchorsPem: material.anchorsPem,
    issuer: { certPem: shortIssuer.certPem, keyPem: shortIssuer.keyPem },
  };
  const withKey = await planIdentity({ existing, anchorKeyPem: anchor.keyPem, now });
  assert.equal(withKey.action, "renew-issuer");
  const without = await planIdentity({ existing, now });
  assert.equal(without.action, "keep");
  assert.match(without.action === "keep" ? without.note ?? "" : "", /rotate it/);
});

Deno.test("planIdentity: an expired issuer without the anchor key is an error that says what to do", async () => {
  const old = await createIssuer(anchor, {
    commonName: "identity.weft.cluster.local",
    lifetimeMs: DAY,
    now: now - 2 * DAY,
  });
  await assert.rejects(
    planIdentity({ existing: { anchorsPem: material.anchorsPem, issuer: old }, now }),
    (e: Error) => e instanceof CertError && /--trust-anchors/.test(e.message),
  );
});

const ca = await createWebhookCa("weft", now);
const dns = serviceDnsNames(["weft-sp-validator", "weft-policy-validator"], "weft", "cluster.local");

Deno.test("a serving certificate from the webhook CA passes every check", async () => {
  assert.deepEqual(dns, [
    "weft-sp-validator.weft.svc",
    "weft-sp-validator.weft.svc.cluster.local",
    "weft-policy-validator.weft.svc",
    "weft-policy-validator.weft.svc.cluster.local",
  ]);
  const cert = await issueServingCert(ca, dns, now);
  const o = {
    pair: cert,
    what: "serving",
    now,
    renewBeforeMs: RENEW_BEFORE_MS,
    caPem: ca.certPem,
    dnsNames: dns,
  };
  assert.deepEqual(await certProblems(o), []);
  assert.deepEqual(
    await certProblems({ pair: ca, what: "CA", now, renewBeforeMs: RENEW_BEFORE_MS, ca: true }),
    [],
  );
});

Deno.test("certProblems names a missing DNS name, a foreign CA, a wrong key and a near expiry", async () => {
  const cert = await issueServingCert(ca, dns.slice(0, 2), now);
  const otherCa = await createWebhookCa("weft", now);
  const other = await issueServingCert(otherCa, dns, now);
  const base = { what: "serving", now, renewBeforeMs: 0, caPem: ca.certPem, dnsNames: dns };
  assert.match(
    (await certProblems({ ...base, pair: cert })).join(),
    /does not name weft-policy-validator\.weft\.svc/,
  );
  assert.match((await certProblems({ ...base, pair: other })).join(), /is not signed by the webhook CA/);
  assert.match(
    (await certProblems({ ...base, pair: { certPem: other.certPem, keyPem: cert.keyPem } })).join(),
    /key does not match/,
  );
  const soon = await certProblems({ ...base, pair: other, caPem: otherCa.certPem, renewBeforeMs: 400 * DAY });
  assert.match(soon.join(), /within 400d/);
  assert.match((await certProblems({ ...base, pair: cert, ca: true })).join(), /not a CA certificate/);
});

Deno.test("certProblems reports an expired certificate", async () => {
  const past = await issueServingCert(ca, dns, now - 400 * DAY);
  assert.match(
    (await certProblems({ pair: past, what: "old", now, renewBeforeMs: 0 })).join(),
    /old expired/,
  );
  // The anchor helper is the project's: anchors are CAs by construction.
  const root = await createTrustAnchor({ commonName: "x", lifetimeMs: DAY, now });
  assert.deepEqual(await certProblems({ pair: root, what: "root", now, renewBeforeMs: 0, ca: true }), []);
});
