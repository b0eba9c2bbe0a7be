import { httpErrorKind } from "./http_metrics.ts";
import { HttpError as ProxyHttpError } from "../http/message.ts";
import assert from "node:assert/strict";
import { Registry } from "./registry.ts";
import { bytesBody, HeaderList, HttpError, type HttpRequest, type HttpResponse } from "../http/message.ts";
import {
  HTTP_ERROR_KIND,
  HttpMetrics,
  instrumentResponse,
  LATENCY_BOUNDS_MS,
  type PolicyRef,
  recordRequests,
} from "./http_metrics.ts";

function setup(retainIdleMs?: number) {
  const clock = { t: 1000 };
  const registry = new Registry();
  const m = new HttpMetrics(registry, { now: () => clock.t, retainIdleMs });
  /** Sample lines of one family (name, name_bucket, …), without HELP/TYPE. */
  const scrape = async (family: string): Promise<string[]> =>
    (await registry.metrics()).split("\n").filter((l) =>
      l.startsWith(`${family}{`) || l.startsWith(`${family}_bucket{`) || l.startsWith(`${family}_sum{`) ||
      l.startsWith(`${family}_count{`) || l.startsWith(`${family} `)
    );
  return { clock, registry, m, scrape };
}

const OUT_TLS = { tls: "true", server_id: "web.emojivoto.serviceaccount.identity.linkerd.cluster.local" };
const OUT = {
  authority: "web-svc.emojivoto.svc.cluster.local:8080",
  targetAddr: "10.244.0.7:8080",
  tls: OUT_TLS,
  dst: { service: "web-svc", namespace: "emojivoto", pod: "web-7f9d-x2", serviceaccount: "web" },
};
const OUT_LABELS = `direction="outbound",authority="web-svc.emojivoto.svc.cluster.local:8080",` +
  `target_addr="10.244.0.7:8080",target_ip="10.244.0.7",target_port="8080",tls="true",` +
  `server_id="web.emojivoto.serviceaccount.identity.linkerd.cluster.local",dst_namespace="emojivoto",` +
  `dst_pod="web-7f9d-x2",dst_service="web-svc",dst_serviceaccount="web"`;

const SERVER: PolicyRef = { group: "policy.linkerd.io", kind: "server", name: "web-http" };
const ROUTE: PolicyRef = { group: "policy.linkerd.io", kind: "httproute", name: "books" };
const AUTHZ: PolicyRef = { group: "policy.linkerd.io", kind: "authorizationpolicy", name: "web-authn" };
const IN_TLS = { tls: "true", client_id: "vote-bot.emojivoto.serviceaccount.identity.linkerd.cluster.local" };

Deno.test("outbound request: request_total, response_latency_ms (every bucket) and response_total, exactly", async () => {
  const { clock, m, scrape } = setup();
  const h = m.outbound(OUT);
  const rec = h.start(false);
  clock.t += 3.7;
  rec.head(200, new HeaderList());
  rec.firstByte();
  clock.t += 50;
  rec.end(undefined);

  assert.deepEqual(await scrape("request_total"), [`request_total{${OUT_LABELS}} 1`]);
  const les = [...LATENCY_BOUNDS_MS.map(String), "+Inf"];
  assert.deepEqual(await scrape("response_latency_ms"), [
    ...les.map((le) =>
      `response_latency_ms_bucket{${OUT_LABELS},status_code="200",le="${le}"} ${le === "1" ? 0 : 1}`
    ),
    `response_latency_ms_sum{${OUT_LABELS},status_code="200"} 3`,
    `response_latency_ms_count{${OUT_LABELS},status_code="200"} 1`,
  ]);
  assert.deepEqual(await scrape("response_total"), [
    `response_total{${OUT_LABELS},status_code="200",classification="success",grpc_status="",error=""} 1`,
  ]);
});

Deno.test("latency buckets: Linkerd's bounds, whole milliseconds, inclusive upper bounds", async () => {
  assert.deepEqual([...LATENCY_BOUNDS_MS], [1, 10, 50, 100, 200, 300, 400, 500, 1000, 5000, 10000]);
  const { clock, m, registry } = setup();
  const h = m.outbound({
    targetAddr: "10.0.0.1:80",
    tls: { tls: "no_identity", no_tls_reason: "not_provided_by_service_discovery" },
  });
  // Each latency and the bucket it must land in (first bound >= floor(ms)).
  const cases: [number, string][] = [
    [0.2, "1"],
    [1.9, "1"],
    [2, "10"],
    [10, "10"],
    [10.99, "10"],
    [11, "50"],
    [1000, "1000"],
    [1001, "5000"],
    [10000, "10000"],
    [10001, "+Inf"],
  ];
  for (const [ms] of cases) {
    const rec = h.start(false);
    clock.t += ms;
    rec.head(204, new HeaderList());
    rec.end(undefined);
  }
  // Callers that already read the clock pass their timestamps: 30 ms → le="50".
  const timed = h.start(false, undefined, 500);
  timed.head(204, new HeaderList());
  timed.firstByte(530);
  timed.end(undefined);
  cases.push([30, "50"]);

  const text = await registry.metrics();
  const buckets = new Map<string, number>();
  for (const [, le, v] of text.matchAll(/^response_latency_ms_bucket\{.*,le="([^"]+)"\} (\d+)$/gm)) {
    buckets.set(le, Number(v));
  }
  let cumulative = 0;
  for (const le of [...LATENCY_BOUNDS_MS.map(String), "+Inf"]) {
    cumulative += cases.filter(([, want]) => want === le).length;
    assert.equal(buckets.get(le), cumulative, `le="${le}"`);
  }
  const sum = cases.reduce((s, [ms]) => s + Math.floor(ms), 0);
  assert.match(text, new RegExp(`^response_latency_ms_sum\\{.*\\} ${sum}$`, "m"));
  assert.match(text, /^response_latency_ms_count\{.*\} 11$/m);
});

Deno.test("inbound labels: Linkerd's order with srv/route/authz groups; no authority label when empty", async () => {
  const { m, scrape } = setup();
  const scope = m.inboundScope({ targetAddr: "10.244.0.9:7000", tls: IN_TLS, server: SERVER });
  const h = scope.get("books.default.svc.cluster.local", ROUTE, AUTHZ);
  assert.equal(
    scope.get("books.default.svc.cluster.local", ROUTE, AUTHZ),
    h,
    "cached per (authority, route, authz)",
  );
  h.start(false).streamError("h2(CANCEL)");
  scope.get("", ROUTE, AUTHZ).start(false);

  const labels = (authority: string) =>
    `direction="inbound",${authority}target_addr="10.244.0.9:7000",target_ip="10.244.0.9",target_port="7000",` +
    `tls="true",client_id="vote-bot.emojivoto.serviceaccount.identity.linkerd.cluster.local",` +
    `srv_group="policy.linkerd.io",srv_kind="server",srv_name="web-http",` +
    `route_group="policy.linkerd.io",route_kind="httproute",route_name="books",` +
    `authz_group="policy.linkerd.io",authz_kind="authorizationpolicy",authz_name="web-authn"`;
  assert.deepEqual(await scrape("request_total"), [
    `request_total{${labels('authority="books.default.svc.cluster.local",')}} 1`,
    `request_total{${labels("")}} 1`,
  ]);
  // Failed before any response: no latency, and status_code is empty.
  assert.deepEqual(await scrape("response_latency_ms"), []);
  assert.deepEqual(await scrape("response_total"), [
    `response_total{${labels('authority="books.default.svc.cluster.local",')},status_code="",` +
    `classification="failure",grpc_status="",error="h2(CANCEL)"} 1`,
  ]);
});

Deno.test("handles are shared per label combination; IPv6 target addresses split like Linkerd's", async () => {
  const { m, scrape } = setup();
  const a = m.outbound({ targetAddr: "[fd00::7]:8080", tls: OUT_TLS });
  assert.equal(m.outbound({ targetAddr: "[fd00::7]:8080", tls: OUT_TLS }), a);
  assert.notEqual(m.outbound({ targetAddr: "[fd00::7]:8081", tls: OUT_TLS }), a);
  const scope = m.outboundScope({ targetAddr: "[fd00::7]:8080", tls: OUT_TLS });
  assert.equal(scope.get(""), a);
  a.start(false);
  scope.get("").start(false);
  assert.deepEqual(await scrape("request_total"), [
    `request_total{direction="outbound",target_addr="[fd00::7]:8080",target_ip="fd00::7",target_port="8080",` +
    `tls="true",server_id="web.emojivoto.serviceaccount.identity.linkerd.cluster.local"} 2`,
  ]);
});

Deno.test("gRPC responses: one series per grpc_status, failure only for Linkerd's failure codes", async () => {
  const { m, scrape } = setup();
  const h = m.outbound(OUT);
  for (const code of ["0", "0", "5", "14"]) {
    const rec = h.start(true);
    rec.head(200, new HeaderList(["content-type", "application/grpc"]));
    rec.firstByte();
    rec.end(new HeaderList(["grpc-status", code]));
  }
  const trailersOnly = h.start(true);
  trailersOnly.head(200, new HeaderList(["grpc-status", "4", "grpc-message", "deadline"]));
  trailersOnly.end(undefined);
  const total = (cls: string, code: string) =>
    `response_total{${OUT_LABELS},status_code="200",classification="${cls}",grpc_status="${code}",error=""}`;
  assert.deepEqual(await scrape("response_total"), [
    `${total("success", "0")} 2`,
    `${total("failure", "4")} 1`,
    `${total("success", "5")} 1`,
    `${total("failure", "14")} 1`,
  ]);
  assert.match((await scrape("response_latency_ms")).join("\n"), /status_code="200"\} 5$/m);
});

Deno.test("route families: route_*, route_actual_* without latency, route_retryable_total with skipped", async () => {
  const { clock, m, registry, scrape } = setup();
  const r = m.route({
    direction: "outbound",
    dst: "books.default.svc.cluster.local:7000",
    labels: { route: "GET /books/{id}" },
  });
  const classifier = (status: number) => (status === 404 ? true : undefined);
  const logical = r.requests.start(false, classifier);
  for (const [status, budget] of [[503, true], [503, false], [404, true]] as const) {
    const attempt = r.actual.start(false, classifier);
    clock.t += 2;
    attempt.head(status, new HeaderList());
    attempt.end(undefined);
    if (status === 503) r.retryable(budget);
  }
  logical.head(404, new HeaderList());
  logical.end(undefined);

  const L = `direction="outbound",dst="books.default.svc.cluster.local:7000",rt_route="GET /books/{id}"`;
  assert.deepEqual(await scrape("route_request_total"), [`route_request_total{${L}} 1`]);
  assert.deepEqual(await scrape("route_response_total"), [
    `route_response_total{${L},status_code="404",classification="failure",grpc_status="",error=""} 1`,
  ]);
  assert.deepEqual((await scrape("route_response_latency_ms")).slice(-2), [
    `route_response_latency_ms_sum{${L},status_code="404"} 6`,
    `route_response_latency_ms_count{${L},status_code="404"} 1`,
  ]);
  assert.deepEqual(await scrape("route_actual_request_total"), [`route_actual_request_total{${L}} 3`]);
  assert.deepEqual(await scrape("route_actual_response_total"), [
    `route_actual_response_total{${L},status_code="503",classification="failure",grpc_status="",error=""} 2`,
    `route_actual_response_total{${L},status_code="404",classification="failure",grpc_status="",error=""} 1`,
  ]);
  assert.ok(!(await registry.metrics()).includes("route_actual_response_latency_ms"));
  assert.deepEqual(await scrape("route_retryable_total"), [
    `route_retryable_total{${L}} 2`,
    `route_retryable_total{${L},skipped="no_budget"} 1`,
  ]);
  // Endpoint families are separate.
  assert.deepEqual(await scrape("request_total"), []);
});

Deno.test("authorization, route-not-found and proxy error counters", async () => {
  const { m, scrape } = setup();
  const allow = m.authzAllow({
    targetAddr: "10.244.0.9:7000",
    tls: IN_TLS,
    server: SERVER,
    route: ROUTE,
    authz: AUTHZ,
  });
  allow.inc();
  allow.inc();
  m.authzDeny({
    targetAddr: "10.244.0.9:7000",
    tls: { tls: "no_identity", no_tls_reason: "no_tls_from_remote" },
    server: SERVER,
    route: ROUTE,
  }).inc();
  m.routeNotFound({ targetAddr: "10.244.0.9:7000", tls: IN_TLS, server: SERVER }).inc();
  m.outboundError(HTTP_ERROR_KIND.responseTimeout).inc();
  m.outboundError(HTTP_ERROR_KIND.failfast).inc(3);
  m.inboundError(HTTP_ERROR_KIND.unauthorized).inc();

  const target = `target_addr="10.244.0.9:7000",target_ip="10.244.0.9",target_port="7000"`;
  const srv = `srv_group="policy.linkerd.io",srv_kind="server",srv_name="web-http"`;
  const route = `route_group="policy.linkerd.io",route_kind="httproute",route_name="books"`;
  assert.deepEqual(await scrape("inbound_http_authz_allow_total"), [
    `inbound_http_authz_allow_total{${target},${srv},${route},authz_group="policy.linkerd.io",` +
    `authz_kind="authorizationpolicy",authz_name="web-authn",tls="true",` +
    `client_id="vote-bot.emojivoto.serviceaccount.identity.linkerd.cluster.local"} 2`,
  ]);
  assert.deepEqual(await scrape("inbound_http_authz_deny_total"), [
    `inbound_http_authz_deny_total{${target},${srv},${route},tls="no_identity",no_tls_reason="no_tls_from_remote"} 1`,
  ]);
  assert.deepEqual(await scrape("inbound_http_route_not_found_total"), [
    `inbound_http_route_not_found_total{${target},${srv},tls="true",` +
    `client_id="vote-bot.emojivoto.serviceaccount.identity.linkerd.cluster.local"} 1`,
  ]);
  assert.deepEqual(await scrape("outbound_http_errors_total"), [
    `outbound_http_errors_total{error="response timeout"} 1`,
    `outbound_http_errors_total{error="failfast"} 3`,
  ]);
  assert.deepEqual(await scrape("inbound_http_errors_total"), [
    `inbound_http_errors_total{error="unauthorized"} 1`,
  ]);
});

Deno.test("instrumentResponse: first chunk is the latency, trailers classify, cancel counts as ended", async () => {
  const { clock, m, scrape } = setup();
  const h = m.outbound(OUT);
  const body = (trailers?: string[]) =>
    bytesBody([new Uint8Array(5), new Uint8Array(3)], trailers ? new HeaderList(trailers) : undefined);

  const rsp: HttpResponse = {
    status: 200,
    headers: new HeaderList(["content-type", "application/grpc"]),
    body: body(["grpc-status", "13"]),
  };
  const rec = h.start(true);
  clock.t += 4;
  instrumentResponse(rec, rsp);
  clock.t += 7; // time to the first chunk counts
  assert.equal((await rsp.body.read())?.length, 5);
  clock.t += 100; // the rest of the body does not
  assert.equal((await rsp.body.read())?.length, 3);
  assert.equal(rec.done, false);
  assert.equal(await rsp.body.read(), null);
  assert.equal(rec.done, true);
  assert.equal(rsp.body.trailers?.get("grpc-status"), "13");

  const cancelled: HttpResponse = { status: 200, headers: new HeaderList(), body: body() };
  const rec2 = h.start(false);
  instrumentResponse(rec2, cancelled);
  cancelled.body.cancel();
  assert.equal(rec2.done, true);

  assert.deepEqual(await scrape("response_total"), [
    `response_total{${OUT_LABELS},status_code="200",classification="success",grpc_status="",error=""} 1`,
    `response_total{${OUT_LABELS},status_code="200",classification="failure",grpc_status="13",error=""} 1`,
  ]);
  assert.deepEqual((await scrape("response_latency_ms")).slice(-2), [
    `response_latency_ms_sum{${OUT_LABELS},status_code="200"} 11`,
    `response_latency_ms_count{${OUT_LABELS},status_code="200"} 2`,
  ]);
});

Deno.test("recordRequests: a rejected request is a stream failure labelled from the error", async () => {
  const { m, scrape } = setup();
  const h = m.outbound(OUT);
  const req: HttpRequest = {
    method: "GET",
    scheme: undefined,
    authority: "x",
    path: "/",
    version: "HTTP/2",
    headers: new HeaderList(),
    body: bytesBody([]),
  };
  const timingOut = recordRequests(
    () => Promise.reject(new HttpError(504, "response timeout", "timeout")),
    () => h,
  );
  await assert.rejects(timingOut(req, new AbortController().signal), HttpError);
  const failingBody = recordRequests(
    () =>
      Promise.resolve({
        status: 200,
        headers: new HeaderList(),
        body: {
          length: undefined,
          trailers: undefined,
          read: () => Promise.reject(new Error("Stream closed with error code NGHTTP2_REFUSED_STREAM")),
          cancel: () => {},
        },
      }),
    () => h,
  );
  const rsp = await failingBody(req, new AbortController().signal);
  await assert.rejects(rsp.body.read(), /REFUSED_STREAM/);
  assert.deepEqual(await scrape("response_total"), [
    `response_total{${OUT_LABELS},status_code="",classification="failure",grpc_status="",error="timeout"} 1`,
    `response_total{${OUT_LABELS},status_code="200",classification="failure",grpc_status="",error="h2(REFUSED_STREAM)"} 1`,
  ]);
  // The failed body still had a response head, so its latency is recorded (Linkerd does the same).
  assert.match(
    (await scrape("response_latency_ms")).join("\n"),
    /^response_latency_ms_count\{.*status_code="200"\} 1$/m,
  );
});

Deno.test("idle series are dropped at scrape and come back (counts kept) when their handle is used", async () => {
  const { clock, m, scrape } = setup(60_000);
  const busy = m.outbound(OUT);
  const idle = m.outbound({ ...OUT, authority: "idle.example:80" });
  idle.start(false).end(undefined);
  busy.start(false).end(undefined);
  clock.t += 50_000;
  busy.start(false).end(undefined);
  clock.t += 20_000;
  const lines = await scrape("request_total");
  assert.equal(lines.length, 1);
  assert.match(lines[0], /authority="web-svc/);
  // A stale handle revives its series; a fresh lookup returns the same series.
  idle.start(false);
  assert.equal(m.outbound({ ...OUT, authority: "idle.example:80" }), idle);
  assert.ok(
    (await scrape("request_total")).some((l) =>
      l.includes('authority="idle.example:80"') && l.endsWith(" 2")
    ),
  );
});

Deno.test("an idle counter handle kept by a stack is exported again when it counts", async () => {
  const { clock, m, scrape } = setup(60_000);
  const deny = m.inboundError(HTTP_ERROR_KIND.unauthorized);
  deny.inc();
  clock.t += 61_000;
  assert.deepEqual(await scrape("inbound_http_errors_total"), []);
  deny.inc();
  assert.deepEqual(await scrape("inbound_http_errors_total"), [
    `inbound_http_errors_total{error="unauthorized"} 2`,
  ]);
  assert.equal(m.inboundError(HTTP_ERROR_KIND.unauthorized), deny);
});

Deno.test("label values are escaped in the exposition", async () => {
  const { m, scrape } = setup();
  m.outbound({ authority: 'a"b\\c', targetAddr: "10.0.0.1:80", tls: OUT_TLS }).start(false);
  assert.match((await scrape("request_total"))[0], /authority="a\\"b\\\\c"/);
});

Deno.test("httpErrorKind: the proxy's own failures get Linkerd's error labels", () => {
  assert.equal(httpErrorKind(new ProxyHttpError(503, "no endpoints", "no_endpoints")), "failfast");
  assert.equal(httpErrorKind(new ProxyHttpError(503, "queue", "queue_full")), "loadshed");
  assert.equal(httpErrorKind(new ProxyHttpError(504, "slow", "timeout", 4)), "response timeout");
  assert.equal(httpErrorKind(new ProxyHttpError(502, "refused", "connect_failed", 14)), "i/o");
  assert.equal(httpErrorKind(new Error("boom")), "unexpected");
});
