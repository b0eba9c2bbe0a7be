import assert from "node:assert/strict";
import { collectionPath, ManifestError, objectPath, sortForApply } from "./kinds.ts";

const m = (apiVersion: string, kind: string, name: string, namespace?: string) => ({
  apiVersion,
  kind,
  metadata: { name, ...(namespace ? { namespace } : {}) },
});

Deno.test("object paths for core, grouped, namespaced and cluster-scoped kinds", () => {
  assert.equal(objectPath(m("v1", "Secret", "s", "weft")), "/api/v1/namespaces/weft/secrets/s");
  assert.equal(objectPath(m("v1", "Namespace", "weft")), "/api/v1/namespaces/weft");
  assert.equal(
    objectPath(m("apps/v1", "Deployment", "d", "weft")),
    "/apis/apps/v1/namespaces/weft/deployments/d",
  );
  assert.equal(
    objectPath(m("admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration", "w")),
    "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/w",
  );
  assert.equal(collectionPath(m("v1", "Pod", "x"), "default"), "/api/v1/namespaces/default/pods");
});

Deno.test("unknown kinds and misplaced namespaces are errors naming the object", () => {
  assert.throws(
    () => objectPath(m("v1", "Widget", "w")),
    (e: Error) => e instanceof ManifestError && /v1\/Widget/.test(e.message),
  );
  assert.throws(() => objectPath(m("v1", "Secret", "s")), /Secret s has no namespace/);
  assert.throws(() => objectPath(m("v1", "Namespace", "n", "x")), /cluster-scoped/);
});

Deno.test("apply order puts what others refer to first, stable within a kind", () => {
  const sorted = sortForApply([
    m("admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration", "v"),
    m("apps/v1", "Deployment", "d", "weft"),
    m("v1", "Service", "b", "weft"),
    m("v1", "Service", "a", "weft"),
    m("v1", "Secret", "s", "weft"),
    m("v1", "ServiceAccount", "sa", "weft"),
    m("v1", "Namespace", "weft"),
  ]);
  assert.deepEqual(sorted.map((x) => `${x.kind}/${x.metadata.name}`), [
    "Namespace/weft",
    "ServiceAccount/sa",
    "Secret/s",
    "Service/b",
    "Service/a",
    "Deployment/d",
    "ValidatingWebhookConfiguration/v",
  ]);
});

Deno.test("an object whose status or bookkeeping changed between two reads has the same content", async () => {
  const { sameContent } = await import("./kube.ts");
  const a = {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name: "d", resourceVersion: "1", generation: 1, labels: { a: "1", b: "2" } },
    spec: { replicas: 1 },
    status: { availableReplicas: 0 },
  };
  const b = {
    ...a,
    metadata: {
      name: "d",
      resourceVersion: "7",
      generation: 1,
      labels: { b: "2", a: "1" },
      managedFields: [],
    },
    status: { availableReplicas: 1 },
  };
  assert.ok(sameContent(a, b));
  assert.ok(!sameContent(a, { ...b, spec: { replicas: 2 } }));
  assert.ok(!sameContent(a, { ...b, metadata: { ...b.metadata, annotations: { x: "y" } } }));
});
