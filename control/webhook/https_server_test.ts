import assert from "node:assert/strict";
import tls from "node:tls";
import { serveWebhook } from "./https_server.ts";

async function selfSigned(dir: string, cn: string): Promise<void> {
  const out = await new Deno.Command("openssl", {
    args: [
      "req",
      "-x509",
      "-newkey",
      "ec",
      "-pkeyopt",
      "ec_paramgen_curve:P-256",
      "-nodes",
      "-days",
      "1",
      "-subj",
      `/CN=${cn}`,
      "-addext",
      "subjectAltName=DNS:localhost",
      "-keyout",
      `${dir}/key.tmp`,
      "-out",
      `${dir}/cert.tmp`,
    ],
    stderr: "piped",
  }).output();
  assert.ok(out.success, new TextDecoder().decode(out.stderr));
  // Rename so the server never sees a half-written pair.
  await Deno.rename(`${dir}/key.tmp`, `${dir}/tls.key`);
  await Deno.rename(`${dir}/cert.tmp`, `${dir}/tls.crt`);
}

function peerCn(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = tls.connect(
      { host: "127.0.0.1", port, servername: "localhost", rejectUnauthorized: false },
      () => {
        const cn = s.getPeerCertificate().subject.CN;
        s.end();
        resolve(String(Array.isArray(cn) ? cn[0] : cn));
      },
    );
    s.on("error", reject);
  });
}

async function post(port: number, path: string, body: string): Promise<{ status: number; text: string }> {
  const out = await new Deno.Command("curl", {
    args: [
      "-sk",
      "-o",
      "-",
      "-w",
      "\n%{http_code}",
      "-H",
      "content-type: application/json",
      "--data-binary",
      body,
      `https://127.0.0.1:${port}${path}`,
    ],
    stdout: "piped",
  }).output();
  const lines = new TextDecoder().decode(out.stdout).split("\n");
  return { status: Number(lines.pop()), text: lines.join("\n") };
}

Deno.test("webhook server answers JSON, rejects bad bodies, and reloads a rotated certificate in place", async () => {
  const dir = await Deno.makeTempDir();
  await selfSigned(dir, "first");
  const ac = new AbortController();
  const logs: string[] = [];
  const server = await serveWebhook({
    hostname: "127.0.0.1",
    port: 0,
    certFile: `${dir}/tls.crt`,
    keyFile: `${dir}/tls.key`,
    reloadIntervalMs: 50,
    maxBodyBytes: 1024,
    signal: ac.signal,
    log: (m) => logs.push(m),
    handler: (path, body) => Promise.resolve({ status: 200, body: { path, echo: body } }),
  });
  try {
    const ok = await post(server.port, "/validate", '{"a":1}');
    assert.equal(ok.status, 200);
    assert.deepEqual(JSON.parse(ok.text), { path: "/validate", echo: { a: 1 } });
    const bad = await post(server.port, "/validate", "{nope");
    assert.equal(bad.status, 400);
    assert.match(bad.text, /request body is not JSON/);
    const big = await post(server.port, "/validate", JSON.stringify({ x: "y".repeat(2000) }));
    assert.equal(big.status, 413);
    assert.equal(await peerCn(server.port), "first");
    await selfSigned(dir, "second");
    const deadline = Date.now() + 5000;
    while (server.reloads() === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    assert.equal(server.reloads(), 1, `reload did not happen: ${logs.join("; ")}`);
    assert.equal(await peerCn(server.port), "second");
    assert.equal((await post(server.port, "/validate", "[]")).status, 200);
  } finally {
    ac.abort();
    await server.closed;
    await Deno.remove(dir, { recursive: true });
  }
});
