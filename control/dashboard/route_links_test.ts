// Which route page a `weft routes` row links to (assets/lib/route_links.js, plain JS served to the browser).
import assert from "node:assert/strict";
import { policyRouteHref, routeHref } from "./assets/lib/route_links.js";

Deno.test("routeHref: policy routes link to their kind's page in the parent's namespace", () => {
  assert.equal(
    routeHref({
      source: "policy-http",
      kind: "HTTPRoute",
      route: "web-split",
      namespace: "demo",
      parent: "svc/web:8080",
    }),
    "/namespaces/demo/httproutes/web-split",
  );
  assert.equal(
    routeHref({
      source: "policy-grpc",
      kind: "GRPCRoute",
      route: "list",
      namespace: "demo",
      parent: "svc/grpc:8080",
    }),
    "/namespaces/demo/grpcroutes/list",
  );
  assert.equal(
    routeHref({
      source: "inbound",
      kind: "HTTPRoute",
      route: "admin",
      namespace: "demo",
      parent: "server/web",
    }),
    "/namespaces/demo/httproutes/admin",
  );
});

Deno.test("routeHref: a consumer route in the client's namespace links there, not to its parent's", () => {
  assert.equal(
    routeHref({
      source: "policy-http",
      kind: "HTTPRoute",
      route: "timeouts",
      namespace: "backend",
      route_namespace: "frontend",
      parent: "svc/api:80",
    }),
    "/namespaces/frontend/httproutes/timeouts",
  );
});

Deno.test("routeHref: a profile route links to its profile, by authority, with the route named", () => {
  const row = {
    source: "profile",
    kind: "ServiceProfile",
    namespace: "demo",
    parent: "api.demo.svc.cluster.local:8080",
  };
  assert.equal(
    routeHref({ ...row, route: "GET /items/{id}" }),
    "/namespaces/demo/serviceprofiles/api.demo.svc.cluster.local?route=GET%20%2Fitems%2F%7Bid%7D",
  );
  assert.equal(
    routeHref({ ...row, route: "[DEFAULT]" }),
    "/namespaces/demo/serviceprofiles/api.demo.svc.cluster.local",
  );
});

Deno.test("routeHref: default routes and rows without a namespace link nowhere", () => {
  assert.equal(
    routeHref({ source: "policy-http", kind: "default", route: "http", namespace: "demo" }),
    undefined,
  );
  assert.equal(routeHref({ source: "policy-http", kind: "HTTPRoute", route: "x", namespace: "" }), undefined);
});

Deno.test("policyRouteHref: a Server's route links to its page with its API group", () => {
  assert.equal(
    policyRouteHref("demo", { kind: "GRPCRoute", group: "gateway.networking.k8s.io", name: "rpc" }),
    "/namespaces/demo/grpcroutes/rpc?group=gateway.networking.k8s.io",
  );
});
