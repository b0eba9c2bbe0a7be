import assert from "node:assert/strict";
import { CertStore, type TlsCredentials } from "./cert_store.ts";

Deno.test("CertStore becomes ready on the first certificate and notifies on renewals", async () => {
  const store = new CertStore();
  assert.equal(store.current(), undefined);
  const seen: string[] = [];
  store.onChange((c) => seen.push(c.certChainPem));
  const creds = (pem: string): TlsCredentials => ({
    localName: "a.b.serviceaccount.identity.weft.cluster.local",
    keyPem: "k",
    certChainPem: pem,
    trustAnchorsPem: "t",
    expiresAt: new Date(0),
  });
  store.set(creds("one"));
  await store.ready;
  store.set(creds("two"));
  assert.equal(store.current()?.certChainPem, "two");
  assert.deepEqual(seen, ["one", "two"]);
});
