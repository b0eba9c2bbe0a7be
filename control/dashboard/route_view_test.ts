import assert from "node:assert/strict";
import { conditionText, grpcMatchText, httpMatchText, routePolicy, routeView } from "./route_view.ts";

const gatewayRoute = {
  metadata: {
    name: "api-split",
    namespace: "demo",
    annotations: { "retry.linkerd.io/http": "5xx", "timeout.linkerd.io/response": "2s", "other.io/x": "y" },
  },
  spec: {
    parentRefs: [{ group: "core", kind: "Service", name: "api", port: 8080 }],
    rules: [
      {
        matches: [{
          path: { type: "PathPrefix", value: "/api" },
          method: "GET",
          headers: [{ name: "x-user", value: "a" }],
        }],
        backendRefs: [{ name: "api", port: 8080, weight: 90 }, {
          name: "api-v2",
          namespace: "other",
          port: 8080,
          weight: 10,
        }],
        timeouts: { request: "10s" },
      },
      { backendRefs: [{ name: "api", port: 8080 }] },
    ],
  },
  status: {
    parents: [{
      parentRef: { group: "core", kind: "Service", name: "api", port: 8080 },
      conditions: [{ type: "Accepted", status: "True", reason: "Accepted" }],
    }],
  },
};

Deno.test("routeView: a Gateway API HTTPRoute on a Service: parents, matches, backends, annotations", () => {
  const v = routeView("HTTPRoute", "gateway.networking.k8s.io", gatewayRoute, {
    servers: [],
    authorizationPolicies: [],
  });
  assert.equal(v.name, "api-split");
  assert.deepEqual(v.parents, [{
    kind: "Service",
    namespace: "demo",
    name: "api",
    port: 8080,
    text: "svc/api:8080",
    accepted: { status: "True", reason: "Accepted" },
  }]);
  assert.deepEqual(v.rules[0].matches, ["GET · PathPrefix /api · header x-user = a"]);
  assert.deepEqual(v.rules[0].backends.map((b) => [b.text, b.weight]), [["svc/api:8080", 90], [
    "svc/api-v2:8080 (other)",
    10,
  ]]);
  assert.deepEqual(v.rules[0].timeouts, ["request 10s"]);
  assert.deepEqual(v.rules[1].matches, ["PathPrefix /"], "no matches: every request");
  assert.equal(v.rules[1].backends[0].weight, 1, "the Gateway API's default weight");
  assert.deepEqual(v.annotations, { "retry.linkerd.io/http": "5xx", "timeout.linkerd.io/response": "2s" });
  assert.deepEqual(v.directions, ["outbound"]);
  assert.match(v.policy.note ?? "", /clients' proxies/);
});

Deno.test("routePolicy: a route on a Server gets the AuthorizationPolicies on the route, the Server or the namespace", () => {
  const route = {
    metadata: { name: "admin", namespace: "demo" },
    spec: { parentRefs: [{ group: "policy.linkerd.io", kind: "Server", name: "web-http" }] },
  };
  const ap = (name: string, targetRef: Record<string, string>, auth: string[] = []) => ({
    metadata: { name },
    spec: {
      targetRef,
      requiredAuthenticationRefs: auth.map((n) => ({ kind: "MeshTLSAuthentication", name: n })),
    },
  });
  const v = routeView("HTTPRoute", "policy.linkerd.io", route, {
    servers: [
      { metadata: { name: "web-http" }, spec: { port: "http", proxyProtocol: "HTTP/1" } },
      { metadata: { name: "unrelated" }, spec: { port: 9 } },
    ],
    authorizationPolicies: [
      ap("on-route", { group: "policy.linkerd.io", kind: "HTTPRoute", name: "admin" }, ["admins"]),
      ap("on-server", { kind: "Server", name: "web-http" }),
      ap("on-ns", { kind: "Namespace", name: "demo" }),
      ap("other-route", { kind: "HTTPRoute", name: "public" }),
      ap("other-server", { kind: "Server", name: "unrelated" }),
    ],
  });
  assert.deepEqual(v.directions, ["inbound"]);
  assert.deepEqual(v.policy.servers, [{ name: "web-http", port: "http", proxyProtocol: "HTTP/1" }]);
  assert.deepEqual(v.policy.authorizations.map((a) => [a.name, a.target, a.authentications]), [
    ["on-ns", "Namespace demo", []],
    ["on-route", "HTTPRoute admin", ["MeshTLSAuthentication/admins"]],
    ["on-server", "Server web-http", []],
  ]);
  assert.equal(v.policy.note, undefined);
  // A GRPCRoute is not targeted by a policy naming an HTTPRoute of the same name.
  const g = routePolicy("GRPCRoute", "admin", "demo", v.parents, {
    servers: [],
    authorizationPolicies: [ap("on-route", { kind: "HTTPRoute", name: "admin" })],
  });
  assert.deepEqual(g.authorizations, []);
});

Deno.test("match and condition texts: gRPC methods, header regexes, ServiceProfile conditions", () => {
  assert.equal(grpcMatchText({ method: { service: "demo.Echo", method: "Say" } }), "demo.Echo/Say");
  assert.equal(
    grpcMatchText({ headers: [{ name: "x", type: "RegularExpression", value: "a.*" }] }),
    "any method · header x ~ a.*",
  );
  assert.equal(
    httpMatchText({ path: { type: "Exact", value: "/x" }, queryParams: [{ name: "q", value: "1" }] }),
    "Exact /x · query q = 1",
  );
  assert.equal(
    conditionText({ all: [{ method: "GET" }, { not: { pathRegex: "/admin/.*" } }] }),
    "all(GET; not(path ~ /admin/.*))",
  );
  assert.equal(conditionText(undefined), "any request");
  const sp = routeView("ServiceProfile", "linkerd.io", {
    metadata: { name: "api.demo.svc.cluster.local", namespace: "demo" },
    spec: {
      routes: [{
        name: "GET /items",
        condition: { method: "GET", pathRegex: "/items" },
        isRetryable: true,
        timeout: "1s",
      }],
    },
  }, { servers: [], authorizationPolicies: [] });
  assert.deepEqual(sp.profileRoutes, [{
    name: "GET /items",
    condition: "GET · path ~ /items",
    retryable: true,
    timeout: "1s",
  }]);
  assert.deepEqual(sp.directions, ["profile"]);
});
