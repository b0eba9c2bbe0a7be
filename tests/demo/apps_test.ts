// The demo apps on loopback, as real processes: web → api over HTTP/1, the gRPC Echo service (unary and
// streaming) and the TCP line echo, each driven by load.ts until its own metrics count successes, bounded in time.
import assert from "node:assert/strict";
import { parseMetrics, sum } from "../e2e/lib/prom.ts";
import { waitFor } from "../e2e/lib/wait.ts";

const APPS = new URL("./apps/", import.meta.url).pathname;

/**
 * A port that is free now, chosen below the kernel's ephemeral range (32768+): a port from
 * `listen(0)` is released before the app binds it, and in the meantime any outgoing connection on
 * the machine may take it (seen in CI as AddrInUse).
 */
const taken = new Set<number>();
function freePort(): number {
  for (let i = 0; i < 1000; i++) {
    const port = 20_000 + Math.floor(Math.random() * 10_000);
    if (taken.has(port)) continue;
    try {
      Deno.listen({ hostname: "127.0.0.1", port }).close();
    } catch {
      continue;
    }
    taken.add(port);
    return port;
  }
  throw new Error("no free port in 20000-29999");
}

function start(file: string, env: Record<string, string>): Deno.ChildProcess {
  return new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", `${APPS}${file}`],
    env: { POD_NAME: file, ...env },
    stdout: "null",
    stderr: "piped",
  }).spawn();
}

/** SIGTERMs every child and returns their exit codes (0 = the app's own drain-and-exit handler ran). */
async function stop(children: Deno.ChildProcess[]): Promise<number[]> {
  for (const c of children) {
    try {
      c.kill("SIGTERM");
    } catch { /* exited */ }
  }
  const codes: number[] = [];
  for (const c of children) {
    const out = await c.output();
    if (!out.success) console.error(new TextDecoder().decode(out.stderr));
    codes.push(out.code);
  }
  return codes;
}

Deno.test({
  name: "demo apps: every service answers its load client on loopback and exits on SIGTERM",
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => {
    const p = Object.fromEntries(
      ["api", "web", "grpc", "grpcHealth", "tcp", "tcpHealth", "lh", "lg", "lt"].map((
        k,
      ) => [k, String(freePort())]),
    );
    const services = [
      start("http_service.ts", { ROLE: "api", PORT: p.api }),
      start("http_service.ts", { ROLE: "web", PORT: p.web, UPSTREAM: `http://127.0.0.1:${p.api}` }),
      start("grpc_service.ts", { GRPC_PORT: p.grpc, HEALTH_PORT: p.grpcHealth }),
      start("tcp_echo.ts", { PORT: p.tcp, HEALTH_PORT: p.tcpHealth }),
    ];
    // The load clients start once every service listens: a call before that is a failure the
    // test would count (seen in CI when the machine was busy and grpc-js was slow to bind).
    for (
      const url of [
        `http://127.0.0.1:${p.api}/item?n=1`,
        `http://127.0.0.1:${p.web}/?n=1`,
        `http://127.0.0.1:${p.grpcHealth}/healthz`,
        `http://127.0.0.1:${p.tcpHealth}/healthz`,
      ]
    ) {
      let status = 0;
      await waitFor(`${url} to answer 200`, async () => {
        const r = await fetch(url, { signal: AbortSignal.timeout(2000) });
        status = r.status;
        await r.body?.cancel();
        return r.ok;
      }, { timeoutMs: 30_000, describe: () => `status ${status}` });
    }
    const clients = [
      start("load.ts", {
        MODE: "http",
        TARGET: `http://127.0.0.1:${p.web}/`,
        RATE: "20",
        METRICS_PORT: p.lh,
      }),
      start("load.ts", { MODE: "grpc", TARGET: `127.0.0.1:${p.grpc}`, RATE: "20", METRICS_PORT: p.lg }),
      start("load.ts", { MODE: "tcp", TARGET: `127.0.0.1:${p.tcp}`, RATE: "20", METRICS_PORT: p.lt }),
    ];
    let stopped = false;
    try {
      const want: [string, string][] = [[p.lh, "get"], [p.lg, "say"], [p.lg, "count"], [p.lt, "line"]];
      for (const [port, call] of want) {
        let text = "";
        await waitFor(`load client on :${port} to count 5 successful ${call} calls`, async () => {
          text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
          return sum(parseMetrics(text), "demo_client_requests_total", { call, result: "success" }) >= 5;
        }, {
          timeoutMs: 30_000,
          describe: () => text.split("\n").filter((l) => l.startsWith("demo_client_req")).join(" "),
        });
        const failures = sum(parseMetrics(text), "demo_client_requests_total", { result: "failure" });
        assert.equal(failures, 0, `failures on :${port}: ${text}`);
      }
      const body = await (await fetch(`http://127.0.0.1:${p.web}/?n=7`)).json();
      assert.deepEqual(body.api, { pod: "http_service.ts", n: "7", item: "item-7" });
      assert.equal((await fetch(`http://127.0.0.1:${p.grpcHealth}/healthz`)).status, 200);
      assert.equal((await fetch(`http://127.0.0.1:${p.tcpHealth}/healthz`)).status, 200);
      stopped = true;
      // Clients first, as a rollout of the callers would: a server draining with GOAWAY while a
      // Deno node:http2 client still has streams open aborts that client (a Deno 2.9.6 bug).
      assert.deepEqual(await stop(clients), clients.map(() => 0), "every load client exits 0 on SIGTERM");
      assert.deepEqual(await stop(services), services.map(() => 0), "every service exits 0 on SIGTERM");
    } finally {
      if (!stopped) await stop([...clients, ...services]);
    }
  },
});
