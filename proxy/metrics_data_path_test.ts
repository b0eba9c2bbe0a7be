/**
 * Tier 3: the metric families Linkerd's dashboards query, through two real meshed proxies
 * (network namespaces a and b with init's iptables rules, the control plane served in this
 * process): the policy route and route-backend families of a policy-routed HTTP request and of
 * gRPC calls on a GRPCRoute (grpc_status from the trailers), the balancer
 * endpoints gauge against the endpoints discovery announced and the balancer's queue, gate and p2c
 * families, the TCP metrics of the connections carrying HTTP to an endpoint and of the app's own
 * connections to its proxy (peer="src"), and the bytes of an inbound HTTP connection while it is
 * still open. Skipped when not root.
 */
import assert from "node:assert/strict";
import {
  balancerBackend,
  detectPolicy,
  httpRouteOf,
  httpRule,
  meshedHttpEndpoint,
  type TestControlPlane,
} from "./testing/control_plane.ts";
import { allowAll, detectServer, grpcServer, resource } from "./testing/inbound_servers.ts";
import { MeshFixture, workloadOf } from "./testing/mesh_fixture.ts";
import { identityOf as ID } from "./testing/mesh_pods.ts";
import { metric, until } from "./testing/poll.ts";

const ignore = Deno.uid() !== 0;
if (ignore) console.warn("metrics data path test skipped: network namespaces and iptables need root");

const appTs = new URL("./testing/data_path_app.ts", import.meta.url).pathname;
const WEB = "web.default.svc.cluster.local:7001";
const GRPC = "grpc.default.svc.cluster.local:7101";

type OutboundPolicy = Parameters<TestControlPlane["setOutbound"]>[2];

/** A `grpc` outbound policy: one GRPCRoute (default metadata) to the balancer of `path`. */
function grpcPolicy(path: string): OutboundPolicy {
  const meta = (value: string) => ({ kind: { $case: "default" as const, value } });
  return {
    metadata: meta("grpc"),
    protocol: {
      kind: {
        $case: "grpc",
        value: {
          routes: [{
            metadata: meta("grpc-route"),
            hosts: [],
            rules: [{
              matches: [],
              filters: [],
              backends: {
                kind: {
                  $case: "firstAvailable",
                  value: { backends: [{ backend: balancerBackend(path), filters: [] }] },
                },
              },
              allowL5dRequestHeaders: false,
            }],
          }],
          failureAccrual: undefined,
        },
      },
    },
  };
}
const FIXTURE = { prefix: "weft-metricspath-", caName: "weft-test-mesh", pods: ["a", "b"] };

Deno.test({
  name: "metrics data path: route, balancer and TCP families through two meshed proxies",
  ignore,
  sanitizeOps: false,
  sanitizeResources: false,
}, async (t) => {
  await MeshFixture.run(FIXTURE, async (m) => {
    const { cp } = m;
    const B = m.pod("b");
    // Destination's metric labels of the first endpoint, as the controller sends them for a pod.
    const endpoints = [
      { ...meshedHttpEndpoint(B.ip, 7001, ID("b")), metricLabels: { namespace: "default", pod: "b-7001" } },
      meshedHttpEndpoint(B.ip, 7002, ID("b")),
    ];
    cp.tables.endpoints.set(WEB, endpoints);
    cp.setOutbound(
      B.ip,
      7001,
      detectPolicy("web", B.ip, 7001, [
        httpRouteOf("web-route", [
          httpRule([{ backend: balancerBackend(WEB), weight: 1 }], {
            retry: {
              maxRetries: 2,
              maxRequestBytes: 0,
              conditions: { statusRanges: [{ start: 500, end: 599 }] },
              timeout: undefined,
              backoff: undefined,
            },
          }),
        ]),
      ]),
    );
    for (const port of [7001, 7002]) {
      cp.tables.servers.set(
        `${workloadOf("b")}|${port}`,
        detectServer("web", [], [allowAll(resource("AuthorizationPolicy", "all"))]),
      );
    }
    cp.tables.endpoints.set(GRPC, [meshedHttpEndpoint(B.ip, 7101, ID("b"))]);
    cp.setOutbound(B.ip, 7101, grpcPolicy(GRPC));
    cp.tables.servers.set(
      `${workloadOf("b")}|7101`,
      grpcServer("grpc", [allowAll(resource("AuthorizationPolicy", "all"))]),
    );
    await cp.start();
    const metrics = async (pod: string) => (await m.admin(pod, "/metrics")).body;
    const load = (n: number, path: string) =>
      m.json<{ statuses: Record<string, number> }>(
        "a",
        "http-load",
        appTs,
        "http-load",
        JSON.stringify({ url: `http://${B.ip}:7001${path}`, n }),
      );

    await m.step(t, "setup: init, relays, the app in b, both proxies ready", async () => {
      for (const pod of ["a", "b"]) await m.meshPod(pod);
      await m.startApp("b", "http-b", [appTs, "http-server", "7001", "7002"]);
      await m.startApp("b", "grpc-b", [appTs, "grpc-server", "7101"]);
      for (const pod of ["a", "b"]) m.startProxy(pod, { inboundPorts: "7001-7002,7101" });
      for (const pod of ["a", "b"]) await m.ready(pod);
    });

    const route = {
      parent_kind: "default",
      parent_name: "web",
      route_kind: "default",
      route_name: "web-route",
    };
    const backend = {
      ...route,
      backend_group: "core",
      backend_kind: "Service",
      backend_namespace: "default",
      backend_name: "web",
    };

    await m.step(t, "a policy-routed request shows in the route and route-backend families", async () => {
      const r = await load(20, "/routed");
      assert.deepEqual(r.statuses, { 200: 20 });
      // The route series ends with the response body: poll until the last one is in.
      const ma = await until("20 route statuses in a's metrics", async () => {
        const text = await metrics("a");
        return metric(text, "outbound_http_route_request_statuses_total", { ...route, http_status: "200" }) >=
            20
          ? text
          : undefined;
      });
      const host = { ...route, hostname: B.ip };
      assert.equal(
        metric(ma, "outbound_http_route_request_statuses_total", { ...host, http_status: "200", error: "" }),
        20,
        ma.split("\n").filter((l) => l.startsWith("outbound_http_route")).join("\n"),
      );
      assert.equal(metric(ma, "outbound_http_route_request_duration_seconds_count", host), 20);
      assert.equal(
        metric(ma, "outbound_http_route_request_duration_seconds_bucket", { ...host, le: "+Inf" }),
        20,
      );
      assert.equal(metric(ma, "outbound_http_route_backend_requests_total", backend), 20);
      assert.equal(
        metric(ma, "outbound_http_route_backend_response_statuses_total", { ...backend, http_status: "200" }),
        20,
      );
      assert.equal(metric(ma, "outbound_http_route_backend_response_duration_seconds_count", backend), 20);
    });

    await m.step(t, "a retried request counts in the retry families and both backend statuses", async () => {
      const r = await load(1, "/fail-once/k1");
      assert.deepEqual(r.statuses, { 200: 1 }, "the retry answered");
      const ma = await until("the retried request's route status", async () => {
        const text = await metrics("a");
        return metric(text, "outbound_http_route_request_statuses_total", { ...route, http_status: "200" }) >=
            21
          ? text
          : undefined;
      });
      const host = { ...route, hostname: B.ip };
      assert.equal(metric(ma, "outbound_http_route_retry_requests_total", host), 1, "one retry sent");
      assert.equal(metric(ma, "outbound_http_route_retry_successes_total", host), 1, "and it was answered");
      assert.equal(metric(ma, "outbound_http_route_retry_limit_exceeded_total", host), 0);
      assert.equal(metric(ma, "outbound_http_route_retry_overflow_total", host), 0);
      assert.equal(
        metric(ma, "outbound_http_route_request_statuses_total", { ...route, http_status: "500" }),
        0,
      );
      assert.equal(
        metric(ma, "outbound_http_route_backend_requests_total", backend),
        22,
        "20 + the attempt + its retry",
      );
      assert.equal(
        metric(ma, "outbound_http_route_backend_response_statuses_total", { ...backend, http_status: "500" }),
        1,
        "the attempt that was retried",
      );
    });

    await m.step(t, "a gRPC route counts grpc_status by name in outbound_grpc_route_*", async () => {
      const r = await m.json<{ codes: Record<string, number> }>(
        "a",
        "grpc-call",
        appTs,
        "grpc-call",
        JSON.stringify({ addr: `${B.ip}:7101`, n: 12, concurrency: 4, stream: 3 }),
      );
      assert.deepEqual(r.codes, { 0: 12 }, JSON.stringify(r));
      const g = { parent_name: "grpc", route_kind: "default", route_name: "grpc-route" };
      // 12 unary calls and one server stream; each ends with its trailers.
      const ma = await until("13 gRPC route statuses", async () => {
        const text = await metrics("a");
        return metric(text, "outbound_grpc_route_request_statuses_total", { ...g, grpc_status: "OK" }) >= 13
          ? text
          : undefined;
      });
      assert.equal(
        metric(ma, "outbound_grpc_route_request_statuses_total", {
          ...g,
          hostname: B.ip,
          grpc_status: "OK",
          error: "",
        }),
        13,
        ma.split("\n").filter((l) => l.startsWith("outbound_grpc_route")).join("\n"),
      );
      assert.equal(metric(ma, "outbound_grpc_route_request_duration_seconds_count", g), 13);
      assert.equal(
        metric(ma, "outbound_grpc_route_backend_requests_total", { ...g, backend_name: "grpc" }),
        13,
      );
      assert.equal(
        metric(ma, "outbound_grpc_route_backend_response_statuses_total", {
          ...g,
          backend_name: "grpc",
          grpc_status: "OK",
        }),
        13,
      );
      assert.equal(metric(ma, "outbound_http_route_request_statuses_total", { parent_name: "grpc" }), 0);
    });

    await m.step(t, "the balancer endpoints gauge equals the endpoints discovery announced", async () => {
      const ma = await metrics("a");
      const g = { parent_name: "web", backend_name: "web", backend_kind: "Service" };
      assert.equal(
        metric(ma, "outbound_http_balancer_endpoints", { ...g, endpoint_state: "ready" }),
        endpoints.length,
        ma.split("\n").filter((l) => l.startsWith("outbound_http_balancer")).join("\n"),
      );
      assert.equal(metric(ma, "outbound_http_balancer_endpoints", { ...g, endpoint_state: "pending" }), 0);
      // The queue, gate and p2c families of the same balancer: every attempt so far (20 + the retried
      // request's two) entered its queue and found an endpoint at once.
      const q = (name: string, extra: Record<string, string> = {}) =>
        metric(ma, `outbound_http_balancer_${name}`, { ...g, ...extra });
      assert.equal(q("p2c_endpoints"), endpoints.length);
      assert.ok(q("p2c_updates_total", { op: "Add" }) >= endpoints.length);
      assert.equal(q("queue_length"), 0);
      assert.equal(
        q("queue_requests_total"),
        22,
        ma.split("\n").filter((l) => l.includes("_queue_")).join("\n"),
      );
      assert.equal(q("queue_latency_seconds_count"), 22);
      assert.equal(q("queue_latency_seconds_bucket", { le: "3" }), 22);
      assert.equal(q("queue_gate_open_total"), 1);
      assert.equal(q("queue_gate_shut_total"), 0);
      assert.equal(q("queue_gate_timeout_seconds"), 1, "the backend's failfast timeout");
      assert.ok(q("queue_gate_open_time_seconds") > 0);
      cp.setEndpoints(WEB, [endpoints[0]]);
      await until("the gauge to follow discovery down to 1", async () => {
        await load(1, "/after-removal");
        const text = await metrics("a");
        return metric(text, "outbound_http_balancer_endpoints", { ...g, endpoint_state: "ready" }) === 1 ||
          undefined;
      });
      const after = await metrics("a");
      assert.equal(metric(after, "outbound_http_balancer_p2c_endpoints", g), 1);
      assert.ok(metric(after, "outbound_http_balancer_p2c_updates_total", { ...g, op: "Remove" }) >= 1);
      cp.setEndpoints(WEB, endpoints);
    });

    await m.step(
      t,
      "the connections carrying HTTP to the endpoints are in the outbound TCP metrics",
      async () => {
        const ma = await metrics("a");
        const out = { direction: "outbound", peer: "dst", tls: "true", server_id: ID("b") };
        assert.ok(
          metric(ma, "tcp_open_total", out) >= 1,
          ma.split("\n").filter((l) => l.startsWith("tcp_")).join("\n"),
        );
        assert.ok(metric(ma, "tcp_open_connections", out) >= 1);
        assert.ok(metric(ma, "tcp_write_bytes_total", out) > 0);
        assert.ok(metric(ma, "tcp_read_bytes_total", out) > 0);
        assert.ok(
          metric(ma, "tcp_open_total", {
            ...out,
            target_addr: `${B.ip}:7001`,
            dst_namespace: "default",
            dst_pod: "b-7001",
          }) >=
            1,
          "the endpoint's Destination labels as dst_*",
        );
        // The application's own connections to the outbound proxy, as Linkerd's outbound server counts them.
        const src = { direction: "outbound", peer: "src", tls: "no_identity", no_tls_reason: "loopback" };
        assert.ok(metric(ma, "tcp_open_total", { ...src, target_addr: `${B.ip}:7001` }) >= 1);
        assert.ok(metric(ma, "tcp_read_bytes_total", { ...src, target_addr: `${B.ip}:7001` }) > 0);
        assert.ok(metric(ma, "tcp_write_bytes_total", { ...src, target_addr: `${B.ip}:7001` }) > 0);
      },
    );

    await m.step(t, "an inbound HTTP connection's bytes count while it is open", async () => {
      const inb = { direction: "inbound", peer: "src", tls: "true", client_id: ID("a"), srv_name: "web" };
      const before = await metrics("b");
      const open = metric(before, "tcp_open_connections", inb);
      const closed = metric(before, "tcp_close_total", inb);
      const read = metric(before, "tcp_read_bytes_total", inb);
      const written = metric(before, "tcp_write_bytes_total", inb);
      assert.ok(open >= 1, "a's proxy keeps its connection to b's open between requests");
      await load(10, `/open-${"x".repeat(2000)}`);
      const after = await metrics("b");
      assert.equal(metric(after, "tcp_close_total", inb), closed, "no inbound connection closed meanwhile");
      assert.ok(
        metric(after, "tcp_read_bytes_total", inb) - read > 10 * 2000,
        `read ${read} → ${
          metric(after, "tcp_read_bytes_total", inb)
        }: the requests' bytes, on an open connection`,
      );
      assert.ok(metric(after, "tcp_write_bytes_total", inb) > written, "the responses' bytes");
    });
  });
});
