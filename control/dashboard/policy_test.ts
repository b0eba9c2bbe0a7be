import assert from "node:assert/strict";
import type { PodInfo } from "../../cli/kube_objects.ts";
import { CLUSTER_DEFAULT_POLICY, policyView } from "./policy.ts";

const pod = (name: string, labels: Record<string, string>): PodInfo => ({
  namespace: "d",
  name,
  labels,
  serviceAccount: "web",
  meshed: true,
  phase: "Running",
  owners: [],
});
const meta = (name: string, labels: Record<string, string> = {}) => ({
  metadata: { name, namespace: "d", labels },
});

const objects = {
  servers: [
    {
      ...meta("web-http"),
      spec: { podSelector: { matchLabels: { app: "web" } }, port: "http", proxyProtocol: "HTTP/1" },
    },
    { ...meta("api-http"), spec: { podSelector: { matchLabels: { app: "api" } }, port: 8080 } },
    { ...meta("all-admin", { tier: "x" }), spec: { podSelector: {}, port: 9990 } },
  ],
  authorizationPolicies: [
    {
      ...meta("web-from-load"),
      spec: {
        targetRef: { kind: "Server", name: "web-http" },
        requiredAuthenticationRefs: [{ kind: "MeshTLSAuthentication", name: "load" }],
      },
    },
    {
      ...meta("ns-wide"),
      spec: { targetRef: { kind: "Namespace", name: "d" }, requiredAuthenticationRefs: [] },
    },
    { ...meta("api-only"), spec: { targetRef: { kind: "Server", name: "api-http" } } },
    { ...meta("route-auth"), spec: { targetRef: { kind: "HTTPRoute", name: "web-get" } } },
  ],
  serverAuthorizations: [
    {
      ...meta("legacy"),
      spec: { server: { selector: { matchLabels: { tier: "x" } } }, client: { unauthenticated: true } },
    },
  ],
  httpRoutes: [{ ...meta("web-get"), spec: { parentRefs: [{ kind: "Server", name: "web-http" }] } }],
};

Deno.test("policy: the Servers selecting the pods, with what authorizes each (by Server, namespace, route, selector)", () => {
  const v = policyView(
    "d",
    [pod("web-1", { app: "web" }), pod("web-2", { app: "web" })],
    [{}, {}],
    {},
    objects,
  );
  assert.deepEqual(v.servers.map((s) => [s.name, s.port, s.pods]), [["all-admin", "9990", 2], [
    "web-http",
    "http",
    2,
  ]]);
  const web = v.servers.find((s) => s.name === "web-http")!;
  assert.deepEqual(web.authorizations.map((a) => a.name).sort(), ["ns-wide", "route-auth", "web-from-load"]);
  assert.deepEqual(web.authorizations.find((a) => a.name === "web-from-load")!.authentications, [
    "MeshTLSAuthentication/load",
  ]);
  assert.deepEqual(web.routes, ["web-get"]);
  const admin = v.servers.find((s) => s.name === "all-admin")!;
  assert.deepEqual(admin.authorizations.map((a) => [a.kind, a.name, a.authentications]), [
    ["AuthorizationPolicy (namespace)", "ns-wide", []],
    ["ServerAuthorization", "legacy", ["unauthenticated"]],
  ]);
});

Deno.test("policy: the default for ports without a Server — pod annotation, else namespace, else the cluster's", () => {
  const a = "config.linkerd.io/default-inbound-policy";
  const pods = [pod("p", { app: "none" })];
  assert.deepEqual(
    policyView("d", pods, [{ [a]: "deny" }], { [a]: "all-authenticated" }, objects).defaultPolicy.value,
    "deny",
  );
  assert.deepEqual(
    policyView("d", pods, [{}], { [a]: "all-authenticated" }, objects).defaultPolicy.value,
    "all-authenticated",
  );
  const v = policyView("d", pods, [{}], {}, objects);
  assert.equal(v.defaultPolicy.value, CLUSTER_DEFAULT_POLICY);
  assert.deepEqual(v.servers.map((s) => s.name), ["all-admin"]);
});
