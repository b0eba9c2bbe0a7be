import assert from "node:assert/strict";
import type { PromRangeSeries } from "../../cli/prometheus.ts";
import { routeDirections, routeDirectionSeries, routeQueries, type RouteRef } from "./route_series.ts";

const g = { start: 1000, step: 10, count: 3 };
const http: RouteRef = {
  kind: "HTTPRoute",
  namespace: "demo",
  name: "api-route",
  group: "gateway.networking.k8s.io",
};

function s(metric: Record<string, string>, values: [number, number][]): PromRangeSeries {
  return { metric, values };
}

Deno.test("routeQueries: outbound policy routes read Linkerd's outbound route families by route labels", () => {
  const q = routeQueries(http, "outbound", "30s");
  assert.equal(
    q.responses,
    'sum(increase(outbound_http_route_request_statuses_total{route_kind="HTTPRoute", route_name="api-route", ' +
      'route_namespace="demo", route_group="gateway.networking.k8s.io"}[30s])) by (http_status, error)',
  );
  assert.match(
    q.p99,
    /^histogram_quantile\(0\.99, sum\(rate\(outbound_http_route_request_duration_seconds_bucket\{/,
  );
  assert.match(q.p99, /\[30s\]\)\) by \(le\)\) \* 1000$/, "seconds to ms");
  const grpc = routeQueries({ kind: "GRPCRoute", namespace: "demo", name: "list" }, "outbound", "30s");
  assert.match(grpc.responses, /^sum\(increase\(outbound_grpc_route_request_statuses_total\{/);
  assert.match(grpc.responses, /by \(grpc_status, error\)$/);
  assert.doesNotMatch(grpc.responses, /route_group/, "no group filter when the group is not known");
});

Deno.test("routeQueries: inbound routes and ServiceProfile routes", () => {
  const i = routeQueries(http, "inbound", "60s");
  assert.equal(
    i.responses,
    'sum(increase(response_total{direction="inbound", namespace="demo", route_kind="HTTPRoute", ' +
      'route_name="api-route"}[60s])) by (classification)',
  );
  const p = routeQueries(
    { kind: "ServiceProfile", namespace: "demo", name: "api.demo.svc.cluster.local", rtRoute: 'GET "/x"' },
    "profile",
    "30s",
  );
  assert.equal(
    p.responses,
    'sum(increase(route_response_total{direction="outbound", dst=~"api\\\\.demo\\\\.svc\\\\.cluster\\\\.local(:\\\\d+)?", ' +
      'rt_route="GET \\"/x\\""}[30s])) by (classification)',
  );
  assert.throws(() => routeQueries(http, "profile", "30s"), /no profile series/);
});

Deno.test("routeDirectionSeries: statuses are classified as weft routes does, then RPS and success per step", () => {
  const answers = {
    responses: [
      s({ http_status: "200", error: "" }, [[1000, 27], [1010, 30]]),
      s({ http_status: "404", error: "" }, [[1000, 3]]), // a 4xx is a success for the route, as in weft routes
      s({ http_status: "503", error: "" }, [[1010, 10]]),
      s({ http_status: "", error: "FAIL_FAST" }, [[1010, 20]]),
    ],
    p50: [s({}, [[1000, 12], [1010, NaN]])],
    p95: [],
    p99: [s({}, [[1010, Infinity]])],
  };
  const d = routeDirectionSeries(http, "outbound", answers, g, 30);
  assert.deepEqual(d.rps, [1, 2, null]);
  assert.deepEqual(d.success, [1, 0.5, null]);
  assert.deepEqual(d.p50, [12, null, null]);
  assert.deepEqual(d.p95, [null, null, null]);
  assert.deepEqual(d.p99, [null, null, null], "+Inf is a gap");
  const grpc = routeDirectionSeries(
    { kind: "GRPCRoute", namespace: "demo", name: "list" },
    "outbound",
    {
      ...answers,
      responses: [s({ grpc_status: "OK" }, [[1000, 3]]), s({ grpc_status: "UNAVAILABLE" }, [[1000, 1]])],
    },
    g,
    1,
  );
  assert.deepEqual(grpc.success, [0.75, null, null]);
});

Deno.test("routeDirections: from the parents' kinds", () => {
  assert.deepEqual(routeDirections("HTTPRoute", ["Service"]), ["outbound"]);
  assert.deepEqual(routeDirections("HTTPRoute", ["Server"]), ["inbound"]);
  assert.deepEqual(routeDirections("GRPCRoute", ["Server", "Service"]), ["outbound", "inbound"]);
  assert.deepEqual(routeDirections("HTTPRoute", []), ["outbound"]);
  assert.deepEqual(routeDirections("ServiceProfile", []), ["profile"]);
});
