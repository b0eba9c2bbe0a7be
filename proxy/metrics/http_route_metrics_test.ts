import assert from "node:assert/strict";
import { Registry } from "./registry.ts";
import { hostOf, HttpRouteMetrics, routeErrorLabel } from "./http_route_metrics.ts";
import { HeaderList } from "../http/message.ts";
import { metric } from "../testing/poll.ts";

const PARENT = { group: "core", kind: "Service", namespace: "ns", name: "web", port: 80 };
const ROUTE = { group: "gateway.networking.k8s.io", kind: "HTTPRoute", namespace: "ns", name: "r" };
const BACKEND = { group: "core", kind: "Service", namespace: "ns", name: "web-v2", port: 8080 };
const NO_HEADERS = new HeaderList();

Deno.test("route metrics: request duration and statuses per parent, route and hostname", async () => {
  const registry = new Registry();
  const m = new HttpRouteMetrics(registry);
  const s = m.route(PARENT, ROUTE, hostOf("Web.NS.svc.cluster.local:80"), false);
  assert.equal(m.route(PARENT, ROUTE, "web.ns.svc.cluster.local", false), s, "one series per label set");
  s.recordResponse(200, undefined, NO_HEADERS, 0.01);
  s.recordResponse(200, undefined, NO_HEADERS, 0.7);
  s.recordResponse(503, undefined, NO_HEADERS, 20);
  s.recordError({ reason: "failfast" }, 0.002);
  const text = await registry.metrics();
  const route = {
    parent_group: "core",
    parent_kind: "Service",
    parent_namespace: "ns",
    parent_name: "web",
    parent_port: "80",
    parent_section_name: "",
    route_group: "gateway.networking.k8s.io",
    route_kind: "HTTPRoute",
    route_namespace: "ns",
    route_name: "r",
    hostname: "web.ns.svc.cluster.local",
  };
  const statuses = "outbound_http_route_request_statuses_total";
  assert.equal(metric(text, statuses, { ...route, http_status: "200", error: "" }), 2);
  assert.equal(metric(text, statuses, { ...route, http_status: "503", error: "" }), 1);
  assert.equal(metric(text, statuses, { ...route, http_status: "", error: "FAIL_FAST" }), 1);
  const d = "outbound_http_route_request_duration_seconds";
  // Buckets 0.05, 0.5, 1, 10 (Linkerd's route request buckets), cumulative.
  assert.equal(metric(text, `${d}_bucket`, { ...route, le: "0.05" }), 2);
  assert.equal(metric(text, `${d}_bucket`, { ...route, le: "0.5" }), 2);
  assert.equal(metric(text, `${d}_bucket`, { ...route, le: "1" }), 3);
  assert.equal(metric(text, `${d}_bucket`, { ...route, le: "10" }), 3);
  assert.equal(metric(text, `${d}_bucket`, { ...route, le: "+Inf" }), 4);
  assert.equal(metric(text, `${d}_count`, route), 4);
  assert.ok(Math.abs(metric(text, `${d}_sum`, route) - 20.712) < 1e-9);
  assert.match(text, /# TYPE outbound_http_route_request_duration_seconds histogram/);
  // The label order is Linkerd's: parent, route, hostname, then the status.
  assert.match(
    text,
    /outbound_http_route_request_statuses_total\{parent_group="core",parent_kind="Service",parent_namespace="ns",parent_name="web",parent_port="80",parent_section_name="",route_group="gateway.networking.k8s.io",route_kind="HTTPRoute",route_namespace="ns",route_name="r",hostname="web.ns.svc.cluster.local",http_status="200",error=""\} 2/,
  );
});

Deno.test("route metrics: backend requests, response durations and statuses carry backend_* labels", async () => {
  const registry = new Registry();
  const m = new HttpRouteMetrics(registry);
  const b = m.backend(PARENT, ROUTE, BACKEND, false);
  b.requests += 3;
  b.recordResponse(200, undefined, NO_HEADERS, 0.03);
  b.recordResponse(500, undefined, NO_HEADERS, 0.2);
  b.recordError({ reason: "reset" }, 0.2, 200);
  const text = await registry.metrics();
  const labels = {
    parent_name: "web",
    route_name: "r",
    backend_group: "core",
    backend_kind: "Service",
    backend_namespace: "ns",
    backend_name: "web-v2",
    backend_port: "8080",
    backend_section_name: "",
  };
  assert.equal(metric(text, "outbound_http_route_backend_requests_total", labels), 3);
  const st = "outbound_http_route_backend_response_statuses_total";
  assert.equal(metric(text, st, { ...labels, http_status: "200", error: "" }), 1);
  assert.equal(metric(text, st, { ...labels, http_status: "500", error: "" }), 1);
  assert.equal(
    metric(text, st, { ...labels, http_status: "200", error: "RESET" }),
    1,
    "a body that failed after 200",
  );
  const d = "outbound_http_route_backend_response_duration_seconds";
  // Buckets 0.025, 0.05, 0.1, 0.25, 0.5, 1, 10.
  assert.equal(metric(text, `${d}_bucket`, { ...labels, le: "0.025" }), 0);
  assert.equal(metric(text, `${d}_bucket`, { ...labels, le: "0.05" }), 1);
  assert.equal(metric(text, `${d}_bucket`, { ...labels, le: "0.25" }), 3);
  assert.equal(metric(text, `${d}_count`, labels), 3);
  assert.ok(
    !text.includes(
      'outbound_http_route_backend_requests_total{parent_group="core",parent_kind="Service",parent_namespace="ns",parent_name="web",parent_port="80",parent_section_name="",route_group="gateway.networking.k8s.io",route_kind="HTTPRoute",route_namespace="ns",route_name="r",hostname',
    ),
    "backend series have no hostname",
  );
});

Deno.test("route metrics: gRPC routes count grpc_status by name, from trailers or trailers-only headers", async () => {
  const registry = new Registry();
  const m = new HttpRouteMetrics(registry);
  const s = m.route(PARENT, ROUTE, "grpc.ns", true);
  s.recordResponse(200, new HeaderList(["grpc-status", "0"]), NO_HEADERS, 0.01);
  s.recordResponse(200, undefined, new HeaderList(["grpc-status", "14"]), 0.01);
  s.recordResponse(200, new HeaderList(["grpc-status", "99"]), NO_HEADERS, 0.01);
  s.recordError({ reason: "queue_full" }, 0.01);
  const text = await registry.metrics();
  const st = "outbound_grpc_route_request_statuses_total";
  assert.equal(metric(text, st, { route_name: "r", hostname: "grpc.ns", grpc_status: "OK", error: "" }), 1);
  assert.equal(metric(text, st, { grpc_status: "UNAVAILABLE", error: "" }), 1);
  assert.equal(metric(text, st, { grpc_status: "UNKNOWN", error: "" }), 1, "an out-of-range code");
  assert.equal(metric(text, st, { grpc_status: "UNKNOWN", error: "LOAD_SHED" }), 1);
  assert.equal(metric(text, "outbound_grpc_route_request_duration_seconds_count", { route_name: "r" }), 4);
  assert.equal(metric(text, "outbound_http_route_request_statuses_total", {}), 0, "not in the HTTP family");
});

Deno.test("route metrics: error labels are Linkerd's; hostOf strips the port and lowercases", () => {
  assert.equal(routeErrorLabel({ reason: "failfast" }), "FAIL_FAST");
  assert.equal(routeErrorLabel({ reason: "no_endpoints" }), "FAIL_FAST");
  assert.equal(routeErrorLabel({ reason: "queue_full" }), "LOAD_SHED");
  assert.equal(routeErrorLabel({ reason: "timeout" }), "REQUEST_TIMEOUT");
  assert.equal(routeErrorLabel({ reason: "refused" }), "REFUSED");
  assert.equal(routeErrorLabel({ reason: "connection_lost" }), "IO");
  assert.equal(routeErrorLabel(new Error("x")), "UNKNOWN");
  assert.equal(hostOf("Example.COM:8080"), "example.com");
  assert.equal(hostOf("[FD00::1]:80"), "fd00::1");
  assert.equal(hostOf("web"), "web");
});

Deno.test("route metrics: retry families per route and hostname, zeros exported for routes with a retry policy", async () => {
  const registry = new Registry();
  const m = new HttpRouteMetrics(registry);
  const plain = m.route(PARENT, { ...ROUTE, name: "no-retry" }, "web", false);
  plain.recordResponse(200, undefined, NO_HEADERS, 0.01);
  const s = m.route(PARENT, ROUTE, "web", false);
  s.retryable = true;
  s.retries.requests += 3;
  s.retries.successes++;
  s.retries.limit_exceeded++;
  const text = await registry.metrics();
  const labels = { route_name: "r", hostname: "web", parent_name: "web" };
  assert.equal(metric(text, "outbound_http_route_retry_requests_total", labels), 3);
  assert.equal(metric(text, "outbound_http_route_retry_successes_total", labels), 1);
  assert.equal(metric(text, "outbound_http_route_retry_limit_exceeded_total", labels), 1);
  assert.match(text, /outbound_http_route_retry_overflow_total\{[^}]*route_name="r"[^}]*\} 0/);
  assert.ok(
    !text.split("\n").some((l) =>
      l.startsWith("outbound_http_route_retry_") && l.includes('route_name="no-retry"')
    ),
    "a route without retries has no retry series",
  );
  assert.match(text, /# HELP outbound_http_route_retry_requests_total Retry requests emitted/);
});
