/**
 * Tier 3: the data path on real sockets. Three "pods" (network namespaces on a bridge in a hub
 * namespace, 10.231.0.0/24, nothing in the host namespace): a and b are meshed (init's iptables
 * rules, a proxy running as UID 2102, an app), c is unmeshed. The control plane is served in
 * this process by grpc-js test servers, reached from each pod through a loopback relay.
 * Skipped when not root (namespaces and iptables need it).
 */
import assert from "node:assert/strict";
import { ProxyEnv } from "../proto/env.ts";
import { DEFAULT_PROXY_UID } from "../proto/ports.ts";
import { createTestCa } from "./testing/certs.ts";
import { meshedEndpoint } from "./testing/control_plane.ts";
import {
  allowAll,
  defaultPolicy,
  onlyIdentity as onlyIdentityOf,
  opaqueServer,
} from "./testing/inbound_servers.ts";
import { MeshFixture, workloadOf } from "./testing/mesh_fixture.ts";
import { identityOf as ID } from "./testing/mesh_pods.ts";
import { metric, until } from "./testing/poll.ts";

const ignore = Deno.uid() !== 0;
if (ignore) console.warn("data path tests skipped: network namespaces and iptables need root");

const root = new URL("..", import.meta.url).pathname;
const appTs = `${root}proxy/testing/app.ts`;
const initTs = `${root}init/main.ts`;
const deno = Deno.execPath();

type Json = { ok: boolean; data: string; error?: string };

/** Opaque servers, so every port is authorized per connection. */
const server = opaqueServer;
const unauthenticated = (name: string) => allowAll(defaultPolicy(name));
const onlyIdentity = (name: string, id: string) => onlyIdentityOf(id, defaultPolicy(name));
/** a and b are meshed; c is not. */
const FIXTURE = { prefix: "weft-datapath-", caName: "weft-test-mesh", pods: ["a", "b", "c"] };

Deno.test({
  name: "data path: two meshed pods through both proxies",
  ignore,
  sanitizeOps: false,
  sanitizeResources: false,
}, async (t) => {
  const other = await createTestCa("some-other-ca");
  await MeshFixture.run(FIXTURE, async (m) => {
    const { cp, work, ca, caFile, net } = m;
    const writeJson = async (name: string, v: unknown) => {
      const p = `${work}/${name}`;
      await Deno.writeTextFile(p, JSON.stringify(v));
      await Deno.chmod(p, 0o644);
      return p;
    };
    const credsA = m.creds.a;
    const foreign = await writeJson("foreign.json", await other.issue(ID("a")));
    const expired = await writeJson(
      "expired.json",
      await ca.issue(ID("a"), {
        notBefore: new Date(Date.now() - 7200_000),
        notAfter: new Date(Date.now() - 3600_000),
      }),
    );
    const B = net.pod("b");

    const wlB = workloadOf("b");
    for (let port = 8080; port <= 8084; port++) {
      cp.tables.endpoints.set(`${B.ip}:${port}`, [meshedEndpoint(B.ip, port, ID("b"))]);
    }
    cp.tables.servers.set(`${wlB}|8080`, server("web-8080", [unauthenticated("all")]));
    cp.tables.servers.set(`${wlB}|8081`, server("deny-8081", []));
    cp.tables.servers.set(`${wlB}|8082`, server("only-c", [onlyIdentity("c-only", ID("c"))]));
    cp.tables.servers.set(`${wlB}|8083`, server("only-a", [onlyIdentity("a-only", ID("a"))]));
    cp.tables.servers.set(`${wlB}|8084`, server("audit-8084", [unauthenticated("audit")]));
    await cp.start();

    const run = (pod: string, ...args: string[]) =>
      net.run(pod, [deno, "run", "-A", "--cached-only", ...args]);
    const app = (pod: string, ...args: string[]): Promise<Json> =>
      m.json<Json>(pod, `app ${args.join(" ")} in ${pod}`, appTs, ...args);
    const fetchIn = async (pod: string, path: string, method = "GET") =>
      (await app(pod, "fetch", `http://127.0.0.1:4191${path}`, method)) as unknown as {
        status: number;
        body: string;
      };
    const metrics = async (pod: string) => (await fetchIn(pod, "/metrics")).body;
    const waitListening = (file: string) =>
      until(
        `${file} to listen`,
        async () => (await Deno.readTextFile(file).catch(() => "")).includes("listening") || undefined,
      );

    const proxies = new Map<string, Deno.ChildProcess>();
    await m.step(t, "init installs the redirects in both meshed pods", async () => {
      for (const pod of ["a", "b"]) {
        const r = await run(
          pod,
          initTs,
          "apply",
          "--iptables-mode",
          "nft",
          "--proxy-uid",
          String(DEFAULT_PROXY_UID),
        );
        assert.equal(r.code, 0, r.stderr);
        const v = await run(pod, initTs, "print");
        assert.equal(v.code, 0);
      }
    });

    await m.step(t, "start relays, the app in b and both proxies", async () => {
      for (const pod of ["a", "b"]) await m.relay(pod);
      net.spawn(
        "b",
        [deno, "run", "-A", "--cached-only", appTs, "echo", "8080", "8081", "8082", "8083", "8084"],
        {},
        `${work}/app-b.log`,
      );
      await waitListening(`${work}/app-b.log.out`);
      for (const [pod, delay] of [["a", "3000"], ["b", "0"]]) {
        proxies.set(
          pod,
          m.startProxy(pod, {
            inboundPorts: "8080-8084",
            env: {
              WEFT_TEST_CERTIFY_DELAY_MS: delay,
              [ProxyEnv.outboundDiscoveryIdleTimeout]: "60s",
              [ProxyEnv.outboundConnectExpBackoffMax]: "1s",
              [ProxyEnv.shutdownEndpointEnabled]: "true",
              LINKERD2_PROXY_SHUTDOWN_GRACE_PERIOD: "10s",
            },
          }),
        );
      }
    });

    await m.step(t, "/ready waits for identity, /live does not", async () => {
      const notReady = await until("a's admin to answer", async () => {
        const r = await fetchIn("a", "/ready");
        return r.status === 0 ? undefined : r;
      });
      assert.equal(notReady.status, 503, "a was ready before its certificate arrived");
      assert.match(notReady.body, /identity is not certified/);
      assert.equal((await fetchIn("a", "/live")).status, 200);
      for (const pod of ["a", "b"]) {
        await until(`${pod} ready`, async () => (await fetchIn(pod, "/ready")).status === 200 || undefined);
      }
    });

    await m.step(t, "a meshed connection crosses both proxies with the expected identities", async () => {
      const r = await app("a", "client", `${B.ip}:8080`, "hello");
      assert.equal(r.data, `peer=${B.ip}\nhello`, JSON.stringify(r));
      const ma = await metrics("a");
      assert.ok(
        metric(ma, "tcp_open_total", {
          direction: "outbound",
          tls: "true",
          server_id: ID("b"),
          target_addr: `${B.ip}:8080`,
        }) >= 1,
        ma,
      );
      const mb = await metrics("b");
      const inbound = {
        direction: "inbound",
        tls: "true",
        client_id: ID("a"),
        srv_name: "web-8080",
        target_addr: `${B.ip}:8080`,
      };
      assert.ok(metric(mb, "tcp_open_total", inbound) >= 1, mb);
      assert.ok(metric(mb, "tcp_close_total", inbound) >= 1);
      assert.ok(metric(mb, "tcp_read_bytes_total", inbound) >= 5, "b read the 5 request bytes from a");
      assert.ok(metric(ma, "tcp_read_bytes_total", { direction: "outbound", server_id: ID("b") }) >= 20);
      assert.ok(
        metric(mb, "inbound_tcp_authz_allow_total", {
          srv_name: "web-8080",
          authz_name: "all",
          client_id: ID("a"),
        }) >= 1,
      );
      assert.ok(metric(mb, "identity_cert_expiration_timestamp_seconds", {}) > Date.now() / 1000);
    });

    await m.step(
      t,
      "policy: deny and identity-restricted ports refuse a, an allowed identity passes",
      async () => {
        assert.equal((await app("a", "client", `${B.ip}:8081`, "x")).data, "");
        assert.equal((await app("a", "client", `${B.ip}:8082`, "x")).data, "");
        assert.equal((await app("a", "client", `${B.ip}:8083`, "ok")).data, `peer=${B.ip}\nok`);
        const mb = await metrics("b");
        assert.ok(
          metric(mb, "inbound_tcp_authz_deny_total", { srv_name: "deny-8081", client_id: ID("a") }) >= 1,
        );
        assert.ok(
          metric(mb, "inbound_tcp_authz_deny_total", { srv_name: "only-c", client_id: ID("a") }) >= 1,
        );
        assert.ok(
          metric(mb, "inbound_tcp_authz_allow_total", { srv_name: "only-a", authz_name: "a-only" }) >= 1,
        );
      },
    );

    await m.step(
      t,
      "audit allows an unmeshed client and counts it; plaintext to an identity port is refused",
      async () => {
        assert.equal((await app("c", "client", `${B.ip}:8084`, "aud")).data, `peer=${B.ip}\naud`);
        assert.equal((await app("c", "client", `${B.ip}:8083`, "x")).data, "");
        const mb = await metrics("b");
        assert.ok(
          metric(mb, "inbound_tcp_authz_allow_total", {
            srv_name: "audit-8084",
            authz_name: "audit",
            tls: "no_identity",
          }) >= 1,
        );
        assert.ok(
          metric(mb, "inbound_tcp_authz_deny_total", { srv_name: "only-a", tls: "no_identity" }) >= 1,
        );
      },
    );

    await m.step(t, "the direct port refuses other-CA, expired and missing client certificates", async () => {
      const direct = `${B.ip}:4143`;
      const attempt = (creds: string) =>
        app("c", "tls", direct, ID("b"), creds, caFile, "transport.l5d.io/v1", "8080");
      // Positive control: a valid mesh client from c gets through, so the refusals below mean something.
      assert.equal((await attempt(credsA)).data, `peer=${B.ip}\nattack`);
      assert.equal((await attempt(foreign)).data, "");
      assert.equal((await attempt(expired)).data, "");
      assert.equal((await attempt("none")).data, "");
      // Plaintext on the direct port only ever sees a TLS alert, never the app.
      assert.doesNotMatch((await app("c", "client", direct, "plain")).data, /peer=/);
      const mb = await metrics("b");
      assert.ok(metric(mb, "inbound_tcp_errors_total", { error: "tls_untrusted_peer" }) >= 2, mb);
      assert.ok(metric(mb, "inbound_tcp_errors_total", { error: "direct_unauthenticated" }) >= 1);
      assert.ok(metric(mb, "inbound_tcp_errors_total", { error: "tls_handshake" }) >= 1);
    });

    await m.step(
      t,
      "control plane stopped: open and new connections keep working; restart re-syncs",
      async () => {
        const streaming = app("a", "stream", `${B.ip}:8080`, "15", "200");
        await new Promise((r) => setTimeout(r, 600));
        cp.stop();
        const s = await streaming;
        assert.ok(s.ok, `established connection broke: ${JSON.stringify(s)}`);
        assert.equal((await app("a", "client", `${B.ip}:8080`, "cached")).data, `peer=${B.ip}\ncached`);
        const before = cp.calls.watchPort;
        // Restart with a changed policy: only a re-synced proxy can know about it.
        cp.tables.servers.set(`${wlB}|8080`, server("deny-after-restart", []));
        await cp.start();
        await until(
          "b to re-watch its ports",
          () => Promise.resolve(cp.calls.watchPort >= before + 5 || undefined),
        );
        await until(
          "the new policy to apply",
          async () => (await app("a", "client", `${B.ip}:8080`, "x")).data === "" || undefined,
        );
        const mb = await metrics("b");
        assert.ok(metric(mb, "inbound_tcp_authz_deny_total", { srv_name: "deny-after-restart" }) >= 1);
        cp.tables.servers.set(`${wlB}|8080`, server("web-8080", [unauthenticated("all")]));
        cp.setServer(wlB, 8080, server("web-8080", [unauthenticated("all")]));
      },
    );

    await m.step(t, "SIGTERM drains open connections, then the proxy exits", async () => {
      await until(
        "8080 open again",
        async () => (await app("a", "client", `${B.ip}:8080`, "y")).data !== "" || undefined,
      );
      const streaming = app("a", "stream", `${B.ip}:8080`, "8", "150");
      await new Promise((r) => setTimeout(r, 400));
      const pa = proxies.get("a")!;
      pa.kill("SIGTERM");
      const s = await streaming;
      assert.ok(s.ok, `connection was cut during the drain: ${JSON.stringify(s)}`);
      const status = await pa.status;
      assert.equal(status.code, 0);
      assert.equal(
        (await app("a", "client", `${B.ip}:8080`, "z", "1500")).data,
        "",
        "a connection passed after a's proxy exited",
      );
    });
  });
});
