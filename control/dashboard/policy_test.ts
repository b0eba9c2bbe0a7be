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
  assert.deepEqual(web.routes, [{ kind: "HTTPRoute", group: "policy.linkerd.io", name: "web-get" }]);
  const admin = v.servers.find((s) => s.name === "all-admin")!;
  assert.deepEqual(admin.authorizations.map((a) => [a.kind, a.name, a.authentications]), [
    ["AuthorizationPolicy (namespace)", "ns-wide", []],
    ["ServerAuthorization", "legacy", ["unauthenticated"]],
  ]);
});

Deno.test("policy: Gateway API HTTPRoutes and GRPCRoutes on a Server count, and their AuthorizationPolicies", () => {
  const onWeb = { parentRefs: [{ group: "policy.linkerd.io", kind: "Server", name: "web-http" }] };
  const v = policyView("d", [pod("web-1", { app: "web" })], [{}], {}, {
    ...objects,
    authorizationPolicies: [
      ...objects.authorizationPolicies,
      {
        ...meta("gw-auth"),
        spec: { targetRef: { group: "gateway.networking.k8s.io", kind: "HTTPRoute", name: "gw-get" } },
      },
      { ...meta("grpc-auth"), spec: { targetRef: { kind: "GRPCRoute", name: "rpc" } } },
      // Names a GRPCRoute that is not there (only an HTTPRoute of that name): authorizes nothing.
      { ...meta("wrong-kind"), spec: { targetRef: { kind: "GRPCRoute", name: "gw-get" } } },
      // Names the policy.linkerd.io group, where no route of that name hangs on web-http.
      {
        ...meta("wrong-group"),
        spec: { targetRef: { group: "policy.linkerd.io", kind: "HTTPRoute", name: "gw-get" } },
      },
    ],
    gatewayHttpRoutes: [{ ...meta("gw-get"), spec: onWeb }, {
      ...meta("elsewhere"),
      spec: { parentRefs: [{ kind: "Service", name: "web" }] },
    }],
    grpcRoutes: [{ ...meta("rpc"), spec: onWeb }],
  });
  const web = v.servers.find((s) => s.name === "web-http")!;
  assert.deepEqual(web.routes, [
    { kind: "HTTPRoute", group: "policy.linkerd.io", name: "web-get" },
    { kind: "HTTPRoute", group: "gateway.networking.k8s.io", name: "gw-get" },
    { kind: "GRPCRoute", group: "gateway.networking.k8s.io", name: "rpc" },
  ]);
  const names = web.authorizations.map((a) => a.name).sort();
  assert.deepEqual(names, ["grpc-auth", "gw-auth", "ns-wide", "route-auth", "web-from-load"]);
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
