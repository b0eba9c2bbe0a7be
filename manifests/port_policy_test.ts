import assert from "node:assert/strict";
import {
  API_SERVER_AUTHN,
  apiServerAuthentication,
  DASHBOARD_PORT,
  firstAddress,
  guardedPortObjects,
  podNetworks,
  PodNetworksError,
  TAP_PORT,
} from "./port_policy.ts";

const node = (name: string, podCIDRs?: string[], podCIDR?: string) => ({
  metadata: { name },
  spec: { ...(podCIDRs ? { podCIDRs } : {}), ...(podCIDR ? { podCIDR } : {}) },
});

Deno.test("pod networks: every node's podCIDRs once (dual stack), hosts' first addresses as sources", () => {
  const p = podNetworks([
    node("a", ["10.244.0.0/24", "fd00:10:244::/64"]),
    node("b", ["10.244.1.0/24", "fd00:10:244:1::/64"]),
    node("c", undefined, "10.244.0.0/24"),
  ]);
  assert.deepEqual(p.networks, ["10.244.0.0/24", "fd00:10:244::/64", "10.244.1.0/24", "fd00:10:244:1::/64"]);
  assert.deepEqual(p.hostSources, ["10.244.0.1", "fd00:10:244::1", "10.244.1.1", "fd00:10:244:1::1"]);
});

Deno.test("pod networks: the flags win over the nodes; sources may be given empty", () => {
  const p = podNetworks([node("a", ["10.244.0.0/24"])], ["10.32.0.0/12"], []);
  assert.deepEqual(p, { networks: ["10.32.0.0/12"], hostSources: [] });
  assert.deepEqual(podNetworks([], ["10.32.0.0/12"]).hostSources, ["10.32.0.1"]);
});

Deno.test("pod networks: refusals name what is wrong", () => {
  assert.throws(
    () => podNetworks([node("a")]),
    (e: Error) => e instanceof PodNetworksError && e.message.includes("no node has spec.podCIDRs"),
  );
  assert.throws(
    () => podNetworks([node("a", ["10.244.0.0/33"])]),
    (e: Error) => e instanceof PodNetworksError && e.message.includes("node a spec.podCIDRs"),
  );
  assert.throws(
    () => podNetworks([], ["10.1.2.3"]),
    (e: Error) => e instanceof PodNetworksError && e.message.includes('--pod-networks: "10.1.2.3"'),
  );
  assert.throws(
    () => podNetworks([], []),
    (e: Error) => e instanceof PodNetworksError && e.message.includes("no network given"),
  );
  assert.throws(
    () => podNetworks([], ["10.0.0.0/8"], ["nope"]),
    (e: Error) => e instanceof PodNetworksError && e.message.includes("--api-server-sources"),
  );
});

Deno.test("first address of a network, masked first", () => {
  assert.deepEqual(firstAddress("10.244.0.0/16"), "10.244.0.1");
  assert.deepEqual(firstAddress("10.244.3.7/24"), "10.244.3.1");
  assert.deepEqual(firstAddress("fd00::/8"), "fd00::1");
});

Deno.test("API server authentication: all but the pod networks, per family, plus the host sources", () => {
  const a = apiServerAuthentication("weft", {
    networks: ["10.244.0.0/24", "fd00:10:244::/64", "10.244.1.0/24"],
    hostSources: ["10.244.0.1", "fd00:10:244::1"],
  });
  assert.deepEqual(a.kind, "NetworkAuthentication");
  assert.deepEqual(a.metadata.name, API_SERVER_AUTHN);
  assert.deepEqual(a.spec, {
    networks: [
      { cidr: "0.0.0.0/0", except: ["10.244.0.0/24", "10.244.1.0/24"] },
      { cidr: "::/0", except: ["fd00:10:244::/64"] },
      { cidr: "10.244.0.1/32" },
      { cidr: "fd00:10:244::1/128" },
    ],
  });
  const v4only = apiServerAuthentication("weft", { networks: ["10.244.0.0/16"], hostSources: [] });
  assert.deepEqual((v4only.spec as { networks: unknown[] }).networks[1], { cidr: "::/0" });
});

Deno.test("guarded port: a Server on the port and policies for the API server and the named clients", () => {
  const objs = guardedPortObjects("weft", TAP_PORT);
  assert.deepEqual(objs.map((o) => `${o.kind}/${o.metadata.name}`), [
    "Server/weft-tap-api",
    "AuthorizationPolicy/weft-tap-api-api-server",
    "MeshTLSAuthentication/weft-tap-api-clients",
    "AuthorizationPolicy/weft-tap-api-clients",
  ]);
  const [server, apiPolicy, mtls, clientPolicy] = objs;
  assert.deepEqual(server.spec, {
    podSelector: { matchLabels: { "linkerd.io/control-plane-component": "tap" } },
    port: 8089,
    proxyProtocol: "unknown",
  });
  const target = { group: "policy.linkerd.io", kind: "Server", name: "weft-tap-api" };
  assert.deepEqual(apiPolicy.spec, {
    targetRef: target,
    requiredAuthenticationRefs: [{
      group: "policy.linkerd.io",
      kind: "NetworkAuthentication",
      name: API_SERVER_AUTHN,
    }],
  });
  assert.deepEqual(mtls.spec, { identityRefs: [{ kind: "ServiceAccount", name: "weft-dashboard" }] });
  assert.deepEqual((clientPolicy.spec as { targetRef: unknown }).targetRef, target);
  assert.deepEqual(objs.every((o) => o.metadata.namespace === "weft"), true);
  assert.deepEqual(guardedPortObjects("weft", { ...TAP_PORT, clientServiceAccounts: [] }).length, 2);
});

Deno.test("dashboard port: a Server on 8084 and only the API server's policy (no meshed client may borrow it)", () => {
  const objs = guardedPortObjects("weft", DASHBOARD_PORT);
  assert.deepEqual(objs.map((o) => `${o.kind}/${o.metadata.name}`), [
    "Server/weft-dashboard-web",
    "AuthorizationPolicy/weft-dashboard-web-api-server",
  ]);
  const server = objs[0] as unknown as { spec: { port: number; podSelector: unknown } };
  assert.equal(server.spec.port, 8084);
  assert.deepEqual(server.spec.podSelector, {
    matchLabels: { "linkerd.io/control-plane-component": "dashboard" },
  });
});
