import assert from "node:assert/strict";
import { X509Certificate } from "node:crypto";
import { createTestCa } from "../testing/certs.ts";
import { dnsSansOf, PeerVerifier } from "./peer_verify.ts";

const ca = await createTestCa("peer-verify-test");
const other = await createTestCa("peer-verify-other");
const A = "a.ns.serviceaccount.identity.linkerd.cluster.local";
const der = (pem: string) => new Uint8Array(new X509Certificate(pem).raw);
const fingerprint = (pem: string) => new X509Certificate(pem).fingerprint256;

Deno.test("peer_verify: a repeated leaf is found by the fingerprint node:tls gives, with the same verdict", async () => {
  const own = await ca.issue("b.ns.serviceaccount.identity.linkerd.cluster.local");
  const v = new PeerVerifier(ca.certPem, own.certChainPem);
  const leaf = await ca.issue(A);
  const first = v.verify(der(leaf.certChainPem), Date.now(), fingerprint(leaf.certChainPem));
  assert.deepEqual(first, { ok: true, identity: A });
  assert.deepEqual(v.verify(der(leaf.certChainPem), Date.now(), fingerprint(leaf.certChainPem)), first);
});

Deno.test("peer_verify: a trusted leaf's fingerprint passed with a foreign certificate's bytes is refused", async () => {
  const own = await ca.issue("b.ns.serviceaccount.identity.linkerd.cluster.local");
  const v = new PeerVerifier(ca.certPem, own.certChainPem);
  const trusted = await ca.issue(A);
  const foreign = await other.issue(A);
  assert.equal(v.verify(der(trusted.certChainPem), Date.now(), fingerprint(trusted.certChainPem)).ok, true);
  const r = v.verify(der(foreign.certChainPem), Date.now(), fingerprint(trusted.certChainPem));
  assert.equal(r.ok, false);
  assert.match((r as { reason: string }).reason, /does not chain to the trust anchors/);
});

Deno.test("peer_verify: a cached verdict ends with the leaf's validity", async () => {
  const own = await ca.issue("b.ns.serviceaccount.identity.linkerd.cluster.local");
  const v = new PeerVerifier(ca.certPem, own.certChainPem);
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
