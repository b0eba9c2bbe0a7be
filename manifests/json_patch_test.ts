import assert from "node:assert/strict";
import { applyJsonPatch } from "./json_patch.ts";

Deno.test("add inserts at an index or appends, replace swaps, escaped keys work, the input is untouched", () => {
  const doc = {
    metadata: { annotations: {} as Record<string, string> },
    spec: { containers: [{ name: "app" }] },
  };
  const out = applyJsonPatch(doc, [
    { op: "add", path: "/metadata/annotations/linkerd.io~1inject", value: "enabled" },
    { op: "add", path: "/spec/containers/0", value: { name: "proxy" } },
    { op: "add", path: "/spec/containers/-", value: { name: "last" } },
    { op: "replace", path: "/spec/containers/1/name", value: "main" },
  ]);
  assert.deepEqual(out, {
    metadata: { annotations: { "linkerd.io/inject": "enabled" } },
    spec: { containers: [{ name: "proxy" }, { name: "main" }, { name: "last" }] },
  });
  assert.deepEqual(doc.spec.containers, [{ name: "app" }]);
});

Deno.test("bad paths and ops are errors naming the path", () => {
  assert.throws(
    () => applyJsonPatch({}, [{ op: "add", path: "/spec/x", value: 1 }]),
    /"\/spec\/x": "spec" does not exist/,
  );
  assert.throws(
    () => applyJsonPatch({ a: [] }, [{ op: "add", path: "/a/3", value: 1 }]),
    /index out of range/,
  );
  assert.throws(
    () => applyJsonPatch({}, [{ op: "remove", path: "/a", value: 1 }]),
    /unsupported op "remove"/,
  );
  assert.throws(() => applyJsonPatch({}, [{ op: "replace", path: "/a", value: 1 }]), /does not exist/);
});
