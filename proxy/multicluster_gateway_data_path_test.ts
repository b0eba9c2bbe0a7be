/**
 * Tier 3, multicluster gateway (issue 23): real proxies in network namespaces, real mesh TLS.
 * client's proxy → gw's proxy (gateway mode) → target's proxy → app, where Destination describes
 * the "mirror" addresses as Linkerd's does for a gateway-mode mirror: the gateway's address and
 * identity, opaque transport to its 4143, and an authority override naming the target Service.
 *
 * Pods: client (meshed, allowed by the gateway and by the target), other (meshed, allowed by the
 * gateway, not by the target), rogue (meshed, allowed by neither; also plays an attacker sending
 * the forwarded-identity field straight to the target), gw (gateway mode, trusted by target),
 * target (HTTP/1 app echoing `l5d-client-id` on 9090, opaque TCP echo on 8080; not 8090, where the
 * pods' relay exposes the policy controller). Skipped unless root.
 */
import assert from "node:assert/strict";
import { WeftProxyEnv } from "../proto/env.ts";
import { Ports } from "../proto/ports.ts";
import {
  balancerBackend,
  detectPolicy,
  httpRouteOf,
  httpRule,
  meshedEndpoint,
  meshedHttpEndpoint,
} from "./testing/control_plane.ts";
import { HostileWorld, identityOf, opaqueProfile } from "./testing/hostile_world.ts";
import { detectServer, grpcServer, onlyIdentity, opaqueServer, resource } from "./testing/inbound_servers.ts";
import { workloadOf } from "./testing/mesh_fixture.ts";
import { metric } from "./testing/poll.ts";

const ignore = Deno.uid() !== 0;
if (ignore) {
  console.warn("multicluster gateway data-path test skipped: network namespaces and iptables need root");
}

/** Unassigned addresses of the pods' subnet, standing in for the mirror Services' cluster IPs. */
const MIRROR = "10.231.0.200";
const LOOP_MIRROR = "10.231.0.201";
const RETRY_MIRROR = "10.231.0.202";
/** An address nobody answers on: an endpoint whose connects time out. */
const DEAD = "10.231.0.250";
const DOMAIN = "svc.cluster.local";
const TARGET_NAME = `target.default.${DOMAIN}`;
const LOOP_NAME = `loop.default.${DOMAIN}`;
const RETRY_NAME = `retry.default.${DOMAIN}`;
const DATA_PATH_APP = new URL("./testing/data_path_app.ts", import.meta.url).pathname;
/** The target's gRPC (HTTP/2) port. */
const GRPC = 9091;

/** What the destination controller answers for a gateway-mode mirror's endpoints. */
function gatewayEndpoint(gwIp: string, authority: string): ReturnType<typeof meshedEndpoint> {
  return {
    ...meshedHttpEndpoint(gwIp, Ports.proxyInbound, identityOf("gw"), false),
    protocolHint: { protocol: undefined, opaqueTransport: { inboundPort: Ports.proxyInbound } },
    authorityOverride: { authorityOverride: authority },
  };
}

Deno.test({
  name: "multicluster gateway: identities end to end, gateway and target policy, spoofing and loops refused",
  ignore,
  sanitizeOps: false,
  sanitizeResources: false,
}, async (t) => {
  let failed = false;
  const w = await HostileWorld.start({
    meshed: [
      { name: "client", apps: [] },
      { name: "other", apps: [] },
      { name: "rogue", apps: [] },
      { name: "gw", apps: [], env: { [WeftProxyEnv.inboundGateway]: "true" } },
      {
        name: "target",
        apps: [["http-id", "9090"], ["echo", "8080"]],
        opaquePorts: [8080],
        env: { [WeftProxyEnv.inboundTrustedGatewayIdentities]: identityOf("gw") },
      },
    ],
    unmeshed: [],
    tables: (cp, w) => {
      const GW = w.ip("gw"), T = w.ip("target");
      for (const port of [8080, 9090]) {
        cp.tables.endpoints.set(`${MIRROR}:${port}`, [gatewayEndpoint(GW, `${TARGET_NAME}:${port}`)]);
        cp.tables.endpoints.set(`${LOOP_MIRROR}:${port}`, [gatewayEndpoint(GW, `${LOOP_NAME}:${port}`)]);
        // The loop: the named Service is itself a gateway-mode mirror.
        cp.tables.endpoints.set(`${LOOP_NAME}:${port}`, [gatewayEndpoint(GW, `${TARGET_NAME}:${port}`)]);
      }
      // HTTP goes by the mirror Service's policy: a balancer over Destination.Get(<mirror>:<port>).
      cp.tables.endpoints.set(`${MIRROR}:${GRPC}`, [gatewayEndpoint(GW, `${TARGET_NAME}:${GRPC}`)]);
      for (
        const [ip, mirror, port] of [[MIRROR, "target-east", 9090], [LOOP_MIRROR, "loop-east", 9090], [
          MIRROR,
          "target-east",
          GRPC,
        ]] as const
      ) {
        const path = `${mirror}.default.${DOMAIN}:${port}`;
        cp.tables.endpoints.set(path, cp.tables.endpoints.get(`${ip}:${port}`)!);
        const route = httpRouteOf("default", [httpRule([{ backend: balancerBackend(path), weight: 1 }])]);
        cp.tables.outbound.set(`${ip}:${port}`, detectPolicy(mirror, ip, port, [route]));
      }
      cp.tables.endpoints.set(`${TARGET_NAME}:${GRPC}`, [
        meshedHttpEndpoint(T, GRPC, identityOf("target"), true),
      ]);
      cp.tables.endpoints.set(`${TARGET_NAME}:9090`, [
        meshedHttpEndpoint(T, 9090, identityOf("target"), false),
      ]);
      cp.tables.endpoints.set(`${TARGET_NAME}:8080`, [meshedEndpoint(T, 8080, identityOf("target"))]);
      // A Service with two dead endpoints and a live one: the gateway must try another endpoint.
      cp.tables.endpoints.set(`${RETRY_MIRROR}:8080`, [gatewayEndpoint(GW, `${RETRY_NAME}:8080`)]);
      cp.tables.endpoints.set(`${RETRY_NAME}:8080`, [
        meshedEndpoint(DEAD, 8080, identityOf("target")),
        meshedEndpoint("10.231.0.251", 8080, identityOf("target")),
        meshedEndpoint(T, 8080, identityOf("target")),
      ]);
      for (const ip of [MIRROR, LOOP_MIRROR, RETRY_MIRROR]) {
        cp.tables.profiles.set(`${ip}:8080`, opaqueProfile());
      }
      // The gateway's own policy (its inbound port): client and other may use it, rogue may not.
      cp.tables.servers.set(
        `${workloadOf("gw")}|${Ports.proxyInbound}`,
        opaqueServer("gateway", [
          onlyIdentity(identityOf("client"), resource("MeshTLSAuthentication", "client")),
          onlyIdentity(identityOf("other"), resource("MeshTLSAuthentication", "other")),
        ]),
      );
      // The target's policy names the original caller only.
      const onlyClient = [onlyIdentity(identityOf("client"), resource("MeshTLSAuthentication", "client"))];
      cp.tables.servers.set(`${workloadOf("target")}|9090`, detectServer("web", [], onlyClient));
      cp.tables.servers.set(`${workloadOf("target")}|8080`, opaqueServer("echo", onlyClient));
      cp.tables.servers.set(`${workloadOf("target")}|${GRPC}`, grpcServer("grpc", onlyClient));
    },
  });
  const T = w.ip("target");
  await w.mesh.startApp("target", "app-target-grpc", [DATA_PATH_APP, "grpc-server", String(GRPC)]);
  type GrpcResult = { ok: boolean; codes: Record<string, number>; ports: Record<string, number> };
  const grpcCall = (from: string) =>
    w.mesh.json<GrpcResult>(
      from,
      `grpc-call from ${from}`,
      DATA_PATH_APP,
      "grpc-call",
      JSON.stringify({ addr: `${MIRROR}:${GRPC}`, n: 3 }),
    );
  const tcp = (from: string, target: string, text: string) => w.app(from, "client", target, text);
  /** A hand-made mesh client of `from`: mTLS to `ip`'s 4143 with a transport header. */
  const direct = (from: string, to: string, port: number, payload: string, name = "", fwd = "") =>
    w.app(
      from,
      "tls",
      `${w.ip(to)}:${Ports.proxyInbound}`,
      identityOf(to),
      w.creds.get(from)!,
      w.caFile,
      "transport.l5d.io/v1",
      String(port),
      JSON.stringify(payload),
      name,
      fwd,
    );
  const step = async (name: string, fn: () => Promise<void>) => {
    failed = !(await t.step(name, fn)) || failed;
  };
  try {
    await step("HTTP/1 through the gateway: the app sees the original client's identity", async () => {
      for (let i = 0; i < 3; i++) {
        const r = await w.fetch("client", `http://${MIRROR}:9090/`);
        // The request names the remote Service (the authority override), not the local mirror.
        assert.deepEqual(r, {
          status: 200,
          body: `peer=${T} client-id=${identityOf("client")} host=${TARGET_NAME}:9090`,
        });
      }
      const g = await w.metrics("gw");
      assert.ok(
        metric(g, "inbound_gateway_open_total", {
          client_id: identityOf("client"),
          target_name: `${TARGET_NAME}:9090`,
        }) >= 1,
        g,
      );
      const m = await w.metrics("target");
      assert.ok(
        metric(m, "inbound_forwarded_identity_total", {
          gateway_id: identityOf("gw"),
          client_id: identityOf("client"),
        }) >= 1,
        m,
      );
      // Target metrics label the request with the original client, never the gateway.
      assert.ok(
        metric(m, "request_total", { direction: "inbound", client_id: identityOf("client") }) >= 3,
        m,
      );
      assert.equal(metric(m, "request_total", { direction: "inbound", client_id: identityOf("gw") }), 0, m);
    });

    await step(
      "opaque TCP through the gateway, authorized at the target by the original identity",
      async () => {
        const r = await tcp("client", `${MIRROR}:8080`, "hello");
        assert.equal(r.data, `peer=${T}\nhello`, JSON.stringify(r));
        const m = await w.metrics("target");
        assert.ok(
          metric(m, "inbound_tcp_authz_allow_total", {
            client_id: identityOf("client"),
            target_addr: `${T}:8080`,
          }) >= 1,
          m,
        );
      },
    );

    await step(
      "HTTP/2 (gRPC) through the gateway, authorized at the target by the original identity",
      async () => {
        const ok = await grpcCall("client");
        assert.deepEqual(ok.codes, { "0": 3 }, JSON.stringify(ok));
        // other may use the gateway, but the target's policy names client only: PERMISSION_DENIED.
        const denied = await grpcCall("other");
        assert.deepEqual(denied.codes, { "7": 3 }, JSON.stringify(denied));
        const m = await w.metrics("target");
        assert.ok(
          metric(m, "request_total", {
            direction: "inbound",
            target_addr: `${T}:${GRPC}`,
            client_id: identityOf("client"),
          }) >= 3,
          m,
        );
      },
    );

    await step("a connect failure at the gateway tries another endpoint", async () => {
      for (let i = 0; i < 4; i++) {
        const r = await tcp("client", `${RETRY_MIRROR}:8080`, `r${i}`);
        assert.equal(r.data, `peer=${T}\nr${i}`, JSON.stringify(r));
      }
      const g = await w.metrics("gw");
      assert.equal(metric(g, "inbound_gateway_errors_total", { error: "connect" }), 0, g);
      assert.equal(
        metric(g, "inbound_gateway_open_total", { target_name: `${RETRY_NAME}:8080` }),
        4,
        g,
      );
    });

    await step("the target's policy refuses a caller the gateway allowed (by its own identity)", async () => {
      const h = await w.fetch("other", `http://${MIRROR}:9090/`);
      assert.equal(h.status, 403, JSON.stringify(h));
      const r = await tcp("other", `${MIRROR}:8080`, "x");
      assert.doesNotMatch(r.data, /peer=/, JSON.stringify(r));
      const m = await w.metrics("target");
      assert.ok(
        metric(m, "inbound_tcp_authz_deny_total", {
          client_id: identityOf("other"),
          target_addr: `${T}:8080`,
        }) >=
          1,
        m,
      );
    });

    await step("the gateway's policy refuses an unlisted caller", async () => {
      const h = await w.fetch("rogue", `http://${MIRROR}:9090/`);
      assert.notEqual(h.status, 200, JSON.stringify(h));
      assert.doesNotMatch(h.body, /peer=/);
      const r = await tcp("rogue", `${MIRROR}:8080`, "x");
      assert.doesNotMatch(r.data, /peer=/, JSON.stringify(r));
      const g = await w.metrics("gw");
      assert.ok(
        metric(g, "inbound_gateway_errors_total", { error: "unauthorized", target_name: "" }) >= 2,
        g,
      );
      assert.equal(metric(g, "inbound_gateway_open_total", { client_id: identityOf("rogue") }), 0, g);
    });

    await step(
      "hostile: a non-gateway peer sending a forwarded identity is refused by the target",
      async () => {
        const r = await direct("rogue", "target", 8080, "spoof", "", identityOf("client"));
        assert.doesNotMatch(r.data, /peer=/, JSON.stringify(r));
        const m = await w.metrics("target");
        assert.ok(
          metric(m, "inbound_tcp_errors_total", {
            error: "forwarded_identity_untrusted",
            target_addr: `${T}:${Ports.proxyInbound}`,
          }) >= 1,
          m,
        );
        // The same field sent to the gateway (a chain, or a spoof) is refused there too.
        const g1 = await direct("client", "gw", 8080, "x", TARGET_NAME, identityOf("other"));
        assert.doesNotMatch(g1.data, /peer=/, JSON.stringify(g1));
        const g = await w.metrics("gw");
        assert.ok(metric(g, "inbound_gateway_errors_total", { error: "forwarded_chain" }) >= 1, g);
      },
    );

    await step("hostile: names that are not <svc>.<ns>.svc.<domain> are refused by the gateway", async () => {
      for (const name of ["evil.example.com", `a.b.c.${DOMAIN}`, DOMAIN, `target.default.svc.other.local`]) {
        const r = await direct("client", "gw", 8080, "x", name);
        assert.doesNotMatch(r.data, /peer=/, `${name}: ${JSON.stringify(r)}`);
      }
      const g = await w.metrics("gw");
      assert.ok(metric(g, "inbound_gateway_errors_total", { error: "bad_name", target_name: "" }) >= 4, g);
      // A well-formed name on the hand-made client works: the refusals above are the names'.
      const ok = await direct("client", "gw", 8080, "fine", TARGET_NAME);
      assert.equal(ok.data, `peer=${T}\nfine`, JSON.stringify(ok));
    });

    await step("a loop (the named Service is itself behind a gateway) is refused", async () => {
      const h = await w.fetch("client", `http://${LOOP_MIRROR}:9090/`);
      assert.notEqual(h.status, 200, JSON.stringify(h));
      const r = await tcp("client", `${LOOP_MIRROR}:8080`, "x");
      assert.doesNotMatch(r.data, /peer=/, JSON.stringify(r));
      const g = await w.metrics("gw");
      assert.ok(
        metric(g, "inbound_gateway_errors_total", { error: "loop", target_name: `${LOOP_NAME}:8080` }) >= 1,
        g,
      );
    });

    await step("without gateway mode a named header is still refused", async () => {
      const r = await direct("client", "target", 8080, "x", TARGET_NAME);
      assert.doesNotMatch(r.data, /peer=/, JSON.stringify(r));
      const m = await w.metrics("target");
      assert.ok(
        metric(m, "inbound_tcp_errors_total", {
          error: "gateway_unsupported",
          target_addr: `${T}:${Ports.proxyInbound}`,
        }) >= 1,
        m,
      );
    });
  } catch (e) {
    failed = true;
    throw e;
  } finally {
    await w.close(failed);
  }
});
