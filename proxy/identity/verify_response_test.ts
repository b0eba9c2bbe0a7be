import assert from "node:assert/strict";
import type { CertifyResponse } from "../../proto/gen_messages/identity.ts";
import { generateLocalKey } from "./key_and_csr.ts";
import { verifyCertifyResponse } from "./verify_response.ts";
import { parseCertificate } from "./cert_parse.ts";
import { x509 } from "../../proto/support/x509.ts";

const EC = { name: "ECDSA", namedCurve: "P-256", hash: "SHA-256" };
const NAME = "web.shop.serviceaccount.identity.linkerd.cluster.local";
const H = 3_600_000;

async function ca(name: string, now: number, signer?: { cert: x509.X509Certificate; keys: CryptoKeyPair }) {
  const keys = await crypto.subtle.generateKey(EC, true, ["sign", "verify"]) as CryptoKeyPair;
  const extensions = [new x509.BasicConstraintsExtension(true, undefined, true)];
  const validity = { notBefore: new Date(now - H), notAfter: new Date(now + 48 * H) };
  const cert = signer
    ? await x509.X509CertificateGenerator.create({
      serialNumber: "02",
      subject: `CN=${name}`,
      issuer: signer.cert.subject,
      ...validity,
      signingAlgorithm: EC,
      publicKey: keys.publicKey,
      signingKey: signer.keys.privateKey,
      extensions,
    })
    : await x509.X509CertificateGenerator.createSelfSigned({
      serialNumber: "01",
      name: `CN=${name}`,
      ...validity,
      signingAlgorithm: EC,
      keys,
      extensions,
    });
  return { cert, keys };
}

async function leafFor(
  issuer: { cert: x509.X509Certificate; keys: CryptoKeyPair },
  spkiKey: CryptoKey,
  dns: string,
  now: number,
) {
  return await x509.X509CertificateGenerator.create({
    serialNumber: "03",
    subject: `CN=${dns}`,
    issuer: issuer.cert.subject,
    notBefore: new Date(now - 60_000),
    notAfter: new Date(now + 24 * H),
    signingAlgorithm: EC,
    publicKey: spkiKey,
    signingKey: issuer.keys.privateKey,
    extensions: [new x509.SubjectAlternativeNameExtension([{ type: "dns", value: dns }])],
  });
}

Deno.test("a response is accepted only if it names us, carries our key, chains to an anchor and is valid now", async () => {
  const now = Date.now();
  const root = await ca("root", now);
  const issuer = await ca("issuer", now, root);
  const stranger = await ca("other-root", now);
  const local = await generateLocalKey(NAME);
  const ourKey = await crypto.subtle.importKey(
    "spki",
    Uint8Array.from(local.spki),
    { name: "ECDSA", namedCurve: "P-256" },
    true,
    ["verify"],
  );
  const otherKey = (await crypto.subtle.generateKey(EC, true, ["sign", "verify"]) as CryptoKeyPair).publicKey;
  const der = (c: x509.X509Certificate) => new Uint8Array(c.rawData);
  const good = await leafFor(issuer, ourKey, NAME, now);
  const resp = (
    leaf: x509.X509Certificate,
    inters = [issuer.cert],
    validUntil: number | null = now + 24 * H,
  ): CertifyResponse => ({
    leafCertificate: der(leaf),
    intermediateCertificates: inters.map(der),
    validUntil: validUntil === null
      ? undefined
      : { seconds: BigInt(Math.floor(validUntil / 1000)), nanos: 0 },
  });
  const anchor = (c: x509.X509Certificate) => parseCertificate(der(c));
  const expect = { localName: NAME, spki: local.spki, anchors: [anchor(root.cert)], now };

  const ok = verifyCertifyResponse(resp(good), expect);
  assert.equal(ok.expiresAt.getTime(), good.notAfter.getTime());
  assert.equal(ok.certChainPem.match(/BEGIN CERTIFICATE/g)?.length, 2);
  // Several anchors (rotation): any one of them will do.
  verifyCertifyResponse(resp(good), { ...expect, anchors: [anchor(stranger.cert), anchor(root.cert)] });

  const cases: [string, () => unknown, RegExp][] = [
    [
      "no valid_until",
      () => verifyCertifyResponse(resp(good, [issuer.cert], null), expect),
      /no valid_until/,
    ],
    [
      "valid_until in the past",
      () => verifyCertifyResponse(resp(good, [issuer.cert], now - 1000), expect),
      /is not in the future/,
    ],
    [
      "other name",
      async () => verifyCertifyResponse(resp(await leafFor(issuer, ourKey, "evil.example", now)), expect),
      /leaf names \["evil\.example"\], not the local identity/,
    ],
    [
      "other key",
      async () => verifyCertifyResponse(resp(await leafFor(issuer, otherKey, NAME, now)), expect),
      /does not carry this proxy's public key/,
    ],
    [
      "unknown anchor",
      () => verifyCertifyResponse(resp(good), { ...expect, anchors: [anchor(stranger.cert)] }),
      /chain ends at "CN=issuer".*not signed by any trust anchor/,
    ],
    [
      "missing intermediate",
      () => verifyCertifyResponse(resp(good, []), expect),
      /chain ends at "CN=web\..*not signed by any trust anchor/,
    ],
    [
      "leaf expired",
      () => verifyCertifyResponse(resp(good), { ...expect, now: now + 25 * H }),
      /expired at|is not in the future/,
    ],
    [
      "garbage leaf",
      () => verifyCertifyResponse({ ...resp(good), leafCertificate: new Uint8Array([1, 2, 3]) }, expect),
      /leaf is not a DER certificate/,
    ],
  ];
  for (const [name, p, re] of cases) await assert.rejects(async () => await p(), re, name);
});

Deno.test("chain checks name the certificate at fault: a forged or non-CA intermediate, a leaf not yet valid or not for TLS servers", async () => {
  const now = Date.now();
  const root = await ca("root", now);
  const issuer = await ca("issuer", now, root);
  // Same subject as the real issuer, different key: the name matches, the signature does not.
  const forger = await ca("issuer", now, root);
  const local = await generateLocalKey(NAME);
  const ourKey = await crypto.subtle.importKey("spki", Uint8Array.from(local.spki), EC, true, ["verify"]);
  const der = (c: x509.X509Certificate) => new Uint8Array(c.rawData);
  const resp = (leaf: x509.X509Certificate, inters: x509.X509Certificate[]): CertifyResponse => ({
    leafCertificate: der(leaf),
    intermediateCertificates: inters.map(der),
    validUntil: { seconds: BigInt(Math.floor(now / 1000) + 3600), nanos: 0 },
  });
  const expect = { localName: NAME, spki: local.spki, anchors: [parseCertificate(der(root.cert))], now };
  const signed = (by: { cert: x509.X509Certificate; keys: CryptoKeyPair }, opts: {
    subject: string;
    key: CryptoKey;
    extensions: x509.Extension[];
    notBefore?: number;
  }) =>
    x509.X509CertificateGenerator.create({
      serialNumber: "07",
      subject: opts.subject,
      issuer: by.cert.subject,
      notBefore: new Date(opts.notBefore ?? now - 60_000),
      notAfter: new Date(now + 24 * H),
      signingAlgorithm: EC,
      publicKey: opts.key,
      signingKey: by.keys.privateKey,
      extensions: opts.extensions,
    });
  const san = new x509.SubjectAlternativeNameExtension([{ type: "dns", value: NAME }]);
  const good = await leafFor(issuer, ourKey, NAME, now);
  verifyCertifyResponse(resp(good, [issuer.cert]), expect);

  const notCaKeys = await crypto.subtle.generateKey(EC, true, ["sign", "verify"]) as CryptoKeyPair;
  const notCa = {
    cert: await signed(root, { subject: "CN=plain", key: notCaKeys.publicKey, extensions: [] }),
    keys: notCaKeys,
  };
  const clientOnly = await signed(issuer, {
    subject: `CN=${NAME}`,
    key: ourKey,
    extensions: [san, new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.clientAuth])],
  });
  const early = await signed(issuer, {
    subject: `CN=${NAME}`,
    key: ourKey,
    extensions: [san],
    notBefore: now + H,
  });

  const cases: [string, () => unknown, RegExp][] = [
    [
      "forged intermediate",
      () => verifyCertifyResponse(resp(good, [forger.cert]), expect),
      /^CertifyResponseError: "CN=web\.shop\..*" is not signed by intermediate #1 "CN=issuer"$/,
    ],
    [
      "non-CA intermediate",
      async () => verifyCertifyResponse(resp(await leafFor(notCa, ourKey, NAME, now), [notCa.cert]), expect),
      /^CertifyResponseError: intermediate "CN=plain" is not a CA$/,
    ],
    [
      "client-only leaf",
      () => verifyCertifyResponse(resp(clientOnly, [issuer.cert]), expect),
      /extended key usage does not allow TLS server use/,
    ],
    [
      "leaf not yet valid",
      () => verifyCertifyResponse(resp(early, [issuer.cert]), expect),
      /^CertifyResponseError: leaf "CN=web\.shop\..*" is not valid before /,
    ],
  ];
  for (const [name, p, re] of cases) await assert.rejects(async () => await p(), re, name);
});
