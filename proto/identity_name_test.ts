import assert from "node:assert/strict";
import {
  formatWorkloadIdentity,
  parseServiceAccountUsername,
  parseWorkloadIdentity,
  serviceAccountUsername,
} from "./identity_name.ts";

Deno.test("workload identity is <sa>.<ns>.serviceaccount.identity.<cp-ns>.<trust-domain>", () => {
  const name = formatWorkloadIdentity({
    serviceAccount: "web",
    namespace: "shop",
    controlPlaneNamespace: "weft",
    trustDomain: "cluster.local",
  });
  assert.equal(name, "web.shop.serviceaccount.identity.weft.cluster.local");
  assert.deepEqual(parseWorkloadIdentity(name, "weft", "cluster.local"), {
    serviceAccount: "web",
    namespace: "shop",
    controlPlaneNamespace: "weft",
    trustDomain: "cluster.local",
  });
});

Deno.test("workload identity rejects bad labels and foreign meshes with a reason", () => {
  assert.throws(
    () =>
      formatWorkloadIdentity({
        serviceAccount: "Web",
        namespace: "shop",
        controlPlaneNamespace: "weft",
        trustDomain: "cluster.local",
      }),
    /service account "Web": label "Web" must consist of lower-case/,
  );
  assert.throws(
    () =>
      parseWorkloadIdentity(
        "web.shop.serviceaccount.identity.linkerd.cluster.local",
        "weft",
        "cluster.local",
      ),
    /does not end with ".serviceaccount.identity.weft.cluster.local"/,
  );
  assert.throws(
    () =>
      parseWorkloadIdentity("a.web.shop.serviceaccount.identity.weft.cluster.local", "weft", "cluster.local"),
    /got 3 labels/,
  );
});

Deno.test("ServiceAccount usernames map both ways", () => {
  assert.equal(serviceAccountUsername("shop", "web"), "system:serviceaccount:shop:web");
  assert.deepEqual(parseServiceAccountUsername("system:serviceaccount:shop:web"), {
    namespace: "shop",
    serviceAccount: "web",
  });
  assert.equal(parseServiceAccountUsername("system:node:n1"), undefined);
  assert.equal(parseServiceAccountUsername("system:serviceaccount:shop"), undefined);
});
