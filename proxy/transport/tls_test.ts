import assert from "node:assert/strict";
import * as net from "node:net";
import { CertStore } from "../core/cert_store.ts";
import { createTestCa } from "../testing/certs.ts";
import { MeshTls, MeshTlsError } from "./tls.ts";
import { parseClientHello } from "./client_hello.ts";
import { peek } from "./peek.ts";
import { TRANSPORT_HEADER_ALPN } from "../../proto/transport_header_frame.ts";

const ca = await createTestCa("tls-test");
const other = await createTestCa("other-ca");
const A = "a.ns.serviceaccount.identity.linkerd.cluster.local";
const B = "b.ns.serviceaccount.identity.linkerd.cluster.local";

async function storeFor(
  creds: Promise<import("../core/cert_store.ts").TlsCredentials>,
): Promise<CertStore> {
  const s = new CertStore();
  s.set(await creds);
  return s;
}

/** A server that terminates mesh TLS, reports what it saw, and echoes. */
async function server(store: CertStore) {
  const mesh = new MeshTls(store);
  const seen: { clientId?: string; alpn?: string; sni?: string; error?: MeshTlsError }[] = [];
  const srv = net.createServer(async (sock) => {
    const p = await peek(sock, (b) => parseClientHello(b).kind !== "incomplete", 8192, 2000);
    const hello = parseClientHello(p.bytes);
    try {
      const t = await mesh.accept(sock, [TRANSPORT_HEADER_ALPN], 2000);
      seen.push({ clientId: t.clientId, alpn: t.alpn, sni: hello.kind === "tls" ? hello.sni : undefined });
      t.socket.on("data", (d) => t.socket.write(d));
      t.socket.on("end", () => t.socket.end());
      t.socket.on("error", () => {});
    } catch (e) {
      seen.push({ error: e as MeshTlsError });
    }
  });
  await new Promise<void>((r) => srv.listen(0, "127.0.0.1", r));
  return {
    port: (srv.address() as net.AddressInfo).port,
    seen,
    close: () => new Promise((r) => srv.close(r)),
  };
}

async function roundTrip(mesh: MeshTls, port: number, expected = B) {
  const { socket, alpn } = await mesh.connect({
    host: "127.0.0.1",
    port,
    serverName: B,
    expectedIdentity: expected,
    alpn: [TRANSPORT_HEADER_ALPN],
    timeoutMs: 2000,
  });
  const got = await new Promise<string>((resolve, reject) => {
    let s = "";
    socket.on("data", (d) => s += d);
    socket.on("end", () => resolve(s));
    socket.on("error", reject);
    socket.end("hello");
  });
  return { got, alpn };
}

/** The server closes right after the handshake, so the client sees an error or no echo. */
async function refused(p: Promise<{ got: string }>): Promise<void> {
  const r = await p.catch(() => ({ got: "" }));
  assert.equal(r.got, "", "the refused client's bytes were echoed");
}

async function waitFor<T>(arr: T[], n: number): Promise<void> {
  for (let i = 0; i < 200 && arr.length < n; i++) await new Promise((r) => setTimeout(r, 10));
}

Deno.test("mesh tls: mutual identities, SNI and ALPN", async () => {
  const s = await server(await storeFor(ca.issue(B)));
  try {
    const r = await roundTrip(new MeshTls(await storeFor(ca.issue(A))), s.port);
    assert.equal(r.got, "hello");
    assert.equal(r.alpn, TRANSPORT_HEADER_ALPN);
    await waitFor(s.seen, 1);
    assert.deepEqual(s.seen[0], { clientId: A, alpn: TRANSPORT_HEADER_ALPN, sni: B });
  } finally {
    await s.close();
  }
});

Deno.test("mesh tls: the client refuses a server without the expected identity", async () => {
  const s = await server(await storeFor(ca.issue(B)));
  try {
    await assert.rejects(
      roundTrip(
        new MeshTls(await storeFor(ca.issue(A))),
        s.port,
        "c.ns.serviceaccount.identity.linkerd.cluster.local",
      ),
      (e: Error) => e instanceof MeshTlsError && e.kind === "peer_identity",
    );
  } finally {
    await s.close();
  }
});

Deno.test("mesh tls: the server refuses other-CA and expired client certificates", async () => {
  const s = await server(await storeFor(ca.issue(B)));
  try {
    // Another CA's client trusts our CA (so only the server-side check can refuse it).
    const foreign = await other.issue(A);
    const foreignStore = new CertStore();
    foreignStore.set({ ...foreign, trustAnchorsPem: ca.certPem });
    await refused(roundTrip(new MeshTls(foreignStore), s.port));
    const expired = await storeFor(
      ca.issue(A, { notBefore: new Date(Date.now() - 7200_000), notAfter: new Date(Date.now() - 3600_000) }),
    );
    await refused(roundTrip(new MeshTls(expired), s.port));
    await waitFor(s.seen, 2);
    assert.equal(s.seen[0].error?.kind, "untrusted_peer");
    assert.match(s.seen[0].error!.message, /does not chain to the trust anchors/);
    assert.equal(s.seen[1].error?.kind, "untrusted_peer");
    assert.match(s.seen[1].error!.message, /not valid now/);
  } finally {
    await s.close();
  }
});

Deno.test("mesh tls: a client presenting the same certificate again is identified again", async () => {
  // The server's verdict cache is keyed by the fingerprint node:tls gives: repeats must still be
  // answered with the identity, each time.
  const s = await server(await storeFor(ca.issue(B)));
  try {
    const client = new MeshTls(await storeFor(ca.issue(A)));
    for (let i = 0; i < 3; i++) assert.equal((await roundTrip(client, s.port)).got, "hello");
    await waitFor(s.seen, 3);
    assert.deepEqual(s.seen.map((x) => x.clientId), [A, A, A]);
  } finally {
    await s.close();
  }
});

Deno.test("mesh tls: after the handshake the client socket gives the server's chain as node:tls does", async () => {
  // The identity check sees the leaf only (tls.ts, leafOnlyDuringHandshake); afterwards the
  // socket answers with the chain again.
  const s = await server(await storeFor(ca.issue(B)));
  try {
    const { socket } = await new MeshTls(await storeFor(ca.issue(A))).connect({
      host: "127.0.0.1",
      port: s.port,
      serverName: B,
      expectedIdentity: B,
      alpn: [TRANSPORT_HEADER_ALPN],
      timeoutMs: 2000,
    });
    try {
      const detailed = socket.getPeerCertificate(true);
      assert.equal(detailed.subjectaltname, `DNS:${B}`);
      assert.ok(detailed.issuerCertificate, "no issuer certificate in the detailed peer certificate");
    } finally {
      socket.destroy();
    }
  } finally {
    await s.close();
  }
});

Deno.test("mesh tls: the client refuses a server whose certificate is from another CA", async () => {
  const foreign = await other.issue(B);
  const s = await server(await storeFor(Promise.resolve({ ...foreign, trustAnchorsPem: other.certPem })));
  try {
    await assert.rejects(
      roundTrip(new MeshTls(await storeFor(ca.issue(A))), s.port),
      (e: Error) => e instanceof MeshTlsError && e.kind !== "peer_identity",
    );
  } finally {
    await s.close();
  }
});

Deno.test("mesh tls: no certificate yet is a clear error", async () => {
  const mesh = new MeshTls(new CertStore());
  await assert.rejects(
    mesh.connect({ host: "127.0.0.1", port: 1, serverName: B, expectedIdentity: B, timeoutMs: 100 }),
    (e: Error) => e instanceof MeshTlsError && e.kind === "no_identity",
  );
});

Deno.test("client hello: plaintext and partial input", () => {
  assert.deepEqual(parseClientHello(new TextEncoder().encode("GET / HTTP/1.1\r\n")), { kind: "not_tls" });
  assert.deepEqual(parseClientHello(new Uint8Array([0x16, 0x03])), { kind: "incomplete" });
  assert.deepEqual(parseClientHello(new Uint8Array([0x16, 0x03, 0x01, 0x00, 0x40, 0x01, 0x00])), {
    kind: "incomplete",
  });
});

/**
 * Builds the Go client that presents a certificate with a key that is not its own. Go is part of
 * the project's toolchain (.ci/run puts it on PATH or installs Debian's golang-go), so a missing
 * `go` fails this test instead of skipping it: the proof-of-possession check must not vanish from a
 * run unnoticed. The client uses only the standard library; GOPROXY=off and GOTOOLCHAIN=local make
 * any attempt to download a module or a toolchain fail loudly instead of reaching the network.
 */
async function wrongKeyClient(): Promise<string> {
  const dir = new URL("../testing/tls_wrong_key_client/", import.meta.url).pathname;
  const out = `${await Deno.makeTempDir()}/tls_wrong_key_client`;
  const env: Record<string, string> = {
    GOPROXY: "off",
    GOTOOLCHAIN: "local",
    GOFLAGS: "-mod=mod -buildvcs=false",
  };
  if (!Deno.env.get("HOME") && !Deno.env.get("GOCACHE")) {
    env.GOCACHE = `${Deno.env.get("TMPDIR") ?? "/tmp"}/weft-go-cache`;
  }
  let b: Deno.CommandOutput;
  try {
    b = await new Deno.Command("go", { args: ["build", "-o", out, "."], cwd: dir, env, stderr: "piped" })
      .output();
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) {
      throw new Error(
        "the Go toolchain is not on PATH: this test needs it (add /usr/local/go/bin to PATH or install golang-go)",
      );
    }
    throw e;
  }
  if (!b.success) throw new Error(`go build failed: ${new TextDecoder().decode(b.stderr)}`);
  return out;
}

Deno.test({
  name: "mesh tls: a client holding someone else's certificate but not its key is refused",
  async fn() {
    const goClient = await wrongKeyClient();
    const s = await server(await storeFor(ca.issue(B)));
    const dir = await Deno.makeTempDir();
    try {
      const victim = await ca.issue(A);
      const attacker = await ca.issue("c.ns.serviceaccount.identity.linkerd.cluster.local");
      await Deno.writeTextFile(`${dir}/ca.pem`, ca.certPem);
      await Deno.writeTextFile(`${dir}/cert.pem`, victim.certChainPem);
      await Deno.writeTextFile(`${dir}/wrong.key`, attacker.keyPem);
      await Deno.writeTextFile(`${dir}/right.key`, victim.keyPem);
      const run = async (key: string) => {
        const out = await new Deno.Command(goClient, {
          args: [`127.0.0.1:${s.port}`, B, `${dir}/ca.pem`, `${dir}/cert.pem`, `${dir}/${key}`],
          stdout: "piped",
        }).output();
        return new TextDecoder().decode(out.stdout).trim();
      };
      // Control: with its own key the same client is accepted and identified as A.
      assert.equal(await run("right.key"), "accepted hello");
      await waitFor(s.seen, 1);
      assert.equal(s.seen[0].clientId, A);
      // The CertificateVerify made with another key cannot verify against A's public key.
      assert.match(await run("wrong.key"), /^refused /);
      await new Promise((r) => setTimeout(r, 100));
      assert.equal(s.seen.filter((x) => x.clientId === A).length, 1, "the impostor was identified as A");
    } finally {
      await s.close();
      await Deno.remove(dir, { recursive: true });
      await Deno.remove(goClient.slice(0, goClient.lastIndexOf("/")), { recursive: true });
    }
  },
});
