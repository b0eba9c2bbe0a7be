import assert from "node:assert/strict";
import { KINDS } from "./kinds.ts";
import { meshedCount, objectInfo, podInfo, podsOf, selects, workloadOf } from "./kube_objects.ts";

const pod = (
  name: string,
  labels: Record<string, string>,
  meshed: boolean,
  phase = "Running",
  owner?: string,
) =>
  podInfo({
    metadata: {
      name,
      namespace: "a",
      labels,
      ownerReferences: owner ? [{ kind: "ReplicaSet", name: owner }] : [],
    },
    spec: {
      serviceAccountName: "web",
      containers: [{ name: "app" }],
      initContainers: meshed ? [{ name: "linkerd-proxy" }] : [],
    },
    status: { phase, podIP: "10.0.0.1" },
  });

Deno.test("kube objects: label selectors as the API matches them", () => {
  const l = { app: "web", tier: "front" };
  assert.ok(selects({ matchLabels: { app: "web" } }, l));
  assert.ok(!selects({ matchLabels: { app: "api" } }, l));
  assert.ok(selects({ matchExpressions: [{ key: "tier", operator: "In", values: ["front", "x"] }] }, l));
  assert.ok(!selects({ matchExpressions: [{ key: "tier", operator: "NotIn", values: ["front"] }] }, l));
  assert.ok(selects({ matchExpressions: [{ key: "gone", operator: "DoesNotExist" }] }, l));
  assert.ok(!selects({ matchExpressions: [{ key: "gone", operator: "Exists" }] }, l));
  assert.ok(!selects({ matchExpressions: [{ key: "app", operator: "Weird" }] }, l));
});

Deno.test("kube objects: MESHED counts live pods with the proxy (a native sidecar counts)", () => {
  const pods = [
    pod("web-1", { app: "web", "pod-template-hash": "abc" }, true, "Running", "web-abc"),
    pod("web-2", { app: "web" }, false),
    pod("web-3", { app: "web" }, true, "Succeeded"),
    pod("api-1", { app: "api" }, true),
  ];
  const deploy = objectInfo({
    kind: "Deployment",
    metadata: { name: "web", namespace: "a" },
    spec: { selector: { matchLabels: { app: "web" } } },
  });
  assert.deepEqual(meshedCount(podsOf(KINDS[0], deploy, pods)), { meshed: 1, total: 2 });
  const svc = objectInfo({
    kind: "Service",
    metadata: { name: "api", namespace: "a" },
    spec: { selector: { app: "api" }, clusterIP: "10.96.0.9", ports: [] },
  });
  assert.deepEqual(svc.clusterIPs, ["10.96.0.9"]);
  assert.deepEqual(meshedCount(podsOf(KINDS.find((k) => k.label === "service")!, svc, pods)), {
    meshed: 1,
    total: 1,
  });
  const ns = objectInfo({ kind: "Namespace", metadata: { name: "a" }, spec: {} });
  assert.deepEqual(meshedCount(podsOf(KINDS.find((k) => k.label === "namespace")!, ns, pods)), {
    meshed: 2,
    total: 3,
  });
  assert.deepEqual(workloadOf(pods[0]), { kind: "deployment", name: "web" });
  assert.deepEqual(workloadOf(pods[1]), { kind: "pod", name: "web-2" });
});
