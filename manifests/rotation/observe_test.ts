import assert from "node:assert/strict";
import { evaluateComponent, parseRotationMetrics } from "../check/rotation_state.ts";
import { viewOf } from "./observe.ts";

const A = "a".repeat(64), B = "b".repeat(64), I = "c".repeat(64);
const pod = { namespace: "app", name: "p", kind: "proxy" as const };

Deno.test("a proxy's view: the anchors it trusts and its leaf's issuer, whatever the wanted state", () => {
  const text = [
    `weft_identity_trust_anchor_expiration_timestamp_seconds{fingerprint_sha256="${B}",subject="root-new"} 2e9`,
    `weft_identity_trust_anchor_expiration_timestamp_seconds{fingerprint_sha256="${A}",subject="root"} 1.9e9`,
    `weft_identity_leaf_issuer_info{fingerprint_sha256="${I}",subject="identity.weft.cluster.local"} 1`,
  ].join("\n");
  // Behind for mesh:check (one anchor wanted), still plain facts for the rotation steps.
  const state = evaluateComponent(pod, parseRotationMetrics(text), {
    anchors: [{ fingerprint: A, subject: "" }],
  });
  assert.equal(state.status, "behind");
  assert.deepEqual(viewOf(state), { name: "app/p", kind: "proxy", anchors: [A, B], issuer: I });
});

Deno.test("a component without the metrics, unreachable, or with two issuers carries an error saying so", () => {
  const none = viewOf(
    evaluateComponent(pod, parseRotationMetrics("identity_cert_expiration_timestamp_seconds 1\n"), {
      anchors: [],
    }),
  );
  assert.match(none.error!, /no weft_identity_trust_anchor_expiration_timestamp_seconds/);
  const down = viewOf(evaluateComponent(pod, { error: "admin /metrics on 4191: HTTP 503" }, { anchors: [] }));
  assert.deepEqual(down, { name: "app/p", kind: "proxy", error: "admin /metrics on 4191: HTTP 503" });
  const two = viewOf(evaluateComponent(
    { ...pod, kind: "identity" },
    parseRotationMetrics(
      `weft_identity_trust_anchor_expiration_timestamp_seconds{fingerprint_sha256="${A}"} 1\n` +
        `weft_identity_issuer_info{fingerprint_sha256="${A}"} 1\nweft_identity_issuer_info{fingerprint_sha256="${B}"} 1\n`,
      "weft_identity_issuer_info",
    ),
    { anchors: [] },
  ));
  assert.equal(two.name, "app/p (identity)");
  assert.match(two.error!, /reports 2 issuers/);
  assert.equal(two.issuer, undefined);
});
