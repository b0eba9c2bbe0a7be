import { assertEquals } from "./assert.ts";
import { CRD_OWNER_LABEL, decideCrdInstall } from "./gateway_crds.ts";

const NAME = "httproutes.gateway.networking.k8s.io";

Deno.test("Gateway API CRD: absent -> create", () => {
  assertEquals(decideCrdInstall(NAME, undefined, ["v1"]), { action: "create" });
});

Deno.test("Gateway API CRD: ours -> update", () => {
  const live = { metadata: { name: NAME, labels: { [CRD_OWNER_LABEL]: "weft" } } };
  assertEquals(decideCrdInstall(NAME, live, ["v1"]).action, "update");
});

Deno.test("Gateway API CRD: another owner's is never clobbered, and a missing version is reported", () => {
  const live = {
    metadata: { name: NAME, annotations: { "gateway.networking.k8s.io/bundle-version": "v0.8.0" } },
    spec: { versions: [{ name: "v1beta1", served: true }] },
  };
  assertEquals(decideCrdInstall(NAME, live, ["v1"]), {
    action: "skip",
    reason: `CRD ${NAME} was installed by v0.8.0; left unchanged`,
    warning: `CRD ${NAME} does not serve v1: the policy controller cannot watch those routes`,
  });
  const ok = { metadata: { name: NAME }, spec: { versions: [{ name: "v1", served: true }] } };
  assertEquals(decideCrdInstall(NAME, ok, ["v1"]), {
    action: "skip",
    reason: `CRD ${NAME} was installed by another owner; left unchanged`,
    warning: undefined,
  });
});
