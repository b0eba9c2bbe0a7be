import assert from "node:assert/strict";
import { PROXY_CONTAINER } from "../../control/injector/decision.ts";
import { TRUST_ROOTS_COPY_CONFIGMAP } from "../../proto/trust_roots.ts";
import { createIdentity } from "../certs.ts";
import type { Manifest } from "../kinds.ts";
import { TRUST_ROOTS_CONFIGMAP } from "../render.ts";
import {
  GATEWAY_ENV,
  GATEWAY_NAME,
  gatewayIdentity,
  installObjects,
  MC_NAMESPACE,
  parseIdentities,
  REMOTE_ACCESS_SA,
} from "./install.ts";
import { renderInstall } from "./install_run.ts";
import { factsFromInjector, injectorFlags, type MeshFacts } from "./mesh_facts.ts";

// deno-lint-ignore no-explicit-any
type Json = any;
const find = (ms: Manifest[], kind: string, name: string): Json =>
  ms.find((m) => m.kind === kind && m.metadata.name === name);

const params = {
  gateway: true,
  allowedIdentities: ["*"],
  controlPlaneNamespace: "weft",
  trustDomain: "cluster.local",
};

Deno.test("gateway identity follows <sa>.<ns>.serviceaccount.identity.<control ns>.<trust domain>", () => {
  assert.equal(
    gatewayIdentity("cluster.local"),
    "weft-gateway.weft-multicluster.serviceaccount.identity.weft.cluster.local",
  );
  assert.equal(
    gatewayIdentity("example.org", "cp"),
    "weft-gateway.weft-multicluster.serviceaccount.identity.cp.example.org",
  );
});

Deno.test("install objects: namespace for injection, remote access read-only, token Secret", () => {
  const ms = installObjects(params, TRUST_ROOTS_CONFIGMAP);
  const ns = find(ms, "Namespace", MC_NAMESPACE);
  assert.equal(ns.metadata.annotations["linkerd.io/inject"], "enabled");
  assert.ok(find(ms, "ServiceAccount", REMOTE_ACCESS_SA));
  const token = find(ms, "Secret", `${REMOTE_ACCESS_SA}-token`);
  assert.equal(token.type, "kubernetes.io/service-account-token");
  assert.equal(token.metadata.annotations["kubernetes.io/service-account.name"], REMOTE_ACCESS_SA);
  const role = find(ms, "ClusterRole", REMOTE_ACCESS_SA);
  const verbs = new Set(role.rules.flatMap((r: Json) => r.verbs));
  assert.deepEqual([...verbs].sort(), ["get", "list", "watch"], "read-only");
  const resources = role.rules.flatMap((r: Json) => r.resources).sort();
  assert.deepEqual(resources, [
    "configmaps",
    "endpoints",
    "endpointslices",
    "namespaces",
    "pods",
    "services",
  ]);
  assert.deepEqual(role.rules.find((r: Json) => r.resources.includes("configmaps")).resourceNames, [
    TRUST_ROOTS_CONFIGMAP,
  ]);
  const binding = find(ms, "ClusterRoleBinding", REMOTE_ACCESS_SA);
  assert.deepEqual(binding.subjects, [{
    kind: "ServiceAccount",
    name: REMOTE_ACCESS_SA,
    namespace: MC_NAMESPACE,
  }]);
});

Deno.test("install objects: gateway Service NodePorts, policy on 4143, --gateway=false leaves it out", () => {
  const ms = installObjects({
    ...params,
    allowedIdentities: ["a.b.serviceaccount.identity.weft.cluster.local"],
  }, "x");
  const svc = find(ms, "Service", GATEWAY_NAME);
  assert.equal(svc.spec.type, "NodePort");
  assert.deepEqual(
    svc.spec.ports.map((p: Json) => [p.name, p.port, p.nodePort]),
    [["mc-gateway", 4143, 30143], ["mc-probe", 4191, 30191]],
  );
  assert.equal(
    svc.metadata.annotations["mirror.linkerd.io/gateway-identity"],
    gatewayIdentity("cluster.local"),
  );
  assert.equal(find(ms, "Server", GATEWAY_NAME).spec.port, 4143);
  assert.deepEqual(find(ms, "MeshTLSAuthentication", GATEWAY_NAME).spec.identities, [
    "a.b.serviceaccount.identity.weft.cluster.local",
  ]);
  const authz = find(ms, "AuthorizationPolicy", GATEWAY_NAME);
  assert.equal(authz.spec.targetRef.name, GATEWAY_NAME);
  assert.equal(authz.spec.requiredAuthenticationRefs[0].kind, "MeshTLSAuthentication");
  assert.equal(find(ms, "Deployment", GATEWAY_NAME).spec.template.spec.serviceAccountName, GATEWAY_NAME);

  const flat = installObjects({ ...params, gateway: false }, "x");
  assert.deepEqual(flat.map((m) => m.kind), [
    "Namespace",
    "ServiceAccount",
    "Secret",
    "ClusterRole",
    "ClusterRoleBinding",
  ]);
});

Deno.test("--gateway-allowed-identities parsing", () => {
  assert.deepEqual(parseIdentities("*"), ["*"]);
  assert.deepEqual(parseIdentities("a.x, b.x"), ["a.x", "b.x"]);
  assert.throws(() => parseIdentities("a,,b"), /empty identity/);
});

Deno.test("mesh facts from the injector's flags", () => {
  const d = {
    spec: {
      template: {
        metadata: { annotations: { "weft.io/image-digest": "sha256:abc" } },
        spec: {
          containers: [{
            name: "proxy-injector",
            command: [
              "weft-control",
              "injector",
              "--controller-namespace=weft",
              "--cluster-domain=east.local",
              "--identity-trust-domain=cluster.local",
              "--proxy-image=localhost/weft:x1",
              "--image-pull-policy=Never",
            ],
          }],
        },
      },
    },
  };
  assert.equal(injectorFlags(d).get("cluster-domain"), "east.local");
  assert.deepEqual(factsFromInjector(d), {
    controlPlaneNamespace: "weft",
    trustDomain: "cluster.local",
    clusterDomain: "east.local",
    image: "localhost/weft:x1",
    imagePullPolicy: "Never",
    imageDigest: "sha256:abc",
    trustedGatewayIdentities: [],
  });
  const trusting = structuredClone(d);
  trusting.spec.template.spec.containers[0].command.push("--trusted-gateway-identities=a.b, c.d");
  assert.deepEqual(factsFromInjector(trusting).trustedGatewayIdentities, ["a.b", "c.d"]);
  assert.throws(() => factsFromInjector({ spec: {} }), /--proxy-image/);
});

Deno.test("renderInstall: the gateway's proxy is rendered in, in gateway mode, with the trust roots copy", async () => {
  const id =
    (await createIdentity({ namespace: "weft", trustDomain: "cluster.local", now: Date.now() })).material;
  const facts: MeshFacts = {
    controlPlaneNamespace: "weft",
    trustDomain: "cluster.local",
    clusterDomain: "cluster.local",
    image: "localhost/weft:t1",
    imagePullPolicy: "Never",
    nativeSidecars: true,
    anchorsPem: id.anchorsPem,
    trustedGatewayIdentities: [],
  };
  const ms = await renderInstall(facts, { gateway: true, allowedIdentities: ["*"] });
  const dep = find(ms, "Deployment", GATEWAY_NAME);
  const spec = dep.spec.template.spec;
  const all = [...(spec.initContainers ?? []), ...spec.containers];
  const proxy = all.find((c: Json) => c.name === PROXY_CONTAINER);
  assert.ok(proxy, "proxy rendered in");
  assert.equal(proxy.image, "localhost/weft:t1");
  assert.equal(proxy.env.find((e: Json) => e.name === GATEWAY_ENV)?.value, "true");
  const idle = spec.containers.find((c: Json) => c.name === "idle");
  assert.equal(idle.image, "localhost/weft:t1");
  assert.ok(
    spec.volumes.some((v: Json) => v.configMap?.name === TRUST_ROOTS_COPY_CONFIGMAP),
    "mounts the namespace's trust roots copy",
  );
  // Namespace first, the Deployment after the policy objects.
  const kinds = ms.map((m) => m.kind);
  assert.equal(kinds[0], "Namespace");
  assert.ok(kinds.indexOf("Server") < kinds.indexOf("Deployment"));
});
