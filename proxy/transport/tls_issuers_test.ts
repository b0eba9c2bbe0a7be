/**
 * Mesh TLS between proxies certified by different issuers (real node:tls handshakes on loopback):
 * any issuer under a trusted anchor is accepted both as server and as client; a leaf from an issuer
 * under a foreign anchor is refused both ways; a new trust bundle applies to the next connection.
 */
import assert from "node:assert/strict";
import * as net from "node:net";
import { CertStore, type TlsCredentials } from "../core/cert_store.ts";
import { buildTrustBundle, TrustStore } from "../core/trust_store.ts";
import { createTestAnchor } from "../testing/issuer_certs.ts";
import { MeshTls, MeshTlsError } from "./tls.ts";

const A = "a.ns.serviceaccount.identity.linkerd.cluster.local";
const B = "b.ns.serviceaccount.identity.linkerd.cluster.local";

const anchor = await createTestAnchor("tls-issuers-anchor");
const issuer1 = await anchor.issuer("tls-issuer-1");
const issuer2 = await anchor.issuer("tls-issuer-2");
const foreignAnchor = await createTestAnchor("tls-foreign-anchor");
const foreignIssuer = await foreignAnchor.issuer("tls-foreign-issuer");

function store(c: TlsCredentials): CertStore {
  const s = new CertStore();
  s.set(c);
  return s;
}

/** A mesh TLS server that echoes and records each accepted client identity or refusal. */
async function server(mesh: MeshTls) {
  const seen: { clientId?: string; error?: MeshTlsError }[] = [];
  const srv = net.createServer(async (sock) => {
    try {
      const t = await mesh.accept(sock, [], 2000);
      seen.push({ clientId: t.clientId });
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

/** Connects, sends "hello", returns the echo ("" when the server cut the connection). */
async function echo(mesh: MeshTls, port: number, expected: string): Promise<string> {
  const { socket } = await mesh.connect({
    host: "127.0.0.1",
    port,
    serverName: expected,
    expectedIdentity: expected,
    timeoutMs: 2000,
  });
  return await new Promise<string>((resolve) => {
    let s = "";
    socket.on("data", (d) => s += d);
    socket.on("end", () => resolve(s));
    socket.on("close", () => resolve(s));
    socket.on("error", () => resolve(s));
    socket.end("hello");
  });
}

async function waitFor<T>(arr: T[], n: number): Promise<void> {
  for (let i = 0; i < 200 && arr.length < n; i++) await new Promise((r) => setTimeout(r, 10));
}

Deno.test("mesh tls: proxies certified by two issuers under one anchor talk both ways", async () => {
  const one = new MeshTls(store(await issuer1.issue(A)));
  const two = new MeshTls(store(await issuer2.issue(B)));
  const s1 = await server(one), s2 = await server(two);
  try {
    assert.equal(await echo(two, s1.port, A), "hello");
    assert.equal(await echo(one, s2.port, B), "hello");
    await waitFor(s1.seen, 1);
    await waitFor(s2.seen, 1);
    assert.deepEqual(s1.seen, [{ clientId: B }]);
    assert.deepEqual(s2.seen, [{ clientId: A }]);
    // A second connection is served from the verdict cache with the same result.
    assert.equal(await echo(two, s1.port, A), "hello");
    await waitFor(s1.seen, 2);
    assert.deepEqual(s1.seen[1], { clientId: B });
  } finally {
    await s1.close();
    await s2.close();
  }
});

Deno.test("mesh tls: a leaf from an issuer under a foreign anchor is refused as client and as server", async () => {
  const ours = new MeshTls(store(await issuer1.issue(A)));
  // The foreign proxy trusts our anchor too, so only our side's verification can refuse.
  const foreignCreds = await foreignIssuer.issue(B);
  const foreign = new MeshTls(
    store({ ...foreignCreds, trustAnchorsPem: foreignAnchor.certPem + anchor.certPem }),
  );
  const s = await server(ours);
  const fs = await server(foreign);
  try {
    // As server: the foreign client's certificate is refused after the handshake.
    assert.equal(await echo(foreign, s.port, A).catch(() => ""), "");
    await waitFor(s.seen, 1);
    assert.equal(s.seen[0].error?.kind, "untrusted_peer");
    // As client: the foreign server's certificate fails our native chain check.
    await assert.rejects(
      echo(ours, fs.port, B),
      (e) => e instanceof MeshTlsError && (e.kind === "untrusted_peer" || e.kind === "handshake"),
    );
  } finally {
    await s.close();
    await fs.close();
  }
});

Deno.test("mesh tls: a new trust bundle applies to the next connection, both ways", async () => {
  const credsA = await issuer1.issue(A);
  const trust = new TrustStore(buildTrustBundle(anchor.certPem).bundle);
  const ours = new MeshTls(store(credsA), trust);
  const foreignCreds = await foreignIssuer.issue(B);
  const foreign = new MeshTls(
    store({ ...foreignCreds, trustAnchorsPem: foreignAnchor.certPem + anchor.certPem }),
  );
  const s = await server(ours);
  const fs = await server(foreign);
  try {
    assert.equal(await echo(foreign, s.port, A).catch(() => ""), "");
    await assert.rejects(echo(ours, fs.port, B));
    // Both anchors trusted (the first step of an anchor rotation): both directions work.
    trust.set(buildTrustBundle(anchor.certPem + foreignAnchor.certPem).bundle);
    assert.equal(await echo(foreign, s.port, A), "hello");
    assert.equal(await echo(ours, fs.port, B), "hello");
    // The foreign anchor removed again: refused again, despite the cached verdict for its leaf.
    trust.set(buildTrustBundle(anchor.certPem).bundle);
    assert.equal(await echo(foreign, s.port, A).catch(() => ""), "");
    await assert.rejects(echo(ours, fs.port, B));
    await waitFor(s.seen, 3);
    assert.deepEqual(s.seen.map((x) => x.clientId ?? x.error?.kind), ["untrusted_peer", B, "untrusted_peer"]);
  } finally {
    await s.close();
    await fs.close();
  }
});

Deno.test("mesh tls: a server that sends its leaf alone is trusted through a published issuer only", async () => {
  const credsB = await issuer2.issue(B);
  const leafOnly = credsB.certChainPem.slice(
    0,
    credsB.certChainPem.indexOf("-----END CERTIFICATE-----") + 26,
  );
  const lone = new MeshTls(store({ ...credsB, certChainPem: leafOnly }));
  const fs = await server(lone);
  const trust = new TrustStore(buildTrustBundle(anchor.certPem).bundle);
  const ours = new MeshTls(store(await issuer1.issue(A)), trust);
  try {
    await assert.rejects(echo(ours, fs.port, B));
    trust.set(buildTrustBundle(anchor.certPem, issuer2.certPem).bundle);
    assert.equal(await echo(ours, fs.port, B), "hello");
  } finally {
    await fs.close();
  }
});
