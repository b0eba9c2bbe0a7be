// The demo's figures from synthetic scrapes: what is printed must be exactly what the metrics say, and a service
// without successful traffic must fail the demo.
import assert from "node:assert/strict";
import { parseMetrics } from "../e2e/lib/prom.ts";
import { formatReport, type PodScrape, serviceReport, type ServiceSpec } from "./report.ts";

const CALLER = "web-load.demo.serviceaccount.identity.weft.cluster.local";
const SERVER = "web.demo.serviceaccount.identity.weft.cluster.local";
const spec: ServiceSpec = {
  name: "web",
  protocol: "HTTP/1",
  app: "web",
  port: 8080,
  callerApp: "web-load",
  callerIdentity: CALLER,
  serverIdentity: SERVER,
  callerIsLoadClient: true,
};

function inbound(read: number, write: number, extra = ""): string {
  const l = `direction="inbound",peer="src",tls="true",client_id="${CALLER}",target_addr="10.244.0.9:8080"`;
  return `tcp_open_total{${l}} 3\ntcp_read_bytes_total{${l}} ${read}\ntcp_write_bytes_total{${l}} ${write}\n` +
    `tcp_read_bytes_total{direction="inbound",tls="false",client_id="",target_addr="10.244.0.9:8080"} 50\n${extra}`;
}
const outbound = `tcp_open_total{direction="outbound",peer="dst",tls="true",server_id="${SERVER}"} 1\n`;
function client(ok: number, bucket10: number): string {
  return `demo_client_requests_total{call="get",result="success"} ${ok}\n` +
    `demo_client_latency_ms_bucket{call="get",le="10"} ${bucket10}\n` +
    `demo_client_latency_ms_bucket{call="get",le="+Inf"} ${ok}\n`;
}
function scrapes(server: string, load: string, loadApp: string): Map<string, PodScrape> {
  return new Map([
    ["web-1", { pod: "web-1", proxy: parseMetrics(server) }],
    ["load-1", { pod: "load-1", proxy: parseMetrics(load), app: parseMetrics(loadApp) }],
  ]);
}

Deno.test("TCP-only proxies: says the HTTP figures are absent and counts mTLS bytes from the caller", () => {
  const before = scrapes(inbound(100, 200), outbound, client(10, 10));
  const after = scrapes(inbound(600, 1200), outbound, client(110, 60));
  const r = serviceReport(spec, before, after, ["web-1"], ["load-1"], 20);
  assert.equal(r.ok, true, r.problems.join("; "));
  assert.equal(r.http, undefined);
  assert.match(r.proxyNote ?? "", /no HTTP metrics/);
  assert.equal(r.tcp?.readBytes, 500);
  assert.equal(r.tcp?.writeBytes, 1000);
  assert.equal(r.tcp?.connections, 0);
  assert.equal(r.client?.successes, 100);
  assert.equal(r.client?.rps, 5);
  assert.equal(r.client?.p50Ms, 10); // 50 of the 100 window observations fell in (0, 10]
  assert.ok(formatReport(r).some((l) => l.includes(`client_id=${CALLER} seen`)));
});

Deno.test("no bytes from the caller in the window fails the service", () => {
  const same = scrapes(inbound(100, 200), outbound, client(10, 10));
  const r = serviceReport(spec, same, scrapes(inbound(100, 200), outbound, client(10, 10)), ["web-1"], [
    "load-1",
  ], 20);
  assert.equal(r.ok, false);
  assert.ok(r.problems.some((p) => p.includes("no mTLS bytes")), r.problems.join("; "));
  assert.ok(r.problems.some((p) => p.includes("no successful request")), r.problems.join("; "));
});

Deno.test("HTTP metrics present: rate, success rate and latency come from the proxy", () => {
  const l = `direction="inbound",tls="true",client_id="${CALLER}"`;
  const http = (ok: number, fail: number, b10: number, b50: number) =>
    `response_total{${l},classification="success",status_code="200"} ${ok}\n` +
    `response_total{${l},classification="failure",status_code="502"} ${fail}\n` +
    `response_latency_ms_bucket{${l},status_code="200",le="10"} ${b10}\n` +
    `response_latency_ms_bucket{${l},status_code="200",le="50"} ${b50}\n` +
    `response_latency_ms_bucket{${l},status_code="200",le="+Inf"} ${b50}\n`;
  const before = scrapes(inbound(0, 0, http(0, 0, 0, 0)), outbound, client(0, 0));
  const after = scrapes(inbound(10, 10, http(90, 10, 50, 100)), outbound, client(100, 100));
  const r = serviceReport(spec, before, after, ["web-1"], ["load-1"], 10);
  assert.equal(r.http?.requests, 100);
  assert.equal(r.http?.successRate, 0.9);
  assert.equal(r.http?.rps, 10);
  assert.equal(r.http?.p50Ms, 10);
  assert.equal(r.http?.p99Ms, 10 + 40 * (49 / 50));
  assert.equal(r.ok, true);
});

Deno.test("unmeshed: no proxy figures, says so, and an implied service borrows its caller's client figures", () => {
  const plain = new Map<string, PodScrape>([
    ["api-1", { pod: "api-1", proxyError: "the pod has no linkerd-proxy container" }],
    ["web-load-1", { pod: "web-load-1", app: parseMetrics(client(0, 0)) }],
  ]);
  const later = new Map<string, PodScrape>([
    ["api-1", { pod: "api-1", proxyError: "the pod has no linkerd-proxy container" }],
    ["web-load-1", { pod: "web-load-1", app: parseMetrics(client(40, 40)) }],
  ]);
  const api = {
    ...spec,
    name: "api",
    app: "api",
    callerApp: "web",
    callerIsLoadClient: false,
    impliedBy: "web",
  };
  const r = serviceReport(api, plain, later, ["api-1"], [], 10, ["web-load-1"]);
  assert.equal(r.meshed, false);
  assert.match(r.proxyNote ?? "", /not meshed.*each success of which included one successful api call/);
  assert.equal(r.client?.successes, 40);
  assert.equal(r.ok, true);
});
