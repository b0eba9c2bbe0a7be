import assert from "node:assert/strict";
import { parseTarget } from "./kinds.ts";
import { foldRoutes, isSuccess, renderRoutes, routeQueries } from "./routes.ts";

Deno.test("routes: queries per source, filtered by the parent Service and the client workload", () => {
  const q = routeQueries({ service: parseTarget("svc/web", "demo"), window: "1m" });
  assert.equal(
    q["policy-http:statuses"],
    'sum(increase(outbound_http_route_request_statuses_total{parent_kind="Service", parent_namespace="demo", ' +
      'parent_name="web"}[1m])) by (parent_kind, parent_namespace, parent_name, parent_port, route_kind, ' +
      "route_namespace, route_name, http_status, error)",
  );
  assert.match(
    q["policy-grpc:0.99"],
    /^histogram_quantile\(0\.99, sum\(rate\(outbound_grpc_route_request_duration_seconds_bucket\{/,
  );
  assert.match(q["policy-grpc:0.99"], /\) \* 1000$/);
  assert.match(q["profile:statuses"], /dst=~"web\\\\\.demo\\\\\.svc\\\\\.cluster\\\\\.local\(:\\\\d\+\)\?"/);
  assert.equal(q["inbound:statuses"], undefined, "a Service has no inbound routes of its own");
  const w = routeQueries({ workload: parseTarget("deploy/web", "demo"), window: "30s" });
  assert.match(w["policy-http:statuses"], /\{namespace="demo", deployment="web"\}\[30s\]/);
  assert.match(
    w["inbound:statuses"],
    /response_total\{direction="inbound", namespace="demo", deployment="web", route_name!=""\}/,
  );
});

Deno.test("routes: success is no error and no 5xx (HTTP), OK (gRPC), or the proxy's classification", () => {
  assert.ok(isSuccess("policy-http", { http_status: "404", error: "" }));
  assert.ok(!isSuccess("policy-http", { http_status: "500", error: "" }));
  assert.ok(!isSuccess("policy-http", { http_status: "", error: "FAIL_FAST" }));
  assert.ok(isSuccess("policy-grpc", { grpc_status: "OK", error: "" }));
  assert.ok(!isSuccess("policy-grpc", { grpc_status: "UNKNOWN", error: "" }));
  assert.ok(isSuccess("profile", { classification: "success" }));
});

Deno.test("routes: a route whose backend is invalid shows its failing share next to a healthy one", () => {
  const parent = {
    parent_kind: "Service",
    parent_namespace: "demo",
    parent_name: "web",
    parent_port: "8080",
  };
  const rt = (name: string) => ({
    ...parent,
    route_kind: "HTTPRoute",
    route_namespace: "demo",
    route_name: name,
  });
  const rows = foldRoutes({
    "policy-http:statuses": [
      { metric: { ...rt("books"), http_status: "200", error: "" }, value: 290 },
      { metric: { ...rt("books"), http_status: "500", error: "" }, value: 10 },
      { metric: { ...rt("broken"), http_status: "500", error: "" }, value: 60 },
      { metric: { ...rt("idle"), http_status: "200", error: "" }, value: 0 },
    ],
    "policy-http:0.5": [{ metric: rt("books"), value: 25 }],
    "profile:statuses": [{
      metric: { dst: "web.demo.svc.cluster.local:8080", rt_route: "GET /", classification: "success" },
      value: 30,
    }],
  }, 60);
  assert.deepEqual(rows.map((r) => [r.route, r.success, r.rps]), [
    ["books", 290 / 300, 5],
    ["broken", 0, 1],
    ["GET /", 1, 0.5],
  ]);
  const table = renderRoutes(rows, false);
  assert.match(table, /^broken\s+HTTPRoute\s+svc\/web:8080\s+0\.00%\s+1\.0rps/m);
  // Inside the first bucket (50 ms) of the route histogram a quantile is only a bound.
  assert.match(table, /^books\s+HTTPRoute\s+svc\/web:8080\s+96\.67%\s+5\.0rps\s+≤50ms\s+-\s+-$/m);
  assert.match(table, /^GET \/\s+ServiceProfile\s+web\.demo\.svc\.cluster\.local:8080\s+100\.00%/m);
});

Deno.test("foldRoutes: a consumer route keeps its own namespace beside its parent's", () => {
  const metric = {
    parent_kind: "Service",
    parent_namespace: "backend",
    parent_name: "api",
    parent_port: "80",
    route_kind: "HTTPRoute",
    route_namespace: "frontend",
    route_name: "timeouts",
    http_status: "200",
    error: "",
  };
  const [consumer] = foldRoutes({ "policy-http:statuses": [{ metric, value: 60 }] }, 60);
  assert.equal(consumer.namespace, "backend");
  assert.equal(consumer.route_namespace, "frontend");
  const [producer] = foldRoutes({
    "policy-http:statuses": [{ metric: { ...metric, route_namespace: "backend" }, value: 60 }],
  }, 60);
  assert.equal(producer.route_namespace, undefined, "a producer route needs no second namespace");
});
