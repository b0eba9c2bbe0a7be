/**
 * The inbound HTTP stack's per-request work, against a real HTTP/1 application on 127.0.0.1:
 * route authorization answers, `l5d-client-id`, the `l5d-orig-proto` downgrade, and metrics.
 */
import assert from "node:assert/strict";
import * as http from "node:http";
import * as net from "node:net";
import type { AddressInfo } from "node:net";
import { Registry } from "../../metrics/registry.ts";
import type { Authz, Server } from "../../../proto/gen_messages/inbound.ts";
import { toIpAddress } from "../../../proto/ip.ts";
import { compileHttpServer } from "./authorize.ts";
import { HttpMetrics } from "../../metrics/http_metrics.ts";
import { listenTcp } from "../../transport/listen.ts";
import { seededRng } from "../../core/rng.ts";
import { InboundHttp, type InboundHttpConn } from "./stack.ts";
import {
  EMPTY_BODY,
  HeaderList,
  type HttpRequest,
  type HttpResponse,
  type HttpVersion,
} from "../../http/message.ts";

const A = "a.ns.serviceaccount.identity.linkerd.cluster.local";
const everywhere = [
  { net: { ip: toIpAddress("0.0.0.0"), prefixLen: 0 }, except: [] },
  { net: { ip: toIpAddress("::"), prefixLen: 0 }, except: [] },
];
const meta = (kind: string, name: string) => ({
  kind: {
    $case: "resource" as const,
    value: { group: "policy.linkerd.io", kind, name, namespace: "ns", section: "", port: 0 },
  },
});
const onlyA: Authz = {
  networks: everywhere,
  authentication: {
    permit: {
      $case: "meshTLS",
      value: { clients: { $case: "identities", value: { identities: [{ name: A }], suffixes: [] } } },
    },
  },
  labels: {},
  metadata: meta("AuthorizationPolicy", "only-a"),
};
const server: Server = {
  protocol: { kind: { $case: "detect", value: { timeout: { seconds: 10n, nanos: 0 }, httpRoutes: [] } } },
  serverIps: [],
  authorizations: [onlyA],
  labels: { group: "policy.linkerd.io", kind: "server", name: "web" },
};

function request(path: string, version: HttpVersion, headers: string[] = []): HttpRequest {
  return {
    method: "GET",
    scheme: undefined,
    authority: "web.ns:80",
    path,
    version,
    headers: new HeaderList(headers),
    body: EMPTY_BODY,
  };
}

async function text(res: HttpResponse): Promise<string> {
  let out = "";
  const dec = new TextDecoder();
  for (let c = await res.body.read(); c !== null; c = await res.body.read()) {
    out += dec.decode(c, { stream: true });
  }
  return out + dec.decode();
}

Deno.test("inbound http stack: authorizes per client, sets l5d-client-id, downgrades orig-proto", async () => {
  const app = http.createServer((req, res) => {
    res.setHeader("content-type", "application/json");
    res.end(JSON.stringify({ clientId: req.headers["l5d-client-id"] ?? null, version: req.httpVersion }));
  });
  await new Promise<void>((r) => app.listen(0, "127.0.0.1", () => r()));
  const port = (app.address() as AddressInfo).port;
  const registry = new Registry();
  const stack = new InboundHttp({
    metrics: new HttpMetrics(registry),
    connectTimeoutMs: 1000,
    log: () => {},
    rng: seededRng(1),
  });
  const policy = compileHttpServer(server);
  const conn = (clientId: string | undefined): InboundHttpConn => ({
    ip: "127.0.0.1",
    port,
    targetAddr: `10.0.0.2:${port}`,
    conn: { clientIp: "10.0.0.1", tls: clientId ? { clientId } : undefined },
    tls: clientId
      ? { tls: "true", client_id: clientId }
      : { tls: "no_identity", no_tls_reason: "no_tls_from_remote" },
    policy: () => policy,
  });
  try {
    const signal = new AbortController().signal;
    const fromA = stack.service(conn(A));
    const upgraded = await fromA(
      request("/x", "HTTP/2", ["l5d-client-id", "forged", "l5d-orig-proto", "HTTP/1.1"]),
      signal,
    );
    assert.equal(upgraded.status, 200);
    assert.equal(
      upgraded.headers.get("l5d-orig-proto"),
      "HTTP/1.1",
      "the response carries the downgrade mark",
    );
    assert.deepEqual(JSON.parse(await text(upgraded)), { clientId: A, version: "1.1" });

    const plain = stack.service(conn(undefined));
    const forged = await plain(request("/x", "HTTP/1.1", ["l5d-client-id", A]), signal);
    assert.equal(forged.status, 403, "plaintext is not the identity it claims");
    await text(forged);
    const grpc = await plain(request("/svc/M", "HTTP/2", ["content-type", "application/grpc"]), signal);
    assert.equal(grpc.status, 200);
    assert.equal(grpc.headers.get("grpc-status"), "7");

    const m = await registry.metrics();
    assert.match(m, /inbound_http_authz_allow_total\{[^}]*authz_name="only-a"[^}]*client_id="a\.ns[^}]*\} 1/);
    assert.match(m, /inbound_http_authz_deny_total\{[^}]*srv_name="web"[^}]*tls="no_identity"[^}]*\} 2/);
    assert.match(
      m,
      /response_total\{direction="inbound"[^}]*client_id="a\.ns[^}]*status_code="200"[^}]*\} 1/,
    );
  } finally {
    stack.close();
    await new Promise((r) => app.close(r));
  }
});

/** Sends `wire` on a fresh connection to `port`, half-closing at once if asked; all it got back. */
function exchange(port: number, wire: string, halfClose: boolean): Promise<string> {
  return new Promise((resolve) => {
    const s = net.connect({ host: "127.0.0.1", port, allowHalfOpen: true });
    let got = "";
    s.setEncoding("latin1");
    s.on("data", (d: string) => {
      got += d;
      // A keep-alive client stops once it has the body it was told about.
      if (!halfClose && /\r\n\r\n[\s\S]*slow-ok$/.test(got)) s.destroy();
    });
    s.on("error", () => {});
    s.on("close", () => resolve(got));
    s.on("connect", () => halfClose ? s.end(wire) : s.write(wire));
    setTimeout(() => s.destroy(), 5000);
  });
}

Deno.test("inbound http stack: a client that half-closes right after its request still gets the app's response", async () => {
  // The app answers late, so the client's FIN (and TLS close_notify in the mesh) reaches the
  // proxy while the request is in flight; HTTP/1.1 lets a client do that and wait for the answer.
  const app = http.createServer((req, res) => {
    req.resume();
    setTimeout(() => res.end("slow-ok"), 150);
  });
  await new Promise<void>((r) => app.listen(0, "127.0.0.1", () => r()));
  const appPort = (app.address() as AddressInfo).port;
  const stack = new InboundHttp({
    metrics: new HttpMetrics(new Registry()),
    connectTimeoutMs: 1000,
    log: () => {},
    rng: seededRng(1),
  });
  const policy = compileHttpServer(server);
  const conn: InboundHttpConn = {
    ip: "127.0.0.1",
    port: appPort,
    targetAddr: `10.0.0.2:${appPort}`,
    conn: { clientIp: "10.0.0.1", tls: { clientId: A } },
    tls: { tls: "true", client_id: A },
    policy: () => policy,
  };
  const proxy = await listenTcp({ ip: "127.0.0.1", port: 0 }, (sock) => {
    stack.serve(sock, "http1", conn).finally(() => sock.destroy());
  });
  try {
    const req = "GET /slow HTTP/1.1\r\nhost: web.ns\r\n\r\n";
    const results = await Promise.all([
      ...Array.from({ length: 5 }, () => exchange(proxy.addr.port, req, true)),
      exchange(proxy.addr.port, req, false),
    ]);
    for (const [i, got] of results.entries()) {
      assert.match(
        got,
        /^HTTP\/1\.1 200 [\s\S]*\r\n\r\n[\s\S]*slow-ok$/,
        `client ${i}: ${JSON.stringify(got)}`,
      );
    }
  } finally {
    await proxy.close();
    stack.close();
    await new Promise((r) => app.close(r));
  }
});

Deno.test("inbound http stack: a rate-limited request is a 429, counted as allowed then as rate limited", async () => {
  const app = http.createServer((_req, res) => res.end("ok"));
  await new Promise<void>((r) => app.listen(0, "127.0.0.1", () => r()));
  const port = (app.address() as AddressInfo).port;
  const registry = new Registry();
  const stack = new InboundHttp({
    metrics: new HttpMetrics(registry),
    connectTimeoutMs: 1000,
    log: () => {},
  });
  const limited: Server = {
    ...server,
    protocol: {
      kind: {
        $case: "http1",
        value: {
          routes: [],
          localRateLimit: {
            metadata: meta("HTTPLocalRateLimitPolicy", "web-rl"),
            total: { requestsPerSecond: 1 },
            overrides: [],
          },
        },
      },
    },
  };
  const policy = compileHttpServer(limited);
  const fromA = stack.service({
    ip: "127.0.0.1",
    port,
    targetAddr: `10.0.0.2:${port}`,
    conn: { clientIp: "10.0.0.1", tls: { clientId: A } },
    tls: { tls: "true", client_id: A },
    policy: () => policy,
  });
  try {
    const signal = new AbortController().signal;
    const first = await fromA(request("/", "HTTP/1.1"), signal);
    assert.equal(first.status, 200);
    await text(first);
    const second = await fromA(request("/", "HTTP/1.1"), signal);
    assert.equal(second.status, 429);
    assert.match(await text(second), /total rate limit of 1 requests\/s exceeded on server web/);
    const m = await registry.metrics();
    assert.match(
      m,
      new RegExp(
        'inbound_http_local_ratelimit_total\\{target_addr="10\\.0\\.0\\.2:[0-9]+"[^}]*srv_name="web",' +
          'ratelimit_group="policy\\.linkerd\\.io",ratelimit_kind="HTTPLocalRateLimitPolicy",ratelimit_name="web-rl",' +
          'ratelimit_scope="total",tls="true",client_id="a\\.ns[^}]*\\} 1',
      ),
    );
    assert.match(m, /inbound_http_authz_allow_total\{[^}]*authz_name="only-a"[^}]*\} 2/);
    assert.doesNotMatch(m, /inbound_http_authz_deny_total\{/);
  } finally {
    stack.close();
    await new Promise((r) => app.close(r));
  }
});
