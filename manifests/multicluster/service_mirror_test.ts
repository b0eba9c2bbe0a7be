import assert from "node:assert/strict";
import { parseServiceMirrorConfig } from "../../control/multicluster/config.ts";
import { objectPath } from "../kinds.ts";
import { serviceMirrorName, serviceMirrorObjects } from "./service_mirror.ts";

Deno.test("service mirror objects: names, RBAC and a Deployment whose command the component accepts", () => {
  const objs = serviceMirrorObjects({
    targetClusterName: "east",
    image: "localhost/weft:abc",
    imagePullPolicy: "Never",
  });
  assert.deepEqual(objs.map((o) => `${o.kind}/${o.metadata.name}`), [
    "ServiceAccount/weft-service-mirror-east",
    "ClusterRole/weft-service-mirror-east-access-local-resources",
    "ClusterRoleBinding/weft-service-mirror-east-access-local-resources",
    "Role/weft-service-mirror-east-read-link",
    "RoleBinding/weft-service-mirror-east-read-link",
    "Deployment/weft-service-mirror-east",
  ]);
  for (const o of objs) assert.ok(objectPath(o), `deploy knows ${o.kind}`);
  assert.equal(serviceMirrorName("east"), "weft-service-mirror-east");
  const role = objs[3] as unknown as { rules: { apiGroups: string[]; resources: string[] }[] };
  assert.deepEqual(role.rules.map((r) => r.resources), [["links"], ["secrets"]]);
  const dep = objs[5] as unknown as {
    metadata: { namespace: string };
    spec: { template: { spec: { containers: { image: string; command: string[] }[] } } };
  };
  assert.equal(dep.metadata.namespace, "weft-multicluster");
  const c = dep.spec.template.spec.containers[0];
  assert.equal(c.image, "localhost/weft:abc");
  assert.deepEqual(c.command.slice(0, 2), ["weft-control", "service_mirror"]);
  const config = parseServiceMirrorConfig(c.command.slice(2), {});
  assert.equal(config.linkName, "east");
  assert.equal(config.namespace, "weft-multicluster");
});
