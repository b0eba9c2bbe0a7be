import assert from "node:assert/strict";
import { X509Certificate } from "node:crypto";
import { createTestCa } from "../testing/certs.ts";
import { dnsSansOf, PeerVerifier, type PresentedCert } from "./peer_verify.ts";
import { buildTrustBundle } from "../core/trust_store.ts";
import { createTestAnchor } from "../testing/issuer_certs.ts";

const ca = await createTestCa("peer-verify-test");
const other = await createTestCa("peer-verify-other");
const A = "a.ns.serviceaccount.identity.linkerd.cluster.local";
const der = (pem: string) => new Uint8Array(new X509Certificate(pem).raw);
const fingerprint = (pem: string) => new X509Certificate(pem).fingerprint256;
const bundleOf = (anchors: string, issuers = "") => buildTrustBundle(anchors, issuers).bundle;
/** The leaf's DER and what follows it in a chain, as node:tls hands them to the verifier. */
function split(chainPem: string): { leaf: Uint8Array; fp: string; presented: PresentedCert[] } {
  const certs = chainPem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g)!.map((p) =>
    new X509Certificate(p)
  );
  return {
    leaf: new Uint8Array(certs[0].raw),
    fp: certs[0].fingerprint256,
    presented: certs.slice(1).map((c) => ({ raw: new Uint8Array(c.raw), fingerprint256: c.fingerprint256 })),
  };
}

Deno.test("peer_verify: a repeated leaf is found by the fingerprint node:tls gives, with the same verdict", async () => {
  const own = await ca.issue("b.ns.serviceaccount.identity.linkerd.cluster.local");
  const v = new PeerVerifier(bundleOf(ca.certPem), own.certChainPem);
  const leaf = await ca.issue(A);
  const first = v.verify(der(leaf.certChainPem), Date.now(), fingerprint(leaf.certChainPem));
  assert.deepEqual(first, { ok: true, identity: A });
  assert.deepEqual(v.verify(der(leaf.certChainPem), Date.now(), fingerprint(leaf.certChainPem)), first);
});

Deno.test("peer_verify: a trusted leaf's fingerprint passed with a foreign certificate's bytes is refused", async () => {
  const own = await ca.issue("b.ns.serviceaccount.identity.linkerd.cluster.local");
  const v = new PeerVerifier(bundleOf(ca.certPem), own.certChainPem);
  const trusted = await ca.issue(A);
  const foreign = await other.issue(A);
  assert.equal(v.verify(der(trusted.certChainPem), Date.now(), fingerprint(trusted.certChainPem)).ok, true);
  const r = v.verify(der(foreign.certChainPem), Date.now(), fingerprint(trusted.certChainPem));
  assert.equal(r.ok, false);
  assert.match((r as { reason: string }).reason, /does not chain to the trust anchors/);
});

Deno.test("peer_verify: a cached verdict ends with the leaf's validity", async () => {
  const own = await ca.issue("b.ns.serviceaccount.identity.linkerd.cluster.local");
  const v = new PeerVerifier(bundleOf(ca.certPem), own.certChainPem);
  const notAfter = new Date(Date.now() + 60_000);
  const leaf = await ca.issue(A, { notAfter });
  assert.equal(v.verify(der(leaf.certChainPem), Date.now(), fingerprint(leaf.certChainPem)).ok, true);
  const later = v.verify(der(leaf.certChainPem), notAfter.getTime() + 1000, fingerprint(leaf.certChainPem));
  assert.equal(later.ok, false);
  assert.match((later as { reason: string }).reason, /not valid now/);
});

Deno.test("peer_verify: DNS names of a subjectAltName text", () => {
  assert.deepEqual(dnsSansOf("DNS:a.example, IP Address:10.0.0.1, DNS:b.example"), [
    "a.example",
    "b.example",
  ]);
  assert.deepEqual(dnsSansOf(undefined), []);
  assert.deepEqual(dnsSansOf("URI:spiffe://x"), []);
});

const anchor = await createTestAnchor("pv-anchor");
const issuer1 = await anchor.issuer("pv-issuer-1");
const issuer2 = await anchor.issuer("pv-issuer-2");
const foreignAnchor = await createTestAnchor("pv-foreign");
const foreignIssuer = await foreignAnchor.issuer("pv-foreign-issuer");

Deno.test("peer_verify: a leaf from an issuer we have not seen verifies through the issuer the peer presents", async () => {
  const own = await issuer1.issue("b.ns.serviceaccount.identity.linkerd.cluster.local");
  const v = new PeerVerifier(bundleOf(anchor.certPem), own.certChainPem);
  const peer = split((await issuer2.issue(A)).certChainPem);
  assert.deepEqual(v.verify(peer.leaf, Date.now(), peer.fp, peer.presented), { ok: true, identity: A });
  // Once trusted, the same leaf needs no chain.
  assert.deepEqual(v.cachedTrusted(peer.leaf, peer.fp), { ok: true, identity: A });
});

Deno.test("peer_verify: without the presented issuer, an unseen issuer's leaf is refused, then accepted with it", async () => {
  const own = await issuer1.issue("b.ns.serviceaccount.identity.linkerd.cluster.local");
  const v = new PeerVerifier(bundleOf(anchor.certPem), own.certChainPem);
  const peer = split((await issuer2.issue(A)).certChainPem);
  const alone = v.verify(peer.leaf, Date.now(), peer.fp, []);
  assert.equal(alone.ok, false);
  assert.match((alone as { reason: string }).reason, /does not chain/);
  // The refusal was for the leaf alone: the same leaf with its issuer is judged afresh.
  assert.equal(v.verify(peer.leaf, Date.now(), peer.fp, peer.presented).ok, true);
});

Deno.test("peer_verify: a leaf whose presented issuer sits under a foreign anchor is refused", async () => {
  const own = await issuer1.issue("b.ns.serviceaccount.identity.linkerd.cluster.local");
  const v = new PeerVerifier(bundleOf(anchor.certPem), own.certChainPem);
  const peer = split((await foreignIssuer.issue(A)).certChainPem);
  const r = v.verify(peer.leaf, Date.now(), peer.fp, peer.presented);
  assert.equal(r.ok, false);
  assert.match((r as { reason: string }).reason, /does not chain to the trust anchors/);
});

Deno.test("peer_verify: a presented certificate that is not a CA does not vouch for a leaf", async () => {
  const own = await issuer1.issue("b.ns.serviceaccount.identity.linkerd.cluster.local");
  const v = new PeerVerifier(bundleOf(anchor.certPem), own.certChainPem);
  const peer = split((await issuer2.issue(A)).certChainPem);
  // Another leaf of an issuer under the anchor, presented as if it were the issuer.
  const notCa = split(
    (await issuer1.issue("c.ns.serviceaccount.identity.linkerd.cluster.local")).certChainPem,
  );
  const r = v.verify(peer.leaf, Date.now(), peer.fp, [{ raw: notCa.leaf, fingerprint256: notCa.fp }]);
  assert.equal(r.ok, false);
});

Deno.test("peer_verify: a published issuer under an anchor vouches for a leaf sent alone; one under a foreign anchor is ignored", async () => {
  const own = await issuer1.issue("b.ns.serviceaccount.identity.linkerd.cluster.local");
  const { bundle, ignored } = buildTrustBundle(anchor.certPem, issuer2.certPem + foreignIssuer.certPem);
  assert.equal(bundle.issuers.length, 1);
  assert.deepEqual(ignored, ['published issuer "pv-foreign-issuer" does not chain to a trust anchor']);
  const v = new PeerVerifier(bundle, own.certChainPem);
  const ok = split((await issuer2.issue(A)).certChainPem);
  assert.deepEqual(v.verify(ok.leaf, Date.now(), ok.fp, []), { ok: true, identity: A });
  const foreign = split((await foreignIssuer.issue(A)).certChainPem);
  assert.equal(v.verify(foreign.leaf, Date.now(), foreign.fp, []).ok, false);
});

Deno.test("peer_verify: a trusted verdict ends with the issuer's validity, not only the leaf's", async () => {
  const issuerEnd = new Date(Date.now() + 120_000);
  const shortIssuer = await anchor.issuer("pv-short", { notAfter: issuerEnd });
  const own = await issuer1.issue("b.ns.serviceaccount.identity.linkerd.cluster.local");
  const v = new PeerVerifier(bundleOf(anchor.certPem), own.certChainPem);
  const peer = split((await shortIssuer.issue(A)).certChainPem);
  assert.equal(v.verify(peer.leaf, Date.now(), peer.fp, peer.presented).ok, true);
  assert.equal(v.cachedTrusted(peer.leaf, peer.fp, issuerEnd.getTime() + 1000), undefined);
  assert.equal(v.verify(peer.leaf, issuerEnd.getTime() + 1000, peer.fp, peer.presented).ok, false);
});
