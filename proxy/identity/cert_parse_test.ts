import assert from "node:assert/strict";
import { X509Certificate } from "node:crypto";
import { decodePem, toPem } from "../../proto/support/pem.ts";
import { x509 } from "../../proto/support/x509.ts";
import { startIdentityServer } from "../testing/identity_server.ts";
import {
  CertificateParseError,
  OID_SERVER_AUTH,
  parseCertificate,
  parseCertificateBundle,
  type ParsedCertificate,
} from "./cert_parse.ts";
import { createCertifyClient } from "./certify_client.ts";
import { generateLocalKey } from "./key_and_csr.ts";
import { verifyCertifyResponse } from "./verify_response.ts";

const NAME = "sa-a.ns-a.serviceaccount.identity.linkerd.cluster.local";
const EC = { name: "ECDSA", namedCurve: "P-256", hash: "SHA-256" };

/** The same fields read by node:crypto (Deno's Rust X.509 parser) and by @peculiar/x509. */
function assertSameAsLibraries(p: ParsedCertificate, what: string): void {
  const node = new X509Certificate(p.der);
  const lib = new x509.X509Certificate(Uint8Array.from(p.der));
  assert.equal(p.subjectText, lib.subject, `${what} subject`);
  assert.equal(p.issuerText, lib.issuer, `${what} issuer`);
  assert.equal(p.subjectText, node.subject.replaceAll("\n", ", "), `${what} subject (node)`);
  assert.equal(p.notBefore.getTime(), Date.parse(node.validFrom), `${what} notBefore`);
  assert.equal(p.notAfter.getTime(), Date.parse(node.validTo), `${what} notAfter`);
  assert.equal(p.notAfter.getTime(), lib.notAfter.getTime(), `${what} notAfter (lib)`);
  assert.deepEqual(
    p.spki,
    new Uint8Array(node.publicKey.export({ type: "spki", format: "der" })),
    `${what} key`,
  );
  const sans = (node.subjectAltName ?? "").split(", ").filter((s) => s.startsWith("DNS:")).map((s) =>
    s.slice(4)
  );
  assert.deepEqual(p.dnsNames, sans, `${what} DNS names`);
  assert.equal(p.isCa, node.ca, `${what} cA`);
  const eku = lib.getExtension(x509.ExtendedKeyUsageExtension);
  assert.deepEqual(
    p.extKeyUsage,
    eku ? [...eku.usages].map(String) : undefined,
    `${what} extended key usage`,
  );
  assert.equal(p.signatureAlgorithm, "ecdsa-with-SHA256");
}

Deno.test("certificates from the real identity issuer read as node:crypto and @peculiar/x509 read them", async () => {
  const dir = await Deno.makeTempDir({ prefix: "weft-cert-parse-" });
  const srv = await startIdentityServer(dir, ["tok-a=ns-a/sa-a"], "1h");
  const client = createCertifyClient({ svcAddr: `127.0.0.1:${srv.port}`, trustAnchorsPem: srv.anchorsPem });
  try {
    const local = await generateLocalKey(NAME);
    const res = await client.certify(
      { identity: NAME, token: new TextEncoder().encode("tok-a"), certificateSigningRequest: local.csr },
      5000,
    );
    const leaf = parseCertificate(res.leafCertificate);
    const [issuer] = res.intermediateCertificates.map((d) => parseCertificate(d));
    const [anchor] = parseCertificateBundle(srv.anchorsPem, "trust anchors");

    assertSameAsLibraries(leaf, "leaf");
    assertSameAsLibraries(issuer, "issuer");
    assertSameAsLibraries(anchor, "anchor");
    assert.deepEqual(leaf.dnsNames, [NAME]);
    assert.equal(leaf.subjectText, `CN=${NAME}`);
    assert.deepEqual(leaf.spki, local.spki);
    assert.deepEqual(leaf.extKeyUsage, [OID_SERVER_AUTH, "1.3.6.1.5.5.7.3.2"]);
    assert.equal(leaf.isCa, false);
    assert.equal(issuer.isCa, true);
    assert.equal(issuer.subjectText, "CN=identity.linkerd.cluster.local");
    assert.equal(anchor.subjectText, "CN=root.linkerd.cluster.local");
    assert.deepEqual(leaf.issuer, issuer.subject);
    assert.deepEqual(issuer.issuer, anchor.subject);

    const accepted = verifyCertifyResponse(res, {
      localName: NAME,
      spki: local.spki,
      anchors: [anchor],
      now: Date.now(),
    });
    assert.equal(accepted.expiresAt.getTime(), Date.parse(new X509Certificate(leaf.der).validTo));
    assert.deepEqual(
      decodePem(accepted.certChainPem, "CERTIFICATE", "chain"),
      [res.leafCertificate, ...res.intermediateCertificates].map((d) => Uint8Array.from(d)),
    );
  } finally {
    client.close();
    await srv.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("validity reads UTCTime and GeneralizedTime across the 1950/2050 switch, as node:crypto does", async () => {
  const keys = await crypto.subtle.generateKey(EC, true, ["sign", "verify"]) as CryptoKeyPair;
  const cases = [
    ["1950-01-01T00:00:00.000Z", "2049-12-31T23:59:59.000Z"], // both UTCTime
    ["2050-01-01T00:00:00.000Z", "9999-12-31T23:59:59.000Z"], // both GeneralizedTime
  ];
  for (const [from, to] of cases) {
    const cert = await x509.X509CertificateGenerator.createSelfSigned({
      serialNumber: "01",
      name: "CN=t, O=weft",
      notBefore: new Date(from),
      notAfter: new Date(to),
      signingAlgorithm: EC,
      keys,
    });
    const der = new Uint8Array(cert.rawData);
    const p = parseCertificate(der);
    assert.deepEqual([p.notBefore.toISOString(), p.notAfter.toISOString()], [from, to]);
    const node = new X509Certificate(der);
    assert.deepEqual(
      [p.notBefore.getTime(), p.notAfter.getTime()],
      [node.validFrom, node.validTo].map(Date.parse),
    );
    assert.equal(p.subjectText, "CN=t, O=weft");
    assert.deepEqual(p.dnsNames, []);
    assert.equal(p.extKeyUsage, undefined);
  }
});

Deno.test("truncated and corrupted certificates fail with CertificateParseError only", async () => {
  const keys = await crypto.subtle.generateKey(EC, true, ["sign", "verify"]) as CryptoKeyPair;
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: "01",
    name: "CN=t",
    notBefore: new Date(Date.now() - 1000),
    notAfter: new Date(Date.now() + 1000),
    signingAlgorithm: EC,
    keys,
    extensions: [
      new x509.BasicConstraintsExtension(true, 0, true),
      new x509.SubjectAlternativeNameExtension([{ type: "dns", value: "a.example" }, {
        type: "ip",
        value: "10.0.0.1",
      }]),
      new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
    ],
  });
  const der = new Uint8Array(cert.rawData);
  const p = parseCertificate(der);
  assert.deepEqual([p.dnsNames, p.isCa, p.extKeyUsage], [["a.example"], true, [OID_SERVER_AUTH]]);

  let failures = 0;
  const attempt = (input: Uint8Array, what: string) => {
    try {
      parseCertificate(input);
    } catch (e) {
      assert.ok(e instanceof CertificateParseError, `${what}: threw ${e}`);
      assert.ok((e as Error).message.length > 0, what);
      failures++;
    }
  };
  for (let n = 0; n < der.length; n++) attempt(der.subarray(0, n), `first ${n} bytes`);
  assert.equal(failures, der.length, "every truncation is refused");
  for (let i = 0; i < der.length * 8; i++) {
    const flipped = der.slice();
    flipped[i >> 3] ^= 1 << (i & 7);
    attempt(flipped, `bit ${i} flipped`);
  }
  for (let i = 0; i < 2000; i++) {
    attempt(crypto.getRandomValues(new Uint8Array(1 + (i % 300))), "random bytes");
  }

  const cases: [string, Uint8Array, RegExp][] = [
    ["empty", new Uint8Array(), /no data/],
    ["two fields", Uint8Array.from([0x30, 0x04, 0x30, 0x00, 0x30, 0x00]), /certificate has 2 fields, want 3/],
    ["indefinite length", Uint8Array.from([0x30, 0x80, 0x00, 0x00]), /indefinite length/],
  ];
  for (const [name, input, re] of cases) {
    assert.throws(
      () => parseCertificate(input),
      (e: unknown) => e instanceof CertificateParseError && re.test(e.message),
      name,
    );
  }
});

Deno.test("a bundle names the block that does not parse", () => {
  assert.throws(
    () => parseCertificateBundle("nothing here", "trust anchors"),
    /^CertificateParseError: trust anchors: no PEM CERTIFICATE block found$/,
  );
  const good = toPem(Uint8Array.from([0x30, 0x00]));
  assert.throws(
    () => parseCertificateBundle(good + good, "trust anchors"),
    /trust anchors: certificate #1 does not parse: certificate has 0 fields, want 3/,
  );
});
