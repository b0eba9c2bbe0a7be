import assert from "node:assert/strict";
import { agrees, type Case, CaseError, parseCases, SERVED, uncovered } from "./verdicts.ts";

const doc = (verdict: string, extra = "") =>
  `apiVersion: policy.linkerd.io/v1alpha1
kind: NetworkAuthentication
metadata:
  name: n
  annotations: { compat.weft.io/linkerd: ${verdict}${extra} }
spec: { networks: [] }
`;

Deno.test("verdicts: a case carries Linkerd's verdict and, for a refusal, the text weft must name", () => {
  const [c] = parseCases("f.yaml", doc("refuse", ', compat.weft.io/message: "spec.networks: at least"'));
  assert.equal(c.verdict, "refuse");
  assert.equal(c.message, "spec.networks: at least");
  assert.equal(c.kind, "NetworkAuthentication");
  assert.equal(c.setup, false);
});

Deno.test("verdicts: a document without a verdict, or a refusal without its message, is refused", () => {
  assert.throws(() => parseCases("f.yaml", doc("maybe")), CaseError);
  assert.throws(() => parseCases("f.yaml", doc("refuse")), /needs compat.weft.io\/message/);
});

Deno.test("verdicts: a refusal's message may not be one bare word, which refusals for other reasons contain too", () => {
  for (const loose of ["port", "rule", "network", "7000", "identity.requestsPerSecond"]) {
    assert.throws(
      () => parseCases("f.yaml", doc("refuse", `, compat.weft.io/message: "${loose}"`)),
      /one bare word/,
    );
  }
  const [c] = parseCases("f.yaml", doc("refuse", ', compat.weft.io/message: "spec.port: Required value"'));
  assert.equal(c.message, "spec.port: Required value");
});

Deno.test("verdicts: a refusal agrees only when weft's message names the reason", () => {
  const [c] = parseCases("f.yaml", doc("refuse", ', compat.weft.io/message: "Spec.Networks: at least"'));
  assert.equal(agrees(c, { ok: false, message: "spec.networks: at least one network" }).agree, true);
  assert.equal(agrees(c, { ok: false, message: "no matches for kind" }).agree, false);
  assert.equal(agrees(c, { ok: true }).agree, false);
  const [a] = parseCases("f.yaml", doc("accept"));
  assert.equal(agrees(a, { ok: true }).agree, true);
  assert.equal(agrees(a, { ok: false, message: "x" }).agree, false);
});

Deno.test("verdicts: coverage counts only accepted cases", () => {
  const [refused] = parseCases("f.yaml", doc("refuse", ', compat.weft.io/message: "spec.x: y"'));
  const [accepted] = parseCases("f.yaml", doc("accept"));
  const missing = (cs: Case[]) => uncovered(cs).includes("policy.linkerd.io/v1alpha1/NetworkAuthentication");
  assert.equal(missing([refused]), true);
  assert.equal(missing([accepted]), false);
  assert.equal(uncovered([accepted]).length, SERVED.length - 1);
});
