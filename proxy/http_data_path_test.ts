/**
 * Tier 3: the HTTP layer on real sockets through two meshed proxies (network namespaces a and b
 * with init's iptables rules, proxies as UID 2102, the control plane served in this process).
 * The app in a talks HTTP/1.1 (node:http, one kept-alive connection) and gRPC (grpc-js) to
 * addresses in b; b runs HTTP and gRPC servers on several ports, which the test control plane
 * announces as endpoints of "services" (Destination paths), so balancing is observable per port.
 * Skipped when not root.
 */
import assert from "node:assert/strict";
import { ProxyEnv } from "../proto/env.ts";
import {
  balancerBackend,
  detectPolicy,
  httpRouteOf,
  httpRule,
  meshedHttpEndpoint,
} from "./testing/control_plane.ts";
import {
  allowAll as allowEveryone,
  detectServer,
  grpcServer,
  onlyIdentity as onlyIdentityOf,
  prefixRoute,
  resource,
} from "./testing/inbound_servers.ts";
import { MeshFixture, workloadOf } from "./testing/mesh_fixture.ts";
import { identityOf as ID } from "./testing/mesh_pods.ts";
import { msDuration } from "./core/duration.ts";
import type { HttpRouteMatch } from "../proto/gen_messages/http_route.ts";
import { metric, until } from "./testing/poll.ts";
import { detectHttp } from "./http/detect.ts";
import { HOSTILE_CORPUS } from "./http/h1/hostile_corpus.ts";

const ignore = Deno.uid() !== 0;
if (ignore) console.warn("HTTP data path tests skipped: network namespaces and iptables need root");

const appTs = new URL("./testing/data_path_app.ts", import.meta.url).pathname;
const WEB = "web.default.svc.cluster.local:7001";
const GRPC = "grpc.default.svc.cluster.local:7101";
const EMPTY = "empty.default.svc.cluster.local:7005";
const P1 = "one.default.svc.cluster.local:7001";
const P2 = "two.default.svc.cluster.local:7002";
const BOTH = "both.default.svc.cluster.local:7001";
/** One live endpoint and one on an address no pod holds (a dead node). */
const HALF_DEAD = "halfdead.default.svc.cluster.local:7001";
const DEAD_IP = "10.231.0.200";

const allowAll = (name: string) => allowEveryone(resource("AuthorizationPolicy", name));
const onlyIdentity = (name: string, id: string) => onlyIdentityOf(id, resource("AuthorizationPolicy", name));
/** Both proxies' pods; c only names an identity no pod has. */
const FIXTURE = { prefix: "weft-httppath-", caName: "weft-test-mesh", pods: ["a", "b"] };

type Load = {
  statuses: Record<string, number>;
  ports: Record<string, number>;
  connections: number;
  first: {
    status: number;
    body: Record<string, unknown> & { headers: Record<string, string> };
    headers: Record<string, string>;
  };
};
type GrpcResult = {
  codes: Record<string, number>;
  ports: Record<string, number>;
  trailers: Record<string, string>;
  reply: string;
  details?: string;
  streamed?: string[];
  streamCode?: number;
};

Deno.test({
  name: "http data path: HTTP/1.1 and gRPC through two meshed proxies",
  ignore,
  sanitizeOps: false,
  sanitizeResources: false,
}, async (t) => {
  await MeshFixture.run(FIXTURE, async (m) => {
    const { cp } = m;
    const B = m.pod("b");
    const wlB = workloadOf("b");
    const ep = (port: number) => meshedHttpEndpoint(B.ip, port, ID("b"));

    // Services: web (7001, 7002), grpc (7101, 7102), empty (no endpoints).
    // Sequential HTTP/1 requests leave every endpoint with 0 pending, so P2C compares RTT
    // estimates only; a short decay lets an endpoint whose first (cold) request was slow be tried
    // again within the test. gRPC runs concurrent calls and keeps Linkerd's 10 s decay.
    const service = (name: string, path: string, port: number, decayMs = 10_000) =>
      cp.setOutbound(
        B.ip,
        port,
        detectPolicy(name, B.ip, port, [
          httpRouteOf(name, [httpRule([{ backend: balancerBackend(path, { decayMs }), weight: 1 }])]),
        ]),
      );
    cp.tables.endpoints.set(WEB, [ep(7001), ep(7002)]);
    cp.tables.endpoints.set(GRPC, [ep(7101), ep(7102)]);
    service("web", WEB, 7001, 20);
    service("grpc", GRPC, 7101);
    service("empty", EMPTY, 7005);
    // Unlisted targets get the fallback policy: forward to the address, which Destination describes.
    // 7003 has no h2 hint: its HTTP/1 requests travel as HTTP/1 (transport header session
    // protocol http1) instead of being upgraded.
    cp.tables.endpoints.set(`${B.ip}:7003`, [meshedHttpEndpoint(B.ip, 7003, ID("b"), false)]);
    cp.tables.endpoints.set(`${B.ip}:7103`, [ep(7103)]);
    for (const port of [7001, 7002]) {
      cp.tables.servers.set(`${wlB}|${port}`, detectServer("web", [], [allowAll("all")]));
    }
    cp.tables.servers.set(
      `${wlB}|7003`,
      detectServer("guarded", [
        prefixRoute("open", "/open", [onlyIdentity("a-only", ID("a"))]),
        prefixRoute("closed", "/closed", [onlyIdentity("c-only", ID("c"))]),
      ], []),
    );
    for (const port of [7101, 7102]) {
      cp.tables.servers.set(`${wlB}|${port}`, grpcServer("grpc", [allowAll("all")]));
    }
    cp.tables.servers.set(`${wlB}|7103`, grpcServer("grpc-guarded", [onlyIdentity("c-only", ID("c"))]));
    // Virtual services (nothing listens on these ports in b; a's proxy answers from policy):
    // 7010 routes with and without retries and a request timeout, 7011 an 80/20 split,
    // 7012 balancing over a slow and a fast endpoint, 7013 failure accrual.
    const prefix = (value: string): HttpRouteMatch => ({
      path: { kind: { $case: "prefix", value } },
      headers: [],
      queryParams: [],
      method: undefined,
    });
    const one = (
      path: string,
      decayMs = 10_000,
    ) => [{ backend: balancerBackend(path, { decayMs }), weight: 1 }];
    cp.tables.endpoints.set(P1, [ep(7001)]);
    cp.tables.endpoints.set(P2, [ep(7002)]);
    cp.tables.endpoints.set(BOTH, [ep(7001), ep(7002)]);
    cp.setOutbound(
      B.ip,
      7010,
      detectPolicy("routes", B.ip, 7010, [httpRouteOf("routes", [
        httpRule(one(P1), {
          matches: [prefix("/retry")],
          retry: {
            maxRetries: 2,
            maxRequestBytes: 0,
            conditions: { statusRanges: [{ start: 500, end: 599 }] },
            timeout: undefined,
            backoff: undefined,
          },
        }),
        httpRule(one(P1), { matches: [prefix("/noretry")] }),
        httpRule(one(P1), {
          matches: [prefix("/slow")],
          timeouts: { request: msDuration(300), response: undefined, idle: undefined },
        }),
      ])]),
    );
    cp.setOutbound(
      B.ip,
      7011,
      detectPolicy("split", B.ip, 7011, [httpRouteOf("split", [
        httpRule([{ backend: balancerBackend(P1), weight: 80 }, {
          backend: balancerBackend(P2),
          weight: 20,
        }]),
      ])]),
    );
    cp.setOutbound(
      B.ip,
      7012,
      detectPolicy("ewma", B.ip, 7012, [httpRouteOf("ewma", [httpRule(one(BOTH))])]),
    );
    cp.setOutbound(
      B.ip,
      7013,
      detectPolicy("accrual", B.ip, 7013, [httpRouteOf("accrual", [httpRule(one(BOTH, 20))])], {
        kind: {
          $case: "consecutiveFailures",
          value: {
            maxFailures: 3,
            backoff: {
              minBackoff: msDuration(1500),
              maxBackoff: msDuration(1500),
              jitterRatio: 0,
              respectRetryAfterHint: false,
            },
          },
        },
        ejection: undefined,
      }),
    );
    // 7014: a ServiceProfile (it wins over the fallback policy): a retryable route under a
    // budget, and a dst_override sending everything to the "two" service.
    cp.tables.profiles.set(`${B.ip}:7014`, {
      routes: [{
        condition: { match: { $case: "path", value: { regex: "/retry/.*" } } },
        responseClasses: [],
        metricsLabels: { route: "retry-route" },
        isRetryable: true,
        timeout: undefined,
      }],
      retryBudget: { retryRatio: 0.5, minRetriesPerSecond: 10, ttl: msDuration(10_000) },
      dstOverrides: [{ authority: P2, weight: 10_000, backendRef: undefined }],
      opaqueProtocol: false,
      fullyQualifiedName: "prof.default.svc.cluster.local",
      endpoint: undefined,
      parentRef: undefined,
      profileRef: undefined,
    });
    // 7104: gRPC with a 300 ms request timeout on the Slow method.
    cp.setOutbound(
      B.ip,
      7104,
      detectPolicy("grpc-timeout", B.ip, 7104, [httpRouteOf("grpc-timeout", [
        httpRule(one(GRPC), {
          matches: [prefix("/weft.test.Echo/Slow")],
          timeouts: { request: msDuration(300), response: undefined, idle: undefined },
        }),
      ])]),
    );
    // 7015: balancing over a live endpoint and a dead one; a short decay would soon let P2C try the
    // dead one again if nothing took it out of rotation.
    cp.tables.endpoints.set(HALF_DEAD, [ep(7001), meshedHttpEndpoint(DEAD_IP, 7001, ID("b"))]);
    cp.setOutbound(
      B.ip,
      7015,
      detectPolicy("halfdead", B.ip, 7015, [httpRouteOf("halfdead", [httpRule(one(HALF_DEAD, 20))])]),
    );
    // Direct control of one server port (toggling failures) through the fallback policy.
    cp.tables.endpoints.set(`${B.ip}:7002`, [ep(7002)]);
    await cp.start();

    const app = <T>(pod: string, ...args: string[]): Promise<T> =>
      m.json<T>(pod, `app ${args.join(" ")} in ${pod}`, appTs, ...args);
    const load = (spec: Record<string, unknown>) => app<Load>("a", "http-load", JSON.stringify(spec));
    const call = (spec: Record<string, unknown>) => app<GrpcResult>("a", "grpc-call", JSON.stringify(spec));
    const metrics = async (pod: string) => (await m.admin(pod, "/metrics")).body;

    await m.step(t, "setup: init, relays, servers in b, both proxies ready", async () => {
      for (const pod of ["a", "b"]) await m.meshPod(pod);
      await m.startApp("b", "http-b", [appTs, "http-server", "7001", "7002", "7003"]);
      await m.startApp("b", "grpc-b", [appTs, "grpc-server", "7101", "7102", "7103"]);
      for (const pod of ["a", "b"]) {
        m.startProxy(pod, {
          inboundPorts: "7001-7005,7101-7103",
          env: {
            [ProxyEnv.outboundDiscoveryIdleTimeout]: "60s",
            [ProxyEnv.log]: Deno.env.get("WEFT_HTTP_PROXY_LOG") ?? "info",
          },
        });
      }
      for (const pod of ["a", "b"]) await m.ready(pod);
    });

    await m.step(t, "HTTP/1.1 GET and POST arrive intact with the client's identity", async () => {
      const get = await load({
        url: `http://${B.ip}:7001/hello?x=1`,
        n: 1,
        headers: { "l5d-client-id": "forged.identity", "x-test": "kept" },
      });
      assert.equal(get.first.status, 200, JSON.stringify(get));
      const g = get.first.body;
      assert.equal(g.method, "GET");
      assert.equal(g.path, "/hello?x=1");
      assert.equal(g.version, "1.1", "the app saw the request downgraded back to HTTP/1.1");
      assert.equal(g.headers["l5d-client-id"], ID("a"), "the forged client id was replaced");
      assert.equal(g.headers["x-test"], "kept");
      assert.equal(g.headers["l5d-orig-proto"], undefined);
      assert.equal(get.first.headers["l5d-orig-proto"], undefined, "the response mark was removed");
      const payload = "payload-" + "x".repeat(5000);
      const post = await load({ url: `http://${B.ip}:7001/submit`, n: 1, method: "POST", body: payload });
      assert.equal(post.first.status, 200);
      assert.equal(post.first.body.method, "POST");
      assert.equal(post.first.body.body, payload);
    });

    await m.step(t, "requests over one connection spread across both endpoints", async () => {
      const r = await load({ url: `http://${B.ip}:7001/spread`, n: 40 });
      assert.deepEqual(r.statuses, { 200: 40 });
      assert.equal(r.connections, 1);
      const ma = await metrics("a");
      assert.ok(
        (r.ports["7001"] ?? 0) >= 5 && (r.ports["7002"] ?? 0) >= 5,
        JSON.stringify(r.ports) + ma.split("\n").filter((l) => l.startsWith("request_total")).join("\n"),
      );
    });

    await m.step(t, "gRPC unary and server streaming with trailers, balanced", async () => {
      const r = await call({ addr: `${B.ip}:7101`, n: 40, concurrency: 8, stream: 5 });
      assert.deepEqual(r.codes, { 0: 40 }, JSON.stringify(r));
      assert.ok((r.ports["7101"] ?? 0) >= 2 && (r.ports["7102"] ?? 0) >= 2, JSON.stringify(r.ports));
      assert.match(r.reply, /^710[12]:hello-\d+$/);
      assert.match(String(r.trailers["x-port"]), /^710[12]$/, "the unary trailer arrived");
      assert.equal(r.trailers["x-client-id"], ID("a"));
      assert.equal(r.streamCode, 0);
      assert.equal(r.streamed?.length, 5);
      assert.match(r.streamed![4], /:4$/);
    });

    await m.step(t, "an endpoint removed from discovery gets no new requests", async () => {
      cp.setEndpoints(WEB, [ep(7001)]);
      await until("the removal to reach a's proxy", async () => {
        const r = await load({ url: `http://${B.ip}:7001/probe`, n: 6 });
        return r.ports["7002"] === undefined ? r : undefined;
      });
      const r = await load({ url: `http://${B.ip}:7001/after`, n: 20 });
      assert.deepEqual(r.ports, { 7001: 20 });
      cp.setEndpoints(WEB, [ep(7001), ep(7002)]);
    });

    await m.step(
      t,
      "an endpoint that cannot be connected to leaves rotation, and a request whose connect failed goes to another",
      async () => {
        // 40 requests 60 ms apart: without reachability, P2C with a 20 ms decay would forget the dead
        // endpoint's failure between two requests and send it about half of them.
        const { statuses } = await load({ url: `http://${B.ip}:7015/halfdead`, n: 40, gapMs: 60 });
        const failed = Object.entries(statuses).filter(([c]) => c !== "200").reduce((n, [, v]) => n + v, 0);
        // The request whose connect to the dead endpoint failed was never sent: it went to the live one.
        assert.equal(failed, 0, `requests caught by the dead endpoint: ${JSON.stringify(statuses)}`);
        assert.equal(statuses["200"], 40, JSON.stringify(statuses));
      },
    );

    await m.step(t, "a service without endpoints answers 503", async () => {
      const before = metric(await metrics("a"), "outbound_http_errors_total", { error: "failfast" });
      const r = await load({ url: `http://${B.ip}:7005/`, n: 1 });
      assert.equal(r.first.status, 503, JSON.stringify(r));
      const after = metric(await metrics("a"), "outbound_http_errors_total", { error: "failfast" });
      assert.equal(after - before, 1, "the proxy counts the request it failed itself");
    });

    await m.step(
      t,
      "route authorization: allowed for a's identity, 403 / PERMISSION_DENIED otherwise",
      async () => {
        const open = await load({ url: `http://${B.ip}:7003/open/x`, n: 3 });
        assert.deepEqual(open.statuses, { 200: 3 }, "kept-alive HTTP/1 through the transport header");
        assert.equal(open.first.status, 200, JSON.stringify(open));
        assert.equal(open.first.body.headers["l5d-client-id"], ID("a"));
        const closed = await load({ url: `http://${B.ip}:7003/closed/x`, n: 1 });
        assert.equal(closed.first.status, 403, JSON.stringify(closed));
        const g = await call({ addr: `${B.ip}:7103`, n: 1 });
        assert.deepEqual(g.codes, { 7: 1 }, JSON.stringify(g));
      },
    );

    await m.step(
      t,
      "retries only on the retryable route; a request timeout answers 504 (gRPC: DEADLINE_EXCEEDED)",
      async () => {
        const retried = await load({ url: `http://${B.ip}:7010/retry/fail-once/k1`, n: 1 });
        assert.equal(retried.first.status, 200, JSON.stringify(retried));
        assert.equal(retried.first.body.seen, 2, "the server saw the failed attempt and the retry");
        const plain = await load({ url: `http://${B.ip}:7010/noretry/fail-once/k2`, n: 1 });
        assert.equal(plain.first.status, 500, "a route without retries passes the failure on");
        const t0 = Date.now();
        const slow = await load({ url: `http://${B.ip}:7010/slow/3000`, n: 1 });
        assert.equal(slow.first.status, 504, JSON.stringify(slow));
        assert.ok(Date.now() - t0 < 2500, "the timeout answered before the server did");
        const g = await call({ addr: `${B.ip}:7104`, n: 1, slowMs: 3000 });
        assert.deepEqual(g.codes, { 4: 1 }, `gRPC gets DEADLINE_EXCEEDED: ${JSON.stringify(g)}`);
      },
    );

    await m.step(t, "an 80/20 traffic split holds over 200 requests", async () => {
      const r = await load({ url: `http://${B.ip}:7011/split`, n: 200 });
      assert.deepEqual(r.statuses, { 200: 200 });
      // Binomial(200, 0.8): sd ≈ 5.7; ±25 is over 4 sd.
      const first = r.ports["7001"] ?? 0;
      assert.ok(first >= 135 && first <= 185, JSON.stringify(r.ports));
    });

    await m.step(t, "a slow endpoint gets less traffic than a fast one (peak EWMA)", async () => {
      const r = await load({ url: `http://${B.ip}:7012/slowport/7002/60`, n: 60 });
      assert.deepEqual(r.statuses, { 200: 60 });
      const fast = r.ports["7001"] ?? 0, slow = r.ports["7002"] ?? 0;
      assert.ok(slow >= 1 && fast >= 4 * slow, JSON.stringify(r.ports));
    });

    await m.step(t, "a failing endpoint is ejected, then restored after it recovers", async () => {
      const toggle = async (want: boolean) => {
        const r = await load({ url: `http://${B.ip}:7002/toggle-fail`, n: 1 });
        assert.equal(r.first.body.failing, want, JSON.stringify(r));
      };
      await toggle(true);
      try {
        const during = await load({ url: `http://${B.ip}:7013/accrual`, n: 40 });
        // Three consecutive failures eject it, and nothing else fails. The balancer may stop picking the failing
        // endpoint before its third failure (CI once saw 2), so the bound is at most three, all on that endpoint.
        const failed = during.statuses["500"] ?? 0;
        assert.ok(failed >= 1 && failed <= 3, JSON.stringify(during));
        assert.deepEqual(during.statuses, { 200: 40 - failed, 500: failed }, JSON.stringify(during));
        assert.deepEqual(during.ports, { 7001: 40 - failed, 7002: failed });
      } finally {
        await toggle(false);
      }
      // After the 1.5 s ejection the endpoint gets one probe, which succeeds and restores it.
      await new Promise((r) => setTimeout(r, 1700));
      const after = await load({ url: `http://${B.ip}:7013/accrual`, n: 40 });
      assert.deepEqual(after.statuses, { 200: 40 });
      assert.ok((after.ports["7002"] ?? 0) >= 5, JSON.stringify(after.ports));
    });

    await m.step(t, "a ServiceProfile: dst_override split, retryable route, route metrics", async () => {
      const r = await load({ url: `http://${B.ip}:7014/retry/fail-once/k3`, n: 1 });
      assert.equal(r.first.status, 200, JSON.stringify(r));
      assert.equal(r.first.body.port, 7002, "the override's service answered");
      assert.equal(r.first.body.seen, 2, "the profile route retried the 500");
      const other = await load({ url: `http://${B.ip}:7014/elsewhere/fail-once/k4`, n: 1 });
      assert.equal(other.first.status, 500, "requests outside the retryable route are not retried");
      const ma = await metrics("a");
      const rt = { dst: "prof.default.svc.cluster.local:7014", rt_route: "retry-route" };
      assert.equal(metric(ma, "route_request_total", rt), 1, ma);
      assert.equal(metric(ma, "route_actual_request_total", rt), 2);
      assert.equal(
        metric(ma, "route_response_total", { ...rt, status_code: "200", classification: "success" }),
        1,
      );
      assert.ok(metric(ma, "route_retryable_total", rt) >= 1);
      // The override's balancer in Linkerd's balancer families: parent the profile's Service, backend the
      // override's, as linkerd2-proxy names them from the authorities; three attempts (two, then one).
      const bal = {
        parent_kind: "Service",
        parent_namespace: "default",
        parent_name: "prof",
        parent_port: "7014",
        backend_kind: "Service",
        backend_name: "two",
        backend_port: "7002",
      };
      assert.equal(
        metric(ma, "outbound_http_balancer_queue_requests_total", bal),
        3,
        ma.split("\n").filter((l) => l.startsWith("outbound_http_balancer_queue_requests")).join("\n"),
      );
      assert.equal(metric(ma, "outbound_http_balancer_endpoints", { ...bal, endpoint_state: "ready" }), 1);
      // Forward backends (the fallback policy's, used for B:7002 above) are one address, no balancer, as in
      // Linkerd: no balancer series.
      assert.ok(metric(ma, "request_total", { direction: "outbound", target_addr: `${B.ip}:7002` }) >= 1);
      assert.equal(
        ma.split("\n").filter((l) => l.startsWith("outbound_http_balancer") && l.includes("egress-fallback"))
          .length,
        0,
      );
    });

    await m.step(t, "metrics count requests with direction, TLS and identities", async () => {
      const ma = await metrics("a");
      const out = { direction: "outbound", tls: "true", server_id: ID("b") };
      assert.ok(metric(ma, "request_total", { ...out, target_addr: `${B.ip}:7002` }) >= 5, ma);
      assert.ok(
        metric(ma, "response_total", { ...out, status_code: "200", classification: "success" }) >= 60,
      );
      assert.ok(
        metric(ma, "response_total", { ...out, target_addr: `${B.ip}:7003`, status_code: "403" }) >= 1,
      );
      const mb = await metrics("b");
      const inb = { direction: "inbound", tls: "true", client_id: ID("a") };
      assert.ok(
        metric(mb, "request_total", { ...inb, srv_name: "web", target_addr: `${B.ip}:7001` }) >= 5,
        mb,
      );
      assert.ok(metric(mb, "response_total", { ...inb, srv_name: "grpc", classification: "success" }) >= 20);
      assert.ok(
        metric(mb, "inbound_http_authz_allow_total", { route_name: "open", authz_name: "a-only" }) >= 1,
      );
      assert.ok(
        metric(mb, "inbound_http_authz_deny_total", { route_name: "closed", client_id: ID("a") }) >= 1,
      );
      assert.ok(metric(mb, "inbound_http_authz_deny_total", { srv_name: "grpc-guarded" }) >= 1);
      assert.ok(
        metric(mb, "tcp_open_total", { ...inb, srv_name: "web" }) >= 1,
        "HTTP connections are counted too",
      );
    });
    await m.step(
      t,
      "an HTTP/1.1 Upgrade through both proxies switches protocols and carries bytes both ways",
      async () => {
        const r = await app<
          { status: number; headers: Record<string, string>; echoes: string[]; closed: boolean }
        >(
          "a",
          "upgrade",
          JSON.stringify({ host: B.ip, port: 7001, messages: ["hello", "x".repeat(20_000), "bye"] }),
        );
        assert.equal(r.status, 101, JSON.stringify(r));
        assert.equal(r.headers["upgrade"], "echo");
        assert.equal(r.echoes.length, 3, JSON.stringify(r).slice(0, 300));
        assert.match(r.headers["x-port"], /^700[12]$/, "the app's own 101 came through");
        assert.deepEqual(r.echoes, ["hello", "x".repeat(20_000), "bye"], "bytes arrive whole and in order");
        assert.ok(r.closed, "the client's half-close reached the app, whose close came back");
      },
    );
    await m.step(
      t,
      "hostile HTTP/1 requests through the outbound proxy: each gets its status and a closed connection, others unaffected",
      async () => {
        // What the proxy detects as HTTP/1 reaches its codec; the rest (no request line) is
        // forwarded as opaque bytes, and the dribbled slowloris needs the 10 s header timeout:
        // those stay in the codec's own test (h1/server_test.ts).
        const latin1 = (w: string) => Uint8Array.from(w, (ch) => ch.charCodeAt(0));
        const corpus = HOSTILE_CORPUS.flatMap(([name, wire, status]) =>
          typeof wire === "string" && detectHttp(latin1(wire)) === "http1" ? [{ name, wire, status }] : []
        );
        assert.ok(corpus.length >= 20, `${corpus.length} corpus requests are detected as HTTP/1`);
        const [hostile, good] = await Promise.all([
          app<
            { name: string; status?: number; connection?: string; proxyError?: string; closed?: boolean }[]
          >(
            "a",
            "raw",
            JSON.stringify({
              host: B.ip,
              port: 7001,
              requests: corpus.map(({ name, wire }) => ({ name, wire })),
            }),
          ),
          load({ url: `http://${B.ip}:7001/good`, n: 100 }),
        ]);
        for (const { name, status } of corpus) {
          const r = hostile.find((h) => h.name === name);
          assert.equal(r?.status, status, `${name}: ${JSON.stringify(r)}`);
          assert.equal(r?.connection, "close", `${name}: connection: close`);
          assert.ok(r?.proxyError, `${name}: l5d-proxy-error says why`);
          assert.equal(r?.closed, true, `${name}: the proxy closed the connection`);
        }
        assert.deepEqual(good.statuses, { 200: 100 }, "the well-behaved client on another connection");
        const seen = await load({ url: `http://${B.ip}:7001/seen-paths`, n: 1 });
        const paths = seen.first.body.paths as string[];
        assert.ok(paths.includes("/good"), "the backend's record of paths works");
        assert.ok(!paths.some((p) => p.includes("smuggled")), "no smuggled request reached the backend");
      },
    );
    // Deno 2.9.6's node:http2 server aborted its process here in about half the runs (an nghttp2
    // assertion on GOAWAY); the proxy's own HTTP/2 framing must take a client's GOAWAY calmly.
    await m.step(t, "a gRPC client closing its channel with GOAWAY leaves the proxy serving", async () => {
      for (let i = 0; i < 4; i++) {
        const r = await call({ addr: `${B.ip}:7101`, n: 20, concurrency: 4, stream: 3, close: true });
        assert.deepEqual(r.codes, { 0: 20 });
      }
      assert.equal((await m.admin("a", "/ready")).status, 200, "a's proxy is gone");
    });
  });
});
