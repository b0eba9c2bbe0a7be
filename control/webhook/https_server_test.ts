import assert from "node:assert/strict";
import tls from "node:tls";
import { Registry } from "prom-client";
import { serveWebhook, type WebhookServer } from "./https_server.ts";
import { testCa, writeLikeKubelet } from "./testing/pki.ts";

function peerCn(port: number, ca: string): Promise<string> {
  return new Promise((resolve, reject) => {
    // A fresh connection each time, verified against the test CA, so it sees the current certificate.
    const s = tls.connect({ host: "127.0.0.1", port, ca }, () => {
      const cn = s.getPeerCertificate().subject.CN;
      s.end();
      resolve(String(Array.isArray(cn) ? cn[0] : cn));
    });
    s.on("error", reject);
  });
}

async function waitFor(what: string, cond: () => boolean, logs: string[]): Promise<void> {
  const deadline = Date.now() + 5000;
  while (!cond() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  assert.ok(cond(), `${what} did not happen: ${logs.join("; ")}`);
}

async function withServer(
  fn: (ctx: {
    server: WebhookServer;
    dir: string;
    ca: Awaited<ReturnType<typeof testCa>>;
    logs: string[];
    registry: Registry;
    post: (path: string, body: string) => Promise<{ status: number; text: string }>;
  }) => Promise<void>,
) {
  const ca = await testCa();
  const dir = await Deno.makeTempDir();
  await writeLikeKubelet(dir, { ...(await pairFiles(ca, "first")) });
  const ac = new AbortController();
  const logs: string[] = [];
  const registry = new Registry();
  const server = await serveWebhook({
    hostname: "127.0.0.1",
    port: 0,
    certFile: `${dir}/tls.crt`,
    keyFile: `${dir}/tls.key`,
    reloadIntervalMs: 30,
    maxBodyBytes: 1024,
    signal: ac.signal,
    log: (m) => logs.push(m),
    registry,
    paths: ["/validate"],
    handler: (path, body) => Promise.resolve({ status: 200, body: { path, echo: body } }),
  });
  const client = Deno.createHttpClient({ caCerts: [ca.caPem] });
  const post = async (path: string, body: string) => {
    const res = await fetch(`https://127.0.0.1:${server.port}${path}`, {
      method: "POST",
      body,
      headers: { "content-type": "application/json" },
      client,
    });
    return { status: res.status, text: await res.text() };
  };
  try {
    await fn({ server, dir, ca, logs, registry, post });
  } finally {
    client.close();
    ac.abort();
    await server.closed;
    await Deno.remove(dir, { recursive: true });
    await ca.close();
  }
}

async function pairFiles(ca: Awaited<ReturnType<typeof testCa>>, cn: string) {
  const { cert, key } = await ca.issue(cn);
  return { "tls.crt": cert, "tls.key": key };
}

Deno.test("webhook server answers JSON and rejects bad bodies with the reason, then keeps serving", async () => {
  await withServer(async ({ post, registry }) => {
    const ok = await post("/validate", '{"a":1}');
    assert.equal(ok.status, 200);
    assert.deepEqual(JSON.parse(ok.text), { path: "/validate", echo: { a: 1 } });

    const bad = await post("/validate", "{nope");
    assert.equal(bad.status, 400);
    assert.match(JSON.parse(bad.text).error, /^request body is not JSON: /);

    const empty = await post("/validate", "");
    assert.equal(empty.status, 400);
    assert.match(JSON.parse(empty.text).error, /request body is empty/);

    const big = await post("/validate", JSON.stringify({ x: "y".repeat(2000) }));
    assert.equal(big.status, 413);
    assert.equal(JSON.parse(big.text).error, "request body exceeds 1024 bytes");

    assert.equal((await post("/validate", "[]")).status, 200);
    const metrics = await registry.metrics();
    assert.match(metrics, /webhook_http_responses_total\{path="\/validate",code="200"\} 2/);
    assert.match(metrics, /webhook_http_responses_total\{path="\/validate",code="400"\} 2/);
    assert.match(metrics, /webhook_http_responses_total\{path="\/validate",code="413"\} 1/);
    assert.match(metrics, /webhook_serving_certificate_expiration_timestamp_seconds \d+/);
  });
});

Deno.test("a Secret volume update (kubelet ..data symlink swap, same mtime) is served without restart", async () => {
  await withServer(async ({ server, dir, ca, logs, post }) => {
    assert.equal(await peerCn(server.port, ca.caPem), "first");
    const before = await Deno.stat(`${dir}/tls.crt`);
    // The new files carry the old timestamp: detection must not depend on mtimes.
    await writeLikeKubelet(dir, await pairFiles(ca, "second"), before.mtime!);
    await waitFor("reload after the symlink swap", () => server.reloads() === 1, logs);
    assert.equal(await peerCn(server.port, ca.caPem), "second");
    assert.equal((await post("/validate", "{}")).status, 200);
  });
});

Deno.test("a certificate whose key does not match is refused and the current pair stays in use", async () => {
  await withServer(async ({ server, dir, ca, logs }) => {
    const a = await ca.issue("a"), b = await ca.issue("b");
    await writeLikeKubelet(dir, { "tls.crt": a.cert, "tls.key": b.key });
    await waitFor("a reload failure message", () => logs.some((l) => l.includes("reload failed")), logs);
    assert.equal(server.reloads(), 0);
    assert.match(
      logs.find((l) => l.includes("reload failed"))!,
      /tls\.key is not the private key of the certificate in .*tls\.crt/,
    );
    assert.equal(await peerCn(server.port, ca.caPem), "first");

    await writeLikeKubelet(dir, { "tls.crt": "garbage", "tls.key": a.key });
    await waitFor(
      "a message about the garbage file",
      () => logs.some((l) => l.includes("does not hold a PEM certificate")),
      logs,
    );
    assert.equal(await peerCn(server.port, ca.caPem), "first");

    await writeLikeKubelet(dir, { "tls.crt": a.cert, "tls.key": a.key });
    await waitFor("reload of the fixed pair", () => server.reloads() === 1, logs);
    assert.equal(await peerCn(server.port, ca.caPem), "a");
  });
});

Deno.test("a pair replaced in place by rename is reloaded too", async () => {
  const ca = await testCa();
  const dir = await Deno.makeTempDir();
  const first = await ca.issue("first");
  await Deno.writeTextFile(`${dir}/tls.crt`, first.cert);
  await Deno.writeTextFile(`${dir}/tls.key`, first.key);
  const ac = new AbortController();
  const server = await serveWebhook({
    hostname: "127.0.0.1",
    port: 0,
    certFile: `${dir}/tls.crt`,
    keyFile: `${dir}/tls.key`,
    reloadIntervalMs: 3_600_000,
    signal: ac.signal,
    handler: () => Promise.resolve({ status: 200, body: {} }),
  });
  try {
    assert.equal(await server.checkCertificate(), false, "unchanged files are not a reload");
    const second = await ca.issue("second");
    await Deno.writeTextFile(`${dir}/key.tmp`, second.key);
    await Deno.writeTextFile(`${dir}/crt.tmp`, second.cert);
    await Deno.rename(`${dir}/key.tmp`, `${dir}/tls.key`);
    await Deno.rename(`${dir}/crt.tmp`, `${dir}/tls.crt`);
    assert.equal(await server.checkCertificate(), true);
    assert.equal(await peerCn(server.port, ca.caPem), "second");
  } finally {
    ac.abort();
    await server.closed;
    await Deno.remove(dir, { recursive: true });
    await ca.close();
  }
});

Deno.test("the server refuses to start on a missing or mismatched pair, naming the file", async () => {
  const ca = await testCa();
  const dir = await Deno.makeTempDir();
  try {
    const opts = {
      hostname: "127.0.0.1",
      port: 0,
      certFile: `${dir}/tls.crt`,
      keyFile: `${dir}/tls.key`,
      signal: AbortSignal.abort(),
      handler: () => Promise.resolve({ status: 200, body: {} }),
    };
    await assert.rejects(() => serveWebhook(opts), /cannot read .*tls\.(crt|key)/);
    const a = await ca.issue("a"), b = await ca.issue("b");
    await Deno.writeTextFile(`${dir}/tls.crt`, a.cert);
    await Deno.writeTextFile(`${dir}/tls.key`, b.key);
    await assert.rejects(() => serveWebhook(opts), /tls\.key is not the private key of the certificate/);
  } finally {
    await Deno.remove(dir, { recursive: true });
    await ca.close();
  }
});

Deno.test("an idle keep-alive connection outlives Node's 5 s default, so the API server's reuse never meets a close", async () => {
  await withServer(async ({ server, ca }) => {
    const sock = tls.connect({ host: "127.0.0.1", port: server.port, ca: ca.caPem });
    await new Promise<void>((resolve, reject) => {
      sock.once("secureConnect", () => resolve());
      sock.once("error", reject);
    });
    let received = "";
    let closed = false;
    sock.on("data", (d: Buffer) => received += d.toString("latin1"));
    sock.on("close", () => closed = true);
    const request = (body: string) =>
      `POST /validate HTTP/1.1\r\nhost: webhook\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n${body}`;
    const answers = () => received.match(/HTTP\/1\.1 200 OK/g)?.length ?? 0;
    const waitAnswers = async (n: number) => {
      const deadline = Date.now() + 5000;
      while (answers() < n && !closed && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    };
    sock.write(request('{"n":1}'));
    await waitAnswers(1);
    assert.equal(answers(), 1);
    // Past Node's default keepAliveTimeout (5 s), with nothing sent.
    await new Promise((r) => setTimeout(r, 7000));
    assert.equal(closed, false, "the server closed an idle keep-alive connection after 5 s");
    sock.write(request('{"n":2}'));
    await waitAnswers(2);
    assert.equal(answers(), 2, `second request on the reused connection: ${received}`);
    sock.destroy();
  });
});
