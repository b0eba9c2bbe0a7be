import assert from "node:assert/strict";
import { formatResult, guarded } from "./result.ts";

Deno.test("result lines carry the outcome mark", () => {
  assert.equal(
    formatResult({ group: "cluster", name: "CRDs", outcome: "fail", detail: "x" }),
    "✗ cluster       CRDs: x",
  );
  assert.match(
    formatResult({ group: "data plane", name: "p", outcome: "warn", detail: "y" }),
    /^! data plane/,
  );
});

Deno.test("a check that throws is that check's failure, with the error's message", async () => {
  const r = await guarded("cluster", "CRDs", () => Promise.reject(new Error("forbidden: crds")));
  assert.deepEqual(r, { group: "cluster", name: "CRDs", outcome: "fail", detail: "forbidden: crds" });
});
