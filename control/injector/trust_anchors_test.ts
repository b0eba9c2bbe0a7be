import assert from "node:assert/strict";
import { testCa } from "../webhook/testing/pki.ts";
import { parseTrustAnchors, readTrustAnchors } from "./trust_anchors.ts";

Deno.test("trust anchors: every certificate of the bundle is parsed; junk is refused naming the file", async () => {
  const a = await testCa(), b = await testCa();
  try {
    const bundle = parseTrustAnchors(a.caPem + b.caPem, "bundle.crt");
    assert.equal(bundle.certs.length, 2);
    assert.match(bundle.certs[0].subject, /CN=weft-test-ca/);
    assert.ok(bundle.certs[0].notAfter.getTime() > Date.now());
    assert.throws(() => parseTrustAnchors("hello", "x.crt"), /x\.crt holds no PEM CERTIFICATE block/);
    assert.throws(
      () => parseTrustAnchors("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n", "y.crt"),
      /y\.crt: certificate #1 does not parse/,
    );
    await assert.rejects(
      () => readTrustAnchors("/nonexistent/ca.crt"),
      /cannot read trust anchors \/nonexistent\/ca\.crt/,
    );
  } finally {
    await a.close();
    await b.close();
  }
});
