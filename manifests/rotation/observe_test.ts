import assert from "node:assert/strict";
import { fingerprintsOf, identityView, proxyView } from "./observe.ts";

const A = "a".repeat(64), B = "b".repeat(64), I = "c".repeat(64);

Deno.test("a proxy's view: the anchors it trusts and its leaf's issuer, from the contract's metrics", () => {
  const text = [
    "# HELP weft_identity_trust_anchor_expiration_timestamp_seconds anchors",
    `weft_identity_trust_anchor_expiration_timestamp_seconds{fingerprint_sha256="${B}",subject="root-new"} 2e9`,
    `weft_identity_trust_anchor_expiration_timestamp_seconds{subject="root",fingerprint_sha256="${A}"} 1.9e9`,
    `weft_identity_leaf_issuer_info{fingerprint_sha256="${I}",subject="identity.weft.cluster.local"} 1`,
    `weft_identity_leaf_issuer_info_other{fingerprint_sha256="${A}"} 1`,
    "identity_cert_expiration_timestamp_seconds 1.8e9",
  ].join("\n");
  assert.deepEqual(proxyView("ns/p", text), { name: "ns/p", kind: "proxy", anchors: [A, B], issuer: I });
});

Deno.test("a view without the metrics, or with two issuers, carries an error naming what is missing", () => {
  const v = proxyView("ns/p", "identity_cert_expiration_timestamp_seconds 1\n");
  assert.match(
    v.error!,
    /no weft_identity_trust_anchor_expiration_timestamp_seconds and no weft_identity_leaf_issuer_info/,
  );
  const two = identityView(
    "weft/id",
    `weft_identity_trust_anchor_expiration_timestamp_seconds{fingerprint_sha256="${A}"} 1\n` +
      `weft_identity_issuer_info{fingerprint_sha256="${A}"} 1\nweft_identity_issuer_info{fingerprint_sha256="${B}"} 1\n`,
  );
  assert.match(two.error!, /reports 2 issuers in weft_identity_issuer_info/);
  assert.equal(two.issuer, undefined);
});

Deno.test("series with value 0 do not count (a gauge left behind at 0 is not a live issuer)", () => {
  const text =
    `weft_identity_issuer_info{fingerprint_sha256="${A}"} 0\nweft_identity_issuer_info{fingerprint_sha256="${B}"} 1\n`;
  assert.deepEqual(fingerprintsOf(text, "weft_identity_issuer_info"), [B]);
});
