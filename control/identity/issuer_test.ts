import assert from "node:assert/strict";
import { createIssuer, createTrustAnchor } from "../certs/pki.ts";
import { Issuer, TrustAnchors } from "./issuer.ts";
import { makeCa } from "./test_pki.ts";

const DAY = 86_400_000;

Deno.test("an issuer that is expired, not a CA, unchained, or paired with another key is refused with the reason", async () => {
  const now = Date.now();
  const ca = await makeCa(now);
  const other = await makeCa(now);
  const load = (certPem: string, keyPem: string, anchors = ca.anchors, at = now) =>
    Issuer.load({ certPem, keyPem, origin: "test" }, anchors, at);

  await assert.rejects(
    load(ca.material.certPem, ca.material.keyPem, ca.anchors, now + 40 * DAY),
    /issuer certificate "CN=identity\.linkerd\.cluster\.local" expired at/,
  );
  await assert.rejects(
    load(ca.material.certPem, ca.material.keyPem, other.anchors),
    /does not chain to any of the 1 trust anchor\(s\)/,
  );
  await assert.rejects(
    load(ca.material.certPem, other.material.keyPem),
    /issuer key \(test\) does not match issuer certificate/,
  );
  await assert.rejects(
    load("garbage", ca.material.keyPem),
    /issuer certificate \(test\): no PEM CERTIFICATE block found/,
  );
  await assert.rejects(load(ca.material.certPem, "garbage"), /issuer key \(test\): not a PEM private key/);
  // A leaf-like certificate (no cA) cannot be an issuer.
  const { x509 } = await import("../../proto/support/x509.ts");
  const keys = await crypto.subtle.generateKey({ name: "ECDSA", namedCurve: "P-256" }, true, [
    "sign",
    "verify",
  ]) as CryptoKeyPair;
  const notCa = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: "01",
    name: "CN=not-a-ca",
    notBefore: new Date(now - DAY),
    notAfter: new Date(now + DAY),
    signingAlgorithm: { name: "ECDSA", hash: "SHA-256" },
    keys,
  });
  const { toPem } = await import("./pem.ts");
  const keyPem = toPem(
    new Uint8Array(await crypto.subtle.exportKey("pkcs8", keys.privateKey)),
    "PRIVATE KEY",
  );
  await assert.rejects(
    load(notCa.toString("pem"), keyPem, TrustAnchors.parse(notCa.toString("pem"))),
    /"CN=not-a-ca" is not a CA/,
  );
});

Deno.test("several anchors may be trusted at once (rotation): an issuer under either loads, and SEC1 keys are accepted", async () => {
  const now = Date.now();
  const oldRoot = await createTrustAnchor({ commonName: "root-old", lifetimeMs: 100 * DAY, now });
  const newRoot = await createTrustAnchor({ commonName: "root-new", lifetimeMs: 100 * DAY, now });
  const bundle = TrustAnchors.parse(oldRoot.certPem + newRoot.certPem);
  const iss = await createIssuer(newRoot, { commonName: "identity", lifetimeMs: 10 * DAY, now });
  const { createPrivateKey } = await import("node:crypto");
  const sec1 = createPrivateKey(iss.keyPem).export({ format: "pem", type: "sec1" }) as string;
  assert.match(sec1, /BEGIN EC PRIVATE KEY/);
  const issuer = await Issuer.load({ certPem: iss.certPem, keyPem: sec1, origin: "t" }, bundle, now);
  assert.equal(issuer.anchor.subject, "CN=root-new");
  assert.equal(issuer.chainNotAfter, iss.cert.notAfter.getTime());
});
