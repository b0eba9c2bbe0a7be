/**
 * Tier 3, hostile: clients in other pods try to make a meshed pod's inbound proxy dial something
 * the pod does not expose — an app port bound to 127.0.0.1, the proxy's own ports, or another
 * address altogether — on the redirected path (any port of the pod IP) and on the direct path
 * (mTLS to 4143 with a transport header naming the port). Pods: a (meshed; TCP echo on 8080 and
 * on 127.0.0.1:7000 only, HTTP on 8090 and on 127.0.0.1:7090 only; /shutdown enabled, so reaching
 * its admin port through the inbound proxy would stop it), b (meshed client), c (unmeshed
 * client), d (unmeshed bystander). Skipped when not root.
 */
import assert from "node:assert/strict";
import { ProxyEnv } from "../proto/env.ts";
import { Ports } from "../proto/ports.ts";
import { meshedEndpoint, meshedHttpEndpoint } from "./testing/control_plane.ts";
import { type FetchResult, HostileWorld, identityOf } from "./testing/hostile_world.ts";
import { metric } from "./testing/poll.ts";

const ignore = Deno.uid() !== 0;
if (ignore) console.warn("hostile inbound target test skipped: network namespaces and iptables need root");

const OWN_PORTS = [Ports.proxyAdmin, Ports.proxyOutbound, Ports.proxyInbound, Ports.proxyControl];

Deno.test({
  name: "hostile: inbound targets — loopback-only app ports, the proxy's own ports, other addresses",
  ignore,
  sanitizeOps: false,
  sanitizeResources: false,
}, async (t) => {
  let failed = false;
  const w = await HostileWorld.start({
    meshed: [
      {
        name: "a",
        apps: [["echo", "8080", "127.0.0.1:7000"], ["http", "8090", "127.0.0.1:7090"]],
        opaquePorts: [8080, 7000],
        env: { [ProxyEnv.shutdownEndpointEnabled]: "true" },
      },
      { name: "b", apps: [] },
    ],
    unmeshed: [{ name: "c", apps: [] }, { name: "d", apps: [["echo", "8080"]] }],
    tables: (cp, w) => {
      const A = w.ip("a");
      for (const port of [8080, 7000]) {
        cp.tables.endpoints.set(`${A}:${port}`, [meshedEndpoint(A, port, identityOf("a"))]);
      }
      for (const port of [8090, 7090]) {
        cp.tables.endpoints.set(`${A}:${port}`, [meshedHttpEndpoint(A, port, identityOf("a"))]);
      }
    },
  });
  const A = w.ip("a"), C = w.ip("c"), D = w.ip("d");
  const tcp = (from: string, target: string, text: string) => w.app(from, "client", target, text);
  /** The mesh client c holds a valid certificate: connects to a's 4143 naming `port` in the header. */
  const direct = (port: number, payload = "attack") =>
    w.app(
      "c",
      "tls",
      `${A}:${Ports.proxyInbound}`,
      identityOf("a"),
      w.creds.get("c")!,
      w.caFile,
      "transport.l5d.io/v1",
      String(port),
      JSON.stringify(payload),
    );
  const wellBehaved = async () => {
    assert.equal((await tcp("c", `${A}:8080`, "ok")).data, `peer=${A}\nok`);
    const h = await w.fetch("b", `http://${A}:8090/`);
    assert.deepEqual(h, { status: 200, body: `peer=${A}` });
  };
  const step = async (name: string, fn: () => Promise<void>) => {
    failed = !(await t.step(name, fn)) || failed;
  };
  try {
    await step("the app sees the pod's own IP as the client address", async () => {
      for (const from of ["c", "b"]) {
        assert.equal((await tcp(from, `${A}:8080`, "x")).data, `peer=${A}\nx`, `TCP from ${from}`);
        assert.deepEqual(await w.fetch(from, `http://${A}:8090/`), { status: 200, body: `peer=${A}` });
      }
      assert.equal((await direct(8080)).data, `peer=${A}\nattack`, "direct path with a transport header");
    });

    await step("hostile: app bound to 127.0.0.1 is unreachable through the inbound proxy", async () => {
      // Control: the loopback-only ports are served inside the pod, so refusals below are the proxy's.
      assert.equal((await tcp("a", "127.0.0.1:7000", "in")).data, "peer=127.0.0.1\nin");
      assert.deepEqual(await w.fetch("a", "http://127.0.0.1:7090/"), { status: 200, body: "peer=127.0.0.1" });
      for (const from of ["c", "b"]) {
        const r = await tcp(from, `${A}:7000`, "x");
        assert.doesNotMatch(
          r.data,
          /peer=/,
          `TCP from ${from} reached the loopback-only app: ${JSON.stringify(r)}`,
        );
        const h: FetchResult = await w.fetch(from, `http://${A}:7090/`);
        assert.notEqual(h.status, 200, `HTTP from ${from}: ${JSON.stringify(h)}`);
        assert.doesNotMatch(h.body, /peer=/);
        console.log(`HTTP from ${from} to the loopback-only app: ${h.status} ${h.body.trim()}`);
      }
      const d = await direct(7000);
      assert.doesNotMatch(d.data, /peer=/, `direct path: ${JSON.stringify(d)}`);
      const m = await w.metrics("a");
      assert.ok(
        metric(m, "inbound_tcp_errors_total", { error: "connect", target_addr: `${A}:7000` }) >= 3,
        m,
      );
      await wellBehaved();
    });

    await step("hostile: inbound target on the proxy's own ports is refused", async () => {
      const shutdown = "POST /shutdown HTTP/1.1\r\nhost: localhost\r\ncontent-length: 0\r\n\r\n";
      for (const port of OWN_PORTS) {
        const r = await direct(port, port === Ports.proxyAdmin ? shutdown : "attack");
        assert.equal(r.data, "", `direct path to own port ${port} answered: ${JSON.stringify(r)}`);
      }
      // Redirected path: 4140 is redirected like any app port (4190 and 4191 are not redirected).
      for (const from of ["c", "b"]) {
        // `{` cannot start an HTTP request, so b's outbound proxy forwards these bytes as TCP.
        const r = await tcp(from, `${A}:${Ports.proxyOutbound}`, "{x}");
        assert.equal(r.data, "", `redirected ${from} → a:${Ports.proxyOutbound}: ${JSON.stringify(r)}`);
      }
      const m = await w.metrics("a");
      for (const port of OWN_PORTS) {
        const n = metric(m, "inbound_tcp_errors_total", {
          error: "forbidden_port",
          target_addr: `${A}:${port}`,
        });
        assert.ok(n >= (port === Ports.proxyOutbound ? 3 : 1), `forbidden_port for ${port}: ${n}\n${m}`);
      }
      assert.equal((await w.fetch("a", `http://127.0.0.1:${Ports.proxyAdmin}/ready`)).status, 200);
      await wellBehaved();
    });

    await step(
      "hostile: a peer routing another address to this pod does not make its proxy a relay",
      async () => {
        // c sends packets for d's address to a; a's redirect hands them to its proxy, whose UID the
        // outbound redirect exempts. Dialling that original destination would reach d *as a*.
        await w.sh("c", "ip", "route", "add", `${D}/32`, "via", A);
        try {
          const r = await tcp("c", `${D}:8080`, "x");
          assert.doesNotMatch(r.data, /peer=/, `a's proxy relayed c to d: ${JSON.stringify(r)}`);
        } finally {
          await w.sh("c", "ip", "route", "del", `${D}/32`, "via", A);
        }
        const m = await w.metrics("a");
        assert.ok(
          metric(m, "inbound_tcp_errors_total", { error: "forbidden_ip", target_addr: `${D}:8080` }) >= 1,
          m,
        );
        assert.equal(
          (await tcp("c", `${D}:8080`, "direct")).data,
          `peer=${C}\ndirect`,
          "d serves c directly",
        );
        await wellBehaved();
      },
    );
  } catch (e) {
    failed = true;
    throw e;
  } finally {
    await w.close(failed);
  }
});
