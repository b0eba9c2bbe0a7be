import assert from "node:assert/strict";
import { Registry } from "../metrics/registry.ts";
import { serveProxyAdmin } from "./admin.ts";

/** An admin server on the dual-stack wildcard, as when the proxy listens on [::]:4191. */
function start(onShutdown?: () => void) {
  const abort = new AbortController();
  const registry = new Registry();
  const lines: string[] = [];
  const admin = serveProxyAdmin({
    hostname: "::",
    port: 0,
    registry,
    notReady: () => undefined,
    onShutdown,
    signal: abort.signal,
    log: (_level, message) => lines.push(message),
  });
  const url = (host: string, path: string) => `http://${host}:${admin.addr.port}${path}`;
  const stop = async () => {
    abort.abort();
    await admin.finished;
  };
  return { url, stop, registry, lines };
}

async function post(url: string): Promise<{ status: number; body: string }> {
  const res = await fetch(url, { method: "POST" });
  return { status: res.status, body: await res.text() };
}

Deno.test("admin: /shutdown accepts loopback peers in every form the kernel reports them", async () => {
  let calls = 0;
  const a = start(() => calls++);
  try {
    // IPv4 loopback arrives on the dual-stack socket as ::ffff:127.0.0.1; IPv6 loopback as ::1.
    assert.deepEqual(await post(a.url("127.0.0.1", "/shutdown")), { status: 200, body: "shutdown\n" });
    assert.deepEqual(await post(a.url("[::1]", "/shutdown")), { status: 200, body: "shutdown\n" });
    const get = await fetch(a.url("127.0.0.1", "/shutdown"));
    assert.equal(get.status, 405);
    await get.body?.cancel();
    await new Promise((r) => setTimeout(r, 0));
    assert.equal(calls, 2);
    assert.match(await a.registry.metrics(), /proxy_admin_shutdown_forbidden_total 0/);
  } finally {
    await a.stop();
  }
});

Deno.test("admin: without the opt-in /shutdown is 404 even from loopback", async () => {
  const a = start();
  try {
    assert.equal((await post(a.url("127.0.0.1", "/shutdown"))).status, 404);
    for (const path of ["/live", "/ready", "/metrics"]) {
      const res = await fetch(a.url("127.0.0.1", path));
      assert.equal(res.status, 200, path);
      await res.body?.cancel();
    }
  } finally {
    await a.stop();
  }
});
