/**
 * Tier 3: dual-stack "pods" (network namespaces with an IPv4 and an IPv6 address on one bridge),
 * init's real rules and the real proxy, configured from the one IPv6 choice the injector makes
 * (proto/ip_families.ts). The attack is a client that reaches the app over the pod's IPv6 address:
 * with IPv6 on, that connection must go through the proxy (and its policy) like IPv4 does; with
 * IPv6 off, init leaves IPv6 alone and it reaches the app directly. In neither case is it dropped
 * or refused because init redirected it to a port the proxy does not listen on.
 * Skipped when not root (namespaces and iptables need it).
 */
import assert from "node:assert/strict";
import { ProxyEnv } from "../../proto/env.ts";
import { initIpv6Args, proxyListenAddrs } from "../../proto/ip_families.ts";
import { allowAll, defaultPolicy, opaqueServer } from "../testing/inbound_servers.ts";
import { MeshFixture, workloadOf } from "../testing/mesh_fixture.ts";
import { sh } from "../testing/netns.ts";
import { APP_TS, applyInit } from "../testing/mesh_pods.ts";
import { metric, until } from "../testing/poll.ts";

const ignore = Deno.uid() !== 0;
if (ignore) console.warn("IPv6 netns tests skipped: network namespaces and iptables need root");

const deno = Deno.execPath();
/** IPv6 addresses of the pods, a ULA prefix inside the test's own namespaces. */
const V6 = (i: number) => `fd31:ee:f7::${10 + i}`;

const openToAll = opaqueServer("app-8080", [allowAll(defaultPolicy("all-unauthenticated"))]);
/** Both proxies hold the certificate of service account "web". */
const FIXTURE = {
  prefix: "weft-ipv6-",
  caName: "weft-ipv6-test",
  pods: ["dual", "v4only", "client"],
  certificates: ["web"],
};

Deno.test({
  name:
    "hostile: IPv6 connections to a dual-stack pod are proxied when IPv6 is on, pass untouched when off, never blackholed",
  ignore,
  sanitizeOps: false,
  sanitizeResources: false,
}, async () => {
  await MeshFixture.run(FIXTURE, async (m) => {
    const { cp, net } = m;
    for (const [i, name] of ["dual", "v4only", "client"].entries()) {
      // nodad: the address is usable at once instead of after duplicate detection.
      await sh("ip", ["-n", net.pod(name).ns, "-6", "addr", "add", `${V6(i)}/64`, "dev", "eth0", "nodad"]);
    }
    for (const pod of ["dual", "v4only"]) {
      cp.tables.servers.set(`${workloadOf(pod)}|8080`, openToAll);
    }
    await cp.start();

    for (const [pod, ipv6] of [["dual", true], ["v4only", false]] as const) {
      await applyInit(net, pod, initIpv6Args(ipv6));
      await m.relay(pod);
      // The app listens on both families: `::` is dual-stack.
      await m.startApp(pod, `app-${pod}`, [APP_TS, "echo", ":::8080"]);
      const listen = proxyListenAddrs(ipv6);
      m.startProxy(pod, {
        as: "web",
        inboundPorts: "8080",
        env: {
          [ProxyEnv.inboundListenAddr]: listen.inbound,
          [ProxyEnv.outboundListenAddrs]: listen.outbound,
          [ProxyEnv.adminListenAddr]: listen.admin,
        },
      });
    }
    await m.startApp("client", "app-client", [APP_TS, "echo", ":::9090"]);
    const app = async (pod: string, ...args: string[]) => {
      const r = await net.run(pod, [deno, "run", "-A", "--cached-only", APP_TS, ...args]);
      const res = JSON.parse(r.stdout.trim().split("\n").pop() ?? "{}") as {
        ok: boolean;
        data: string;
        error?: string;
      };
      // The apps listen on `::`: IPv4 peers show IPv4-mapped.
      if (typeof res.data === "string") res.data = res.data.replace("peer=::ffff:", "peer=");
      return res;
    };
    const metrics = async (pod: string) => {
      const r = await app(pod, "fetch", "http://127.0.0.1:4191/metrics");
      return (r as unknown as { body?: string }).body ?? "";
    };
    for (const pod of ["dual", "v4only"]) {
      await until(`${pod} proxy ready`, async () => {
        const r = await app(pod, "fetch", "http://127.0.0.1:4191/ready") as unknown as { status: number };
        return r.status === 200 || undefined;
      });
    }
    const inboundOpens = async (pod: string) =>
      metric(await metrics(pod), "tcp_open_total", { direction: "inbound" });

    // The app greets with the peer it sees: its own pod address when the proxy forwarded the
    // connection, the client's address when the connection reached it directly.
    const dual = { v4: net.pod("dual").ip, v6: V6(0) }, v4only = { v4: net.pod("v4only").ip, v6: V6(1) };
    const client = { v4: net.pod("client").ip, v6: V6(2) };

    // IPv6 on: both families through the proxy.
    const before = await inboundOpens("dual");
    const d6 = await app("client", "client", `${dual.v6}:8080`, "over-ipv6");
    assert.ok(d6.ok, `IPv6 to the dual-stack pod failed: ${JSON.stringify(d6)}`);
    assert.equal(d6.data, `peer=${dual.v6}\nover-ipv6`, "IPv6 went through the proxy");
    const d4 = await app("client", "client", `${dual.v4}:8080`, "over-ipv4");
    assert.ok(d4.ok, `IPv4 to the dual-stack pod failed: ${JSON.stringify(d4)}`);
    assert.equal(d4.data, `peer=${dual.v4}\nover-ipv4`, "IPv4 went through the [::] listener");
    assert.equal(await inboundOpens("dual") - before, 2, "the proxy counted both inbound connections");

    // The app's own outbound IPv6 goes through the outbound proxy ([::1]:4140) and arrives.
    const outBefore = metric(await metrics("dual"), "tcp_open_total", { direction: "outbound", peer: "dst" });
    // (`stream` keeps its side open while it sends: `client` half-closes at once, which the outbound
    // proxy's protocol detection does not carry through today, over IPv4 as over IPv6.)
    const out6 = await app("dual", "stream", `${client.v6}:9090`, "2", "100");
    assert.ok(out6.ok, `outbound IPv6: ${JSON.stringify(out6)}`);
    assert.equal(out6.data, `peer=${dual.v6}\nline0\nline1\n`);
    const outAfter = metric(await metrics("dual"), "tcp_open_total", { direction: "outbound", peer: "dst" });
    assert.equal(outAfter - outBefore, 1, "the outbound proxy carried the app's IPv6 connection");

    // IPv6 off: IPv6 is not redirected and reaches the app directly; IPv4 is proxied.
    const o6 = await app("client", "client", `${v4only.v6}:8080`, "over-ipv6");
    assert.ok(o6.ok, `IPv6 to the IPv4-only-proxied pod failed: ${JSON.stringify(o6)}`);
    assert.equal(o6.data, `peer=${client.v6}\nover-ipv6`, "IPv6 reached the app without the proxy");
    const o4 = await app("client", "client", `${v4only.v4}:8080`, "over-ipv4");
    assert.equal(o4.data, `peer=${v4only.v4}\nover-ipv4`, "IPv4 went through the proxy");
  });
});
