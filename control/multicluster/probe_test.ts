import assert from "node:assert/strict";
import { Registry } from "prom-client";
import { parseLink } from "./link.ts";
import { ServiceMirrorMetrics } from "./metrics.ts";
import { GatewayProber, probeTimeoutMs } from "./probe.ts";

async function metric(registry: Registry, name: string): Promise<string[]> {
  return (await registry.metrics()).split("\n").filter((l) => l.startsWith(name));
}

Deno.test("probe: alive against a 200, dead on 503 and on a timeout, latency and failures recorded", async () => {
  let mode: "ok" | "fail" | "hang" = "ok";
  const stop = new AbortController();
  const paths: string[] = [];
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, signal: stop.signal, onListen: () => {} },
    async (req) => {
      paths.push(new URL(req.url).pathname);
      if (mode === "hang") await new Promise((r) => setTimeout(r, 1500));
      return new Response(mode === "fail" ? "no\n" : "ready\n", { status: mode === "fail" ? 503 : 200 });
    },
  );
  const port = (server.addr as Deno.NetAddr).port;
  const link = parseLink({
    metadata: { name: "east" },
    spec: {
      targetClusterName: "east",
      gatewayAddress: "127.0.0.1",
      gatewayPort: 30143,
      probeSpec: { path: "/ready", port, period: "1s" },
    },
  });
  const registry = new Registry();
  const logs: string[] = [];
  const prober = new GatewayProber({
    link: () => link,
    metrics: new ServiceMirrorMetrics(registry),
    gatewayIps: () => Promise.resolve(["127.0.0.1"]),
    log: (m) => logs.push(m),
  });
  try {
    assert.equal(await prober.probeOnce(), true);
    assert.deepEqual(paths, ["/ready"]);
    assert.deepEqual(await metric(registry, "gateway_alive"), [
      'gateway_alive{target_cluster_name="east"} 1',
    ]);
    assert.ok((await metric(registry, "gateway_probe_latency_ms_count")).includes(
      'gateway_probe_latency_ms_count{target_cluster_name="east"} 1',
    ));
    mode = "fail";
    assert.equal(await prober.probeOnce(), false);
    assert.deepEqual(await metric(registry, "gateway_alive"), [
      'gateway_alive{target_cluster_name="east"} 0',
    ]);
    mode = "hang";
    const t0 = Date.now();
    assert.equal(await prober.probeOnce(), false);
    assert.ok(Date.now() - t0 < 1400, "the probe timeout (1s for a 1s period) cut the hanging request");
    assert.deepEqual(await metric(registry, "gateway_probe_failures_total"), [
      'gateway_probe_failures_total{target_cluster_name="east"} 2',
    ]);
    mode = "ok";
    assert.equal(await prober.probeOnce(), true);
    assert.deepEqual(await metric(registry, "gateway_alive"), [
      'gateway_alive{target_cluster_name="east"} 1',
    ]);
    assert.ok(logs.some((l) => l.includes("probe failed")) && logs.some((l) => l.includes("is alive")));
  } finally {
    stop.abort();
    await server.finished;
  }
  assert.equal(probeTimeoutMs(3000), 3000);
  assert.equal(probeTimeoutMs(100), 1000);
  assert.equal(probeTimeoutMs(60_000), 10_000);
});
