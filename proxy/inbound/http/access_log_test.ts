/**
 * The inbound access log: the bounded sink drops (and counts) instead of waiting on a slow writer,
 * and the inbound HTTP stack, served over real sockets to a real application, writes one line per
 * request in Linkerd's apache and json formats.
 */
import assert from "node:assert/strict";
import * as http from "node:http";
import * as net from "node:net";
import type { AddressInfo } from "node:net";
import type { Server } from "../../../proto/gen_messages/inbound.ts";
import { toIpAddress } from "../../../proto/ip.ts";
import { HttpMetrics } from "../../metrics/http_metrics.ts";
import { Registry } from "../../metrics/registry.ts";
import { metric } from "../../testing/poll.ts";
import { AccessLog, type AccessLogFormat, LineSink, rfc3339 } from "./access_log.ts";
import { compileHttpServer } from "./authorize.ts";
import { InboundHttp } from "./stack.ts";

const A = "a.ns.serviceaccount.identity.linkerd.cluster.local";
const everywhere = [
  { net: { ip: toIpAddress("0.0.0.0"), prefixLen: 0 }, except: [] },
  { net: { ip: toIpAddress("::"), prefixLen: 0 }, except: [] },
];
const server: Server = {
  protocol: { kind: { $case: "detect", value: { timeout: { seconds: 10n, nanos: 0 }, httpRoutes: [] } } },
  serverIps: [],
  authorizations: [{
    networks: everywhere,
    authentication: { permit: { $case: "unauthenticated", value: {} } },
    labels: {},
    metadata: { kind: { $case: "default", value: "all-unauthenticated" } },
  }],
  labels: { group: "policy.linkerd.io", kind: "server", name: "web" },
};

/** Collects what the sink writes; `hold` keeps every write pending (a stuck stderr). */
function writer(hold = false) {
  const dec = new TextDecoder();
  let text = "";
  let writes = 0;
  return {
    get text() {
      return text;
    },
    get writes() {
      return writes;
    },
    write(p: Uint8Array): Promise<number> {
      writes++;
      if (hold) return new Promise(() => {});
      text += dec.decode(p);
      return Promise.resolve(p.length);
    },
  };
}

Deno.test("access log sink: a stuck writer never blocks push; lines past the bound are dropped and counted", () => {
  const w = writer(true);
  let dropped = 0;
  const sink = new LineSink(w, { maxBytes: 100, onDrop: () => dropped++ });
  const t0 = performance.now();
  // The first line goes to the (stuck) writer; the buffer then holds 100 bytes of the rest.
  for (let i = 0; i < 50; i++) sink.push("x".repeat(19));
  assert.ok(performance.now() - t0 < 50, "push returned at once");
  assert.equal(w.writes, 1);
  assert.equal(sink.pending, 100);
  assert.equal(dropped, 50 - 1 - 5);
});

Deno.test("access log: rfc3339 timestamps with microseconds", () => {
  assert.equal(rfc3339(Date.UTC(2022, 7, 23, 20, 28, 20, 71) + 0.809), "2022-08-23T20:28:20.071809Z");
});

async function serveWithLog(format: AccessLogFormat, clientId: string | undefined) {
  const app = http.createServer((req, res) => {
    res.statusCode = req.url === "/missing" ? 404 : 200;
    res.setHeader("content-length", "2");
    res.end("ok");
  });
  await new Promise<void>((r) => app.listen(0, "127.0.0.1", () => r()));
  const appPort = (app.address() as AddressInfo).port;
  const registry = new Registry();
  const out = writer();
  const stack = new InboundHttp({
    metrics: new HttpMetrics(registry),
    connectTimeoutMs: 1000,
    log: () => {},
    accessLog: new AccessLog(format, out, { registry }),
  });
  const policy = compileHttpServer(server);
  const proxy = net.createServer((sock) => {
    sock.on("error", () => {});
    void stack.serve(sock, "http1", {
      ip: "127.0.0.1",
      port: appPort,
      targetAddr: `127.0.0.1:${appPort}`,
      conn: { clientIp: "127.0.0.1", tls: clientId ? { clientId } : undefined },
      clientAddr: `127.0.0.1:${sock.remotePort}`,
      tls: clientId ? { tls: "true", client_id: clientId } : { tls: "no_identity", no_tls_reason: "x" },
      policy: () => policy,
    }).finally(() => sock.destroy());
  });
  await new Promise<void>((r) => proxy.listen(0, "127.0.0.1", () => r()));
  const port = (proxy.address() as AddressInfo).port;
  return {
    port,
    out,
    registry,
    close: async () => {
      stack.close();
      await new Promise((r) => proxy.close(r));
      app.closeAllConnections();
      await new Promise((r) => app.close(r));
    },
  };
}

/** `n` HTTP/1.1 requests over one kept-alive connection; returns the client's local port. */
async function requests(port: number, paths: string[]): Promise<number> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  let local = 0;
  try {
    for (const path of paths) {
      await new Promise<void>((resolve, reject) => {
        const req = http.request({
          host: "127.0.0.1",
          port,
          path,
          agent,
          method: path === "/post" ? "POST" : "GET",
          headers: { host: "web.ns:8080", "user-agent": "weft-test/1", "x-request-id": "trace-7" },
        }, (res) => {
          local = req.socket?.localPort ?? local;
          res.resume();
          res.on("end", resolve);
        });
        req.on("error", reject);
        req.end(path === "/post" ? "body!" : undefined);
      });
    }
  } finally {
    agent.destroy();
  }
  return local;
}

async function until(f: () => boolean): Promise<void> {
  for (let i = 0; i < 100 && !f(); i++) await new Promise((r) => setTimeout(r, 20));
}

Deno.test("access log over real sockets: one apache line per request, as Linkerd's", async () => {
  const s = await serveWithLog("apache", A);
  try {
    const local = await requests(s.port, ["/a?x=1", "/missing", "/post"]);
    await until(() => s.out.text.split("\n").length > 3);
    const lines = s.out.text.trimEnd().split("\n");
    assert.equal(lines.length, 3, s.out.text);
    const re = (method: string, path: string, status: number) =>
      new RegExp(
        `^127\\.0\\.0\\.1:${local} ${
          A.replaceAll(".", "\\.")
        } - \\[\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\.\\d{6}Z\\] ` +
          `"${method} ${path.replace("?", "\\?")} HTTP/1\\.1" ${status}$`,
      );
    assert.match(lines[0], re("GET", "/a?x=1", 200));
    assert.match(lines[1], re("GET", "/missing", 404));
    assert.match(lines[2], re("POST", "/post", 200));
    assert.equal(metric(await s.registry.metrics(), "access_log_dropped_lines_total", {}), 0);
  } finally {
    await s.close();
  }
});

Deno.test("access log over real sockets: one json line per request with Linkerd's fields", async () => {
  const s = await serveWithLog("json", undefined);
  try {
    const local = await requests(s.port, ["/a", "/post"]);
    await until(() => s.out.text.split("\n").length > 2);
    const lines = s.out.text.trimEnd().split("\n");
    assert.equal(lines.length, 2, s.out.text);
    const [get, post] = lines.map((l) => JSON.parse(l));
    assert.deepEqual(Object.keys(get), [
      "client.addr",
      "client.id",
      "host",
      "method",
      "processing_ns",
      "request_bytes",
      "response_bytes",
      "status",
      "timestamp",
      "total_ns",
      "trace_id",
      "uri",
      "user_agent",
      "version",
    ]);
    assert.equal(get["client.addr"], `127.0.0.1:${local}`);
    assert.equal(get["client.id"], "-", "no mesh identity");
    assert.equal(get.host, "web.ns:8080");
    assert.equal(get.method, "GET");
    assert.equal(get.status, 200);
    assert.equal(get.response_bytes, "2");
    assert.equal(get.trace_id, "trace-7");
    assert.equal(get.uri, "/a");
    assert.equal(get.user_agent, "weft-test/1");
    assert.equal(get.version, "HTTP/1.1");
    assert.ok(Number(get.total_ns) > 0 && Number(get.processing_ns) <= Number(get.total_ns));
    assert.equal(post.method, "POST");
    assert.equal(post.request_bytes, "5");
  } finally {
    await s.close();
  }
});
