/**
 * Egress end to end on real parts, without the cluster: a stand-in "external" host in its own
 * network namespace (HTTP on 80, TLS on 443, a TCP echo on 5432), a meshed client pod (init's
 * iptables rules, the real proxy as UID 2102) whose outbound policy comes from the real policy
 * controller (its gRPC server and index, fed EgressNetworks and routes through its store), and
 * Destination from the in-process test control plane. The cluster networks are set so the
 * namespaces' 10.231.0.0/24 counts as outside the cluster. Shows Allow, Deny (403 for HTTP, a
 * refused connection for TCP and TLS), an HTTPRoute, a TLSRoute chosen by SNI and a TCPRoute
 * letting traffic through a Deny, and the route metrics (TCP, TLS and HTTP) labelled with the
 * EgressNetwork parent. Then a Service parent (issue 24): a TLSRoute and a TCPRoute on a Service's
 * ClusterIP send its traffic to their backend Service's endpoint, found through Destination.
 * Skipped when not root (namespaces and iptables need it).
 */
import assert from "node:assert/strict";
import * as grpc from "@grpc/grpc-js";
import { Registry } from "prom-client";
import { defaultPolicyConfig } from "../../control/policy/config.ts";
import { PolicyGrpcServer } from "../../control/policy/grpc_server.ts";
import type { Kind, Obj } from "../../control/policy/resources.ts";
import { PolicyStore } from "../../control/policy/store.ts";
import { toTcpAddress } from "../../proto/ip.ts";
import { MeshFixture } from "../../proxy/testing/mesh_fixture.ts";
import { applyInit, startRelay, waitForLine } from "../../proxy/testing/mesh_pods.ts";
import { metric, until } from "../../proxy/testing/poll.ts";

const ignore = Deno.uid() !== 0;
if (ignore) console.warn("egress netns test skipped: network namespaces and iptables need root");

const appTs = new URL("../../proxy/testing/app.ts", import.meta.url).pathname;
const tlsTs = new URL("./tls_server.ts", import.meta.url).pathname;
const EGRESS_NS = "linkerd-egress";

type Fetched = { status: number; body: string };
type Conn = { ok: boolean; data: string; error?: string };

Deno.test({
  name:
    "egress: EgressNetwork allow/deny, HTTP/TLS/TCP routes, through the proxy with the real policy controller",
  ignore,
  sanitizeOps: false,
  sanitizeResources: false,
}, async (t) => {
  await MeshFixture.run(
    { prefix: "weft-egress-", caName: "weft-test-egress", pods: ["client", "ext"] },
    async (m) => {
      const EXT = m.pod("ext").ip;
      const cfg = defaultPolicyConfig({ clusterNetworks: ["10.96.0.0/12", "10.244.0.0/16"] });
      const store = new PolicyStore();
      const policy = new PolicyGrpcServer({ store, config: cfg, registry: new Registry() });
      const policySock = `${m.work}/real-policy.sock`;
      await new Promise<void>((resolve, reject) =>
        policy.server.bindAsync(
          `unix:${policySock}`,
          grpc.ServerCredentials.createInsecure(),
          (e) => e ? reject(e) : resolve(),
        )
      );
      let rv = 1;
      const put = (kind: Kind, object: Obj, type: "added" | "modified" = "added") =>
        store.apply({
          type,
          kind,
          object: { ...object, metadata: { ...object.metadata, resourceVersion: String(rv++) } },
        });
      const enParent = (port?: number) => ({
        group: "policy.linkerd.io",
        kind: "EgressNetwork",
        name: "ext-net",
        namespace: EGRESS_NS,
        ...(port ? { port } : {}),
      });
      const egressNet = (trafficPolicy: string): Obj => ({
        metadata: { name: "ext-net", namespace: EGRESS_NS, creationTimestamp: "2026-01-01T00:00:00Z" },
        spec: { trafficPolicy, networks: [{ cidr: `${EXT}/32` }] },
      } as Obj);

      const app = <T>(...args: string[]) => m.json<T>("client", `app ${args.join(" ")}`, appTs, ...args);
      const get = (path: string) => app<Fetched>("fetch", `http://${EXT}:80${path}`);
      const echo = (text: string) => app<Conn>("client", `${EXT}:5432`, text);
      const tlsTo = (sni: string) =>
        app<Conn>("tls", `${EXT}:443`, sni, "none", m.caFile, "none", "0", '"ping"');
      const metrics = async () => (await app<Fetched>("fetch", "http://127.0.0.1:4191/metrics")).body;
      const en = { parent_group: "policy.linkerd.io", parent_kind: "EgressNetwork", parent_name: "ext-net" };

      try {
        await m.step(t, "external servers, the client's redirects, relays and proxy", async () => {
          await m.cp.start();
          m.spawn("ext", "ext-http", [appTs, "http", "80"]);
          m.spawn("ext", "ext-echo", [appTs, "echo", "5432"]);
          m.spawn("ext", "ext-tls", [tlsTs, "443", m.creds.ext]);
          for (const log of ["ext-http", "ext-echo", "ext-tls"]) {
            await waitForLine(`${m.work}/${log}.log.out`, "listening");
          }
          await applyInit(m.net, "client");
          await startRelay(
            m.net,
            "client",
            { dst: m.cp.dstSocket, policy: policySock },
            `${m.work}/relay-client.log`,
          );
          m.startProxy("client", { inboundPorts: "8080" });
          await until("the client proxy to be ready", async () => {
            const r = await app<Fetched>("fetch", "http://127.0.0.1:4191/ready");
            return r.status === 200 || undefined;
          }, 60_000);
        });

        await m.step(
          t,
          "Allow: HTTP and TCP reach the external host, labelled with the EgressNetwork",
          async () => {
            put("EgressNetwork", egressNet("Allow"));
            const r = await get("/anything");
            assert.equal(r.status, 200, r.body);
            assert.match(r.body, /^peer=/);
            const e = await echo("hello");
            assert.ok(e.ok && e.data.includes("hello"), JSON.stringify(e));
            const text = await metrics();
            assert.ok(
              metric(text, "outbound_tcp_route_open_total", {
                ...en,
                parent_port: "5432",
                route_kind: "default",
                route_name: "tcp-egress-allow",
              }) >= 1,
              text.split("\n").filter((l) => l.startsWith("outbound_tcp_route")).join("\n"),
            );
          },
        );

        await m.step(t, "Deny: HTTP gets 403, a TCP connection is refused", async () => {
          put("EgressNetwork", egressNet("Deny"), "modified");
          const r = await until("HTTP to be denied", async () => {
            const r = await get("/anything");
            return r.status === 403 ? r : undefined;
          });
          assert.match(r.body, /traffic not allowed/);
          assert.ok(
            metric(await metrics(), "outbound_http_route_request_statuses_total", {
              ...en,
              parent_port: "80",
              route_kind: "default",
              route_name: "http-egress-deny",
              hostname: EXT,
              http_status: "403",
            }) >= 1,
          );
          const e = await until("TCP to be refused", async () => {
            const e = await echo("hello");
            return e.data.includes("hello") ? undefined : e;
          });
          assert.ok(!e.data.includes("peer="), JSON.stringify(e));
          const text = await metrics();
          assert.ok(
            metric(text, "outbound_tcp_route_close_total", {
              ...en,
              route_name: "tcp-egress-deny",
              error: "forbidden",
            }) >= 1,
          );
        });

        await m.step(
          t,
          "an HTTPRoute on the EgressNetwork's port 80 lets its path through the Deny",
          async () => {
            put("GatewayHTTPRoute", {
              metadata: { name: "allowed-path", namespace: EGRESS_NS, generation: 1 },
              spec: {
                parentRefs: [enParent(80)],
                rules: [{ matches: [{ path: { type: "PathPrefix", value: "/allowed" } }] }],
              },
            } as Obj);
            const ok = await until("/allowed to pass", async () => {
              const r = await get("/allowed/x");
              return r.status === 200 ? r : undefined;
            });
            assert.match(ok.body, /^peer=/);
            assert.equal((await get("/other")).status, 403);
            assert.ok(
              metric(await metrics(), "outbound_http_route_request_statuses_total", {
                ...en,
                route_group: "gateway.networking.k8s.io",
                route_kind: "HTTPRoute",
                route_name: "allowed-path",
                http_status: "200",
              }) >= 1,
            );
          },
        );

        await m.step(t, "a TLSRoute on port 443 lets one SNI through, others are refused", async () => {
          put("TLSRoute", {
            metadata: { name: "api-sni", namespace: EGRESS_NS, generation: 1 },
            spec: { parentRefs: [enParent(443)], hostnames: ["api.example.test"], rules: [{}] },
          } as Obj);
          const ok = await until("the allowed SNI to pass", async () => {
            const c = await tlsTo("api.example.test");
            return c.data.includes("tls sni=api.example.test") ? c : undefined;
          });
          assert.match(ok.data, /ping/);
          const refused = await tlsTo("blocked.example.test");
          assert.ok(!refused.data.includes("tls sni="), JSON.stringify(refused));
          const text = await metrics();
          assert.ok(
            metric(text, "outbound_tls_route_open_total", {
              ...en,
              parent_port: "443",
              route_kind: "TLSRoute",
              route_name: "api-sni",
              hostname: "api.example.test",
            }) >= 1,
            text.split("\n").filter((l) => l.startsWith("outbound_tls_route")).join("\n"),
          );
          assert.ok(
            metric(text, "outbound_tls_route_close_total", {
              ...en,
              route_name: "tls-egress-deny",
              hostname: "blocked.example.test",
              error: "forbidden",
            }) >= 1,
          );
        });

        await m.step(t, "a TCPRoute on port 5432 lets TCP through the Deny", async () => {
          put("TCPRoute", {
            metadata: { name: "db", namespace: EGRESS_NS, generation: 1 },
            spec: { parentRefs: [enParent(5432)], rules: [{}] },
          } as Obj);
          const e = await until("TCP to pass", async () => {
            const e = await echo("again");
            return e.data.includes("again") ? e : undefined;
          });
          assert.match(e.data, /^peer=/);
          const text = await metrics();
          assert.ok(
            metric(text, "outbound_tcp_route_open_total", {
              ...en,
              route_kind: "TCPRoute",
              route_name: "db",
            }) >= 1,
          );
        });
        await m.step(
          t,
          "a Service's TLSRoute and TCPRoute route in-cluster traffic to their backend Service (parent_kind Service)",
          async () => {
            // A ClusterIP on the pods' subnet (routable in the namespaces, no pod holds it); the backend
            // Service's endpoint is the stand-in host, unmeshed, from the test Destination.
            const svc = (name: string, clusterIP: string): Obj => ({
              metadata: { name, namespace: "default" },
              spec: { clusterIP, ports: [{ port: 443 }, { port: 5432 }] },
            } as Obj);
            put("Service", svc("db", "10.231.0.200"));
            put("Service", svc("ext-svc", "10.231.0.201"));
            for (const port of [443, 5432]) {
              m.cp.setEndpoints(`ext-svc.default.svc.cluster.local:${port}`, [
                { addr: toTcpAddress(EXT, port), weight: 1, metricLabels: {} },
              ]);
            }
            const dbParent = (port: number) => ({ kind: "Service", name: "db", port });
            put("TLSRoute", {
              metadata: { name: "db-sni", namespace: "default", generation: 1 },
              spec: {
                parentRefs: [dbParent(443)],
                hostnames: ["api.example.test"],
                rules: [{ backendRefs: [{ name: "ext-svc", port: 443 }] }],
              },
            } as Obj);
            put("TCPRoute", {
              metadata: { name: "db-tcp", namespace: "default", generation: 1 },
              spec: {
                parentRefs: [dbParent(5432)],
                rules: [{ backendRefs: [{ name: "ext-svc", port: 5432 }] }],
              },
            } as Obj);
            const ok = await until("the Service's TLS route to pass", async () => {
              const c = await app<Conn>(
                "tls",
                "10.231.0.200:443",
                "api.example.test",
                "none",
                m.caFile,
                "none",
                "0",
                '"ping"',
              );
              return c.data.includes("tls sni=api.example.test") ? c : undefined;
            });
            assert.match(ok.data, /ping/);
            // No default route is appended under a Service parent: an SNI no route matches is refused.
            const other = await app<Conn>(
              "tls",
              "10.231.0.200:443",
              "other.example.test",
              "none",
              m.caFile,
              "none",
              "0",
              '"ping"',
            );
            assert.ok(!other.data.includes("tls sni="), JSON.stringify(other));
            const e = await until("TCP over the Service's TCPRoute", async () => {
              const e = await app<Conn>("client", "10.231.0.200:5432", "via-service");
              return e.data.includes("via-service") ? e : undefined;
            });
            assert.match(e.data, /^peer=/);
            const svcLabels = { parent_group: "core", parent_kind: "Service", parent_name: "db" };
            const text = await metrics();
            const l4Lines = text.split("\n").filter((l) => /^outbound_t(cp|ls)_route/.test(l)).join("\n");
            assert.ok(
              metric(text, "outbound_tls_route_open_total", {
                ...svcLabels,
                parent_port: "443",
                route_kind: "TLSRoute",
                route_name: "db-sni",
                hostname: "api.example.test",
              }) >= 1,
              l4Lines,
            );
            assert.ok(
              metric(text, "outbound_tcp_route_open_total", {
                ...svcLabels,
                parent_port: "5432",
                route_kind: "TCPRoute",
                route_name: "db-tcp",
              }) >= 1,
              l4Lines,
            );
          },
        );
      } finally {
        await policy.shutdown();
      }
    },
  );
});
