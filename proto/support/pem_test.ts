import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { execFileSync } from "node:child_process";
import { decodePem, PemError, toPem } from "./pem.ts";

Deno.test("toPem writes what openssl reads, and decodePem reads what openssl writes", () => {
  const der = crypto.getRandomValues(new Uint8Array(1000));
  const pem = toPem(der, "TEST DATA");
  assert.match(
    pem,
    /^-----BEGIN TEST DATA-----\n([A-Za-z0-9+/=]{64}\n)+[A-Za-z0-9+/=]{1,64}\n-----END TEST DATA-----\n$/,
  );
  const viaOpenssl = execFileSync("openssl", ["base64", "-d"], {
    input: pem.split("\n").filter((l) => !l.startsWith("-----")).join("\n") + "\n",
  });
  assert.deepEqual(new Uint8Array(viaOpenssl), der);

  const key = execFileSync("openssl", ["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256"]);
  const keyDer = execFileSync("openssl", ["pkcs8", "-topk8", "-nocrypt", "-outform", "DER"], { input: key });
  assert.deepEqual(decodePem(key.toString(), "PRIVATE KEY", "key"), [new Uint8Array(keyDer)]);
  assert.equal(toPem(new Uint8Array(keyDer), "PRIVATE KEY"), key.toString());
});

Deno.test("decodePem returns every block with its label in order, ignoring text around them", () => {
  const a = new Uint8Array([1, 2, 3]), b = new Uint8Array([4, 5, 6, 7]);
  const bundle = `# anchors\n${toPem(a)}junk between\n${toPem(b, "PRIVATE KEY")}${
    toPem(b).replaceAll("\n", "\r\n")
  }`;
  assert.deepEqual(decodePem(bundle, "CERTIFICATE", "bundle"), [a, b]);
  assert.deepEqual(decodePem(bundle, "PRIVATE KEY", "bundle"), [b]);
  assert.deepEqual(new Uint8Array(Buffer.from(toPem(a).split("\n")[1], "base64")), a);
});

Deno.test("decodePem names what is wrong", () => {
  const cases: [string, string, RegExp][] = [
    ["no block", "hello", /^anchors: no PEM CERTIFICATE block found$/],
    ["other label only", toPem(new Uint8Array([1]), "PRIVATE KEY"), /no PEM CERTIFICATE block found/],
    [
      "bad base64",
      `${toPem(new Uint8Array([1]))}-----BEGIN CERTIFICATE-----\nnot*base64\n-----END CERTIFICATE-----\n`,
      /^anchors: PEM CERTIFICATE block #2 is not valid base64$/,
    ],
    ["empty block", "-----BEGIN CERTIFICATE-----\n-----END CERTIFICATE-----", /block #1 is not valid base64/],
    [
      "bad padding",
      "-----BEGIN CERTIFICATE-----\nAQI\n-----END CERTIFICATE-----",
      /block #1 is not valid base64/,
    ],
  ];
  for (const [name, text, re] of cases) {
    assert.throws(
      () => decodePem(text, "CERTIFICATE", "anchors"),
      (e: unknown) => e instanceof PemError && re.test(e.message),
      name,
    );
  }
});
