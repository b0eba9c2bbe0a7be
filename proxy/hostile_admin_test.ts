/**
 * Tier 3, hostile: another pod tries to stop a meshed pod's proxy through its admin port, which
 * the injector binds to 0.0.0.0:4191 (probes and Prometheus) and init leaves unredirected.
 * Pods: a (meshed, /shutdown enabled as by `config.linkerd.io/proxy-admin-shutdown=enabled`),
 * b (meshed, not enabled), c (unmeshed). Skipped when not root.
 */
import assert from "node:assert/strict";
import { ProxyEnv } from "../proto/env.ts";
import { Ports } from "../proto/ports.ts";
import { meshedEndpoint } from "./testing/control_plane.ts";
import { HostileWorld, identityOf } from "./testing/hostile_world.ts";
import { metric } from "./testing/poll.ts";

const ignore = Deno.uid() !== 0;
if (ignore) console.warn("hostile admin test skipped: network namespaces and iptables need root");

Deno.test({
  name: "hostile: /shutdown from another pod is refused",
  ignore,
  sanitizeOps: false,
  sanitizeResources: false,
}, async () => {
  let failed = true;
  const w = await HostileWorld.start({
    meshed: [
      {
        name: "a",
        apps: [["echo", "8080"]],
        opaquePorts: [8080],
        env: { [ProxyEnv.shutdownEndpointEnabled]: "true" },
      },
      { name: "b", apps: [["echo", "8080"]], opaquePorts: [8080] },
    ],
    unmeshed: [{ name: "c", apps: [] }],
    tables: (cp, w) => {
      for (const p of ["a", "b"]) {
        cp.tables.endpoints.set(`${w.ip(p)}:8080`, [meshedEndpoint(w.ip(p), 8080, identityOf(p))]);
      }
    },
  });
  try {
    const A = w.ip("a"), B = w.ip("b");
    const admin = (ip: string, path: string) => `http://${ip}:${Ports.proxyAdmin}${path}`;
    const local = (path: string) => admin("127.0.0.1", path);
    // A well-behaved client of a (unmeshed c, and meshed b through both proxies).
    const served = async (when: string) => {
      for (const from of ["c", "b"]) {
        const r = await w.app(from, "client", `${A}:8080`, when);
        assert.equal(r.data, `peer=${A}\n${when}`, `${from} → a ${when}: ${JSON.stringify(r)}`);
      }
    };
    await served("before");

    const fromC = await w.fetch("c", admin(A, "/shutdown"), "POST");
    assert.equal(fromC.status, 403, JSON.stringify(fromC));
    assert.match(fromC.body, /only from inside the pod \(loopback\), not from 10\.231\.0\.\d+/);
    // From a meshed pod the request leaves through b's outbound proxy; it must not be accepted either.
    const fromB = await w.fetch("b", admin(A, "/shutdown"), "POST");
    assert.notEqual(fromB.status, 200, JSON.stringify(fromB));
    console.log(`POST /shutdown to a from c: ${fromC.status}; from meshed b: ${fromB.status}`);

    assert.equal((await w.fetch("a", local("/ready"))).status, 200, "a's proxy stopped being ready");
    await served("after");
    // Probes and Prometheus still reach the admin port from another pod.
    for (const path of ["/live", "/ready", "/metrics"]) {
      assert.equal((await w.fetch("c", admin(A, path))).status, 200, path);
    }
    const scraped = (await w.fetch("c", admin(A, "/metrics"))).body;
    assert.ok(metric(scraped, "proxy_admin_shutdown_forbidden_total", {}) >= 1, scraped);
    assert.ok(metric(scraped, "tcp_open_total", { direction: "inbound", target_addr: `${A}:8080` }) >= 4);

    // Without the opt-in the endpoint does not exist, not even for the pod itself.
    assert.equal((await w.fetch("b", local("/shutdown"), "POST")).status, 404);
    assert.equal((await w.fetch("c", admin(B, "/shutdown"), "POST")).status, 404);
    assert.equal((await w.fetch("b", local("/ready"))).status, 200);

    // With it, a container of the pod (loopback) stops its proxy: what a Job's app does.
    const own = await w.fetch("a", local("/shutdown"), "POST");
    assert.equal(own.status, 200, JSON.stringify(own));
    const status = await w.proxies.get("a")!.status;
    assert.equal(status.code, 0, "a's proxy did not exit cleanly after its own /shutdown");
    failed = false;
  } finally {
    await w.close(failed);
  }
});
