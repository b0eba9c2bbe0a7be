import assert from "node:assert/strict";
import { Registry } from "prom-client";
import { systemClock } from "../../proto/support/clock.ts";
import { TrustAnchors } from "./issuer.ts";
import { IssuerReloader } from "./issuer_reloader.ts";
import { materialFromData } from "./issuer_source.ts";
import { IdentityMetrics } from "./metrics.ts";
import { makeCa, newIssuerMaterial } from "./test_pki.ts";
import { createPrivateKey } from "node:crypto";

Deno.test("an issuer refused for an untrusted anchor is taken once the anchor joins the bundle", async () => {
  const oldCa = await makeCa();
  const newCa = await makeCa(Date.now(), { anchorCn: "root-2.linkerd.cluster.local", issuerCn: "issuer-2" });
  const logs: string[] = [];
  const reloader = new IssuerReloader(oldCa.anchors, systemClock, undefined, (l) => logs.push(l));
  const seen: string[] = [];
  reloader.onIssuer((_i, info) => seen.push(info.subject));
  assert.equal((await reloader.offer(oldCa.material)).ok, true);
  const refused = await reloader.offer(newCa.material);
  assert.equal(refused.ok, false);
  assert.match(logs.join("\n"), /IssuerUpdateSkipped .*does not chain to any of the 1 trust anchor/);
  assert.equal(reloader.current()?.certificate.subject, oldCa.issuer.certificate.subject);

  await reloader.setAnchors(TrustAnchors.parse(oldCa.anchorPem + newCa.anchorPem));
  assert.equal(reloader.current()?.certificate.subject, "CN=issuer-2");
  assert.deepEqual(seen, ["identity.linkerd.cluster.local", "issuer-2"]);
  assert.equal(reloader.anchorInfos().length, 2);
  assert.equal(reloader.issuerTrusted(), true);
});

Deno.test("a current issuer whose anchor leaves the bundle is kept and reported as not trusted", async () => {
  const oldCa = await makeCa();
  const newCa = await makeCa(Date.now(), { anchorCn: "root-2.linkerd.cluster.local" });
  const logs: string[] = [];
  const registry = new Registry();
  const metrics = new IdentityMetrics(registry);
  const reloader = new IssuerReloader(oldCa.anchors, systemClock, metrics, (l) => logs.push(l));
  metrics.observe(reloader, () => Date.now());
  await reloader.offer(oldCa.material);
  await reloader.setAnchors(newCa.anchors);
  assert.equal(reloader.current()?.certificate.subject, oldCa.issuer.certificate.subject);
  assert.equal(reloader.issuerTrusted(), false);
  assert.match(logs.join("\n"), /IssuerNotTrusted \(still signing with it\)/);
  const text = await registry.metrics();
  assert.match(text, /^weft_identity_issuer_trusted 0$/m);
  // The gauges follow the new bundle.
  const fp = reloader.anchorInfos()[0].fingerprint;
  assert.match(
    text,
    new RegExp(
      `^weft_identity_trust_anchor_expiration_timestamp_seconds\\{fingerprint_sha256="${fp}",subject="root-2.linkerd.cluster.local"\\} ${
        Math.floor(newCa.anchors.certs[0].notAfter.getTime() / 1000)
      }$`,
      "m",
    ),
  );
  assert.match(
    text,
    new RegExp(
      `^identity_cert_expiration_timestamp_seconds ${Math.floor(oldCa.issuer.notAfter.getTime() / 1000)}$`,
      "m",
    ),
  );
  assert.match(
    text,
    new RegExp(
      `^weft_identity_issuer_info\\{fingerprint_sha256="${
        reloader.currentInfo()!.fingerprint
      }",subject="identity.linkerd.cluster.local"\\} 1$`,
      "m",
    ),
  );
});

/** The Secret cert-manager writes for a CA-issued Certificate: type kubernetes.io/tls, three keys. */
function certManagerSecretData(tlsCrt: string, tlsKey: string, caCrt: string) {
  return { "tls.crt": tlsCrt, "tls.key": tlsKey, "ca.crt": caCrt };
}

Deno.test("cert-manager Secrets: SEC1 or PKCS#8 keys, the chain in tls.crt, ca.crt checked against the bundle", async () => {
  const ca = await makeCa();
  const root = { certPem: ca.anchorPem, keyPem: ca.anchorKeyPem };
  const issuer = await newIssuerMaterial(root, Date.now(), "identity.weft.cluster.local");
  const sec1 = createPrivateKey(issuer.keyPem).export({ format: "pem", type: "sec1" }) as string;
  assert.match(sec1, /BEGIN EC PRIVATE KEY/);
  const logs: string[] = [];
  const registry = new Registry();
  const metrics = new IdentityMetrics(registry);
  const reloader = new IssuerReloader(ca.anchors, systemClock, metrics, (l) => logs.push(l));
  metrics.observe(reloader, () => Date.now());

  // tls.crt with the chain up to and including the root, key as SEC1 ("PKCS1" in cert-manager's terms).
  const m1 = materialFromData(
    certManagerSecretData(issuer.certPem + ca.anchorPem, sec1, ca.anchorPem),
    "secret weft/linkerd-identity-issuer@1",
  );
  assert.equal(m1.caPem, ca.anchorPem);
  assert.equal((await reloader.offer(m1)).ok, true);
  assert.equal(reloader.caTrusted(), true);
  assert.match(await registry.metrics(), /^weft_identity_issuer_secret_ca_trusted 1$/m);

  // Renewed by cert-manager: a new key as PKCS#8, tls.crt only the issuer.
  const renewed = await newIssuerMaterial(root, Date.now(), "identity.weft.cluster.local");
  const m2 = materialFromData(
    certManagerSecretData(renewed.certPem, renewed.keyPem, ca.anchorPem),
    "secret weft/linkerd-identity-issuer@2",
  );
  assert.equal((await reloader.offer(m2)).ok, true);
  assert.match(logs.join("\n"), /IssuerUpdated: .*@2/);

  // A Certificate whose CA is not in the bundle: refused, and the log says why in cert-manager's terms.
  const foreign = await makeCa(Date.now(), { anchorCn: "cert-manager-root" });
  const m3 = materialFromData(
    certManagerSecretData(foreign.material.certPem, foreign.material.keyPem, foreign.anchorPem),
    "secret weft/linkerd-identity-issuer@3",
  );
  assert.equal((await reloader.offer(m3)).ok, false);
  assert.equal(reloader.caTrusted(), false);
  assert.match(
    logs.join("\n"),
    /IssuerCaNotTrusted: secret weft\/linkerd-identity-issuer@3 ca\.crt "cert-manager-root" sha256 [0-9a-f]{64} is not in the trust anchor bundle/,
  );
  assert.match(await registry.metrics(), /^weft_identity_issuer_secret_ca_trusted 0$/m);
  assert.equal(reloader.current()?.origin, "secret weft/linkerd-identity-issuer@2");
});
