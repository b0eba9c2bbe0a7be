import assert from "node:assert/strict";
import { CsrError, parseCsr, VerifiedCsrCache } from "./csr.ts";
import { csrFor, makeCsr } from "./test_pki.ts";

Deno.test("every truncation and single-byte corruption of a CSR fails with a CsrError, never another exception", async () => {
  const { der } = await csrFor("a.b.serviceaccount.identity.linkerd.cluster.local");
  let refused = 0;
  const check = (bytes: Uint8Array) => {
    try {
      parseCsr(bytes);
    } catch (e) {
      assert.ok(e instanceof CsrError, `unexpected ${(e as Error).name}: ${(e as Error).message}`);
      refused++;
    }
  };
  for (let n = 0; n < der.length; n++) check(der.subarray(0, n));
  for (let i = 0; i < der.length; i++) {
    for (const flip of [0x01, 0x80, 0xff]) {
      const b = der.slice();
      b[i] ^= flip;
      check(b);
    }
  }
  // Every truncation, and nearly every corruption, is refused (a flip may still leave a valid CSR
  // only where DER leaves no trace in the signed bytes, which there is none of here).
  assert.equal(refused, der.length + 3 * der.length);
});

Deno.test("an empty subject and the verified-CSR cache", async () => {
  const { der } = await makeCsr({ names: [{ type: "dns", value: "x.example" }] });
  const cache = new VerifiedCsrCache(2);
  const csr = parseCsr(der, cache);
  assert.equal(csr.commonName, undefined);
  assert.deepEqual(csr.dnsNames, ["x.example"]);
  assert.equal(cache.size, 1);
  parseCsr(der, cache);
  assert.equal(cache.size, 1);
  for (let i = 0; i < 3; i++) parseCsr((await csrFor(`n${i}.example`)).der, cache);
  assert.equal(cache.size, 2, "bounded");
});
