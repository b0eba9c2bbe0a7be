import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { spawnSync } from "node:child_process";
import { decodeDer } from "../../proto/support/der.ts";
import { x509 } from "../../proto/support/x509.ts";
import { buildCsr } from "./csr.ts";
import { generateLocalKey } from "./key_and_csr.ts";

const EC = { name: "ECDSA", namedCurve: "P-256", hash: "SHA-256" };
const NAME = "web.shop.serviceaccount.identity.linkerd.cluster.local";

function newKeys(): Promise<CryptoKeyPair> {
  return crypto.subtle.generateKey(EC, true, ["sign", "verify"]) as Promise<CryptoKeyPair>;
}

/** `openssl req -verify` on a DER CSR: whether the self-signature verified, and what it printed. */
function opensslVerify(der: Uint8Array, ...extra: string[]): { ok: boolean; out: string } {
  const r = spawnSync("openssl", ["req", "-inform", "DER", "-verify", "-noout", ...extra], {
    input: Buffer.from(der),
  });
  const out = `${r.stdout}${r.stderr}`;
  // openssl 3 exits 0 even when the signature does not verify: read its verdict.
  return { ok: r.status === 0 && /self-signature verify OK/.test(out), out };
}

Deno.test("the CSR is the one @peculiar/x509 builds for the same key, byte for byte up to the signature", async () => {
  const keys = await newKeys();
  const ours = await buildCsr(NAME, keys);
  const theirs = new Uint8Array(
    (await x509.Pkcs10CertificateRequestGenerator.create({
      name: [{ CN: [NAME] }],
      keys,
      signingAlgorithm: EC,
      extensions: [new x509.SubjectAlternativeNameExtension([{ type: "dns", value: NAME }])],
    })).rawData,
  );
  const [ourInfo, ourAlg] = decodeDer(ours).children!;
  const [theirInfo, theirAlg] = decodeDer(theirs).children!;
  assert.deepEqual(ourInfo.der, theirInfo.der, "CertificationRequestInfo");
  assert.deepEqual(ourAlg.der, theirAlg.der, "signatureAlgorithm");

  const parsed = new x509.Pkcs10CertificateRequest(Uint8Array.from(ours));
  assert.equal(parsed.subject, `CN=${NAME}`);
  const san = parsed.extensions.find((e): e is x509.SubjectAlternativeNameExtension =>
    e instanceof x509.SubjectAlternativeNameExtension
  );
  assert.deepEqual(san?.names.items.map((n) => [n.type, n.value]), [["dns", NAME]]);
  assert.equal(await parsed.verify(), true, "@peculiar/x509 verifies the self-signature");
});

Deno.test("openssl verifies the CSR's self-signature and reads CN and the one DNS SAN", async () => {
  const local = await generateLocalKey(NAME);
  const v = opensslVerify(local.csr, "-text");
  assert.ok(v.ok, v.out);
  assert.match(v.out, new RegExp(`Subject: CN ?= ?${NAME.replaceAll(".", "\\.")}\n`));
  assert.match(
    v.out,
    new RegExp(`X509v3 Subject Alternative Name: *\n *DNS:${NAME.replaceAll(".", "\\.")}\n`),
  );
  assert.match(v.out, /ASN1 OID: prime256v1/);
  assert.match(v.out, /Signature Algorithm: ecdsa-with-SHA256/);

  // The CSR carries the key generateLocalKey hands to the TLS layer.
  const spkiInCsr = decodeDer(local.csr).children![0].children![2].der;
  assert.deepEqual(spkiInCsr, local.spki);
  const pub = await crypto.subtle.importKey("spki", Uint8Array.from(local.spki), EC, true, ["verify"]);
  const priv = await crypto.subtle.importKey(
    "pkcs8",
    Uint8Array.from(atob(local.keyPem.replace(/-----[A-Z ]+-----|\s/g, "")), (c) => c.charCodeAt(0)),
    EC,
    false,
    ["sign"],
  );
  const probe = new Uint8Array([1, 2, 3]);
  assert.ok(await crypto.subtle.verify(EC, pub, await crypto.subtle.sign(EC, priv, probe), probe));

  // A flipped bit in the signed part no longer verifies (the check above can fail).
  const tampered = local.csr.slice();
  tampered[30] ^= 1;
  assert.equal(opensslVerify(tampered).ok, false);
});

Deno.test("a name that cannot be a DNS SAN is refused with a message naming it", async () => {
  const keys = await newKeys();
  await assert.rejects(buildCsr("", keys), /local identity name is empty/);
  await assert.rejects(buildCsr("wéb.example", keys), /"wéb\.example" is not printable ASCII/);
  await assert.rejects(buildCsr("a b", keys), /not printable ASCII/);
  // Outside PrintableString but ASCII: the CN becomes a UTF8String, which openssl still verifies.
  const v = opensslVerify(await buildCsr("a_b.example", keys), "-text");
  assert.ok(v.ok, v.out);
  assert.match(v.out, /DNS:a_b\.example/);
});
