import assert from "node:assert/strict";
import * as net from "node:net";
import * as tls from "node:tls";
import { Registry } from "../metrics/registry.ts";
import { CertStore, type TlsCredentials } from "../core/cert_store.ts";
import type { ProxyIdentityConfig } from "./config.ts";
import { FakeClock } from "../../proto/support/fake_clock.ts";
import { FIRST_CERT_MAX_BACKOFF_MS, ProxyIdentity } from "./proxy_identity.ts";
import { x509 } from "../../proto/support/x509.ts";
import { startIdentityServer } from "../testing/identity_server.ts";

const A = "sa-a.ns-a.serviceaccount.identity.linkerd.cluster.local";
const ID = "linkerd-identity.linkerd.serviceaccount.identity.linkerd.cluster.local";

function config(
  overrides:
    & Partial<ProxyIdentityConfig>
    & Pick<ProxyIdentityConfig, "svcAddr" | "trustAnchorsPem" | "tokenFile">,
): ProxyIdentityConfig {
  return {
    localName: A,
    minRefreshMs: 10_000,
    maxRefreshMs: 86_400_000,
    backoff: { minMs: 100, maxMs: 60_000, jitter: 0.1 },
    certifyTimeoutMs: 5000,
    ...overrides,
  };
}

async function until(what: string, cond: () => boolean, timeoutMs = 10_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

function serialOf(c: TlsCredentials): string {
  return new x509.X509Certificate(
    c.certChainPem.split("-----END CERTIFICATE-----")[0] + "-----END CERTIFICATE-----",
  ).serialNumber;
}

Deno.test("the proxy certifies against the real identity server, renews at ~70% on the injected clock, re-reads its token, and keeps its cert through failures", async () => {
  const dir = await Deno.makeTempDir({ prefix: "weft-proxy-identity-" });
  const srv = await startIdentityServer(dir, ["tok-a=ns-a/sa-a", "tok-b=ns-b/sa-b"], "1h");
  const tokenFile = `${dir}/token`;
  await Deno.writeTextFile(tokenFile, "tok-a");
  const clock = new FakeClock(Date.now());
  const store = new CertStore();
  const changes: TlsCredentials[] = [];
  store.onChange((c) => changes.push(c));
  const registry = new Registry();
  const logs: string[] = [];
  const identity = new ProxyIdentity(
    config({ svcAddr: `127.0.0.1:${srv.port}`, trustAnchorsPem: srv.anchorsPem, tokenFile }),
    { store, registry, clock, random: () => 0.5, log: (l) => logs.push(l) },
  );
  const ctl = new AbortController();
  const running = identity.run(ctl.signal);
  try {
    await store.ready;
    const first = store.current()!;
    assert.equal(first.localName, A);
    assert.equal(first.trustAnchorsPem, srv.anchorsPem);
    assert.equal(first.certChainPem.match(/BEGIN CERTIFICATE/g)?.length, 2, "leaf + issuer");
    assert.match(first.keyPem, /^-----BEGIN PRIVATE KEY-----/);
    const lifetime = first.expiresAt.getTime() - clock.now();
    assert.ok(Math.abs(lifetime - (3_600_000 + 20_000)) < 5_000, `lifetime ${lifetime}`);
    const delay = identity.nextRefreshAt! - clock.now();
    assert.ok(Math.abs(delay - 0.7 * lifetime) < 5_000, `renewal in ${delay}ms for a ${lifetime}ms lifetime`);
    let text = await registry.metrics();
    assert.match(
      text,
      new RegExp(`identity_cert_expiration_timestamp_seconds ${first.expiresAt.getTime() / 1000}\\b`),
    );
    assert.match(text, /identity_cert_refresh_total\{result="success"\} 1/);

    // Just before the renewal point nothing happens; at it, a new certificate replaces the old.
    clock.advance(delay - 1000);
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(changes.length, 1);
    clock.advance(1000);
    await until("the renewal", () => changes.length === 2);
    const second = store.current()!;
    assert.notEqual(serialOf(second), serialOf(first));
    assert.equal(second.keyPem, first.keyPem, "the key is kept across renewals");

    // The token file is read on every Certify: a token of another ServiceAccount is refused...
    await Deno.writeTextFile(tokenFile, "tok-b");
    clock.advance(identity.nextRefreshAt! - clock.now());
    await until("the refusal", () => identity.lastError !== undefined);
    assert.match(identity.lastError!, /token is for ServiceAccount ns-b\/sa-b/);
    assert.equal(store.current(), second, "the current certificate stays in place");
    assert.equal(identity.nextRefreshAt! - clock.now(), 100, "first retry after the minimum backoff");
    text = await registry.metrics();
    assert.match(text, /identity_cert_refresh_total\{result="failure"\} 1/);

    // ...a missing file too, with a longer backoff...
    await Deno.remove(tokenFile);
    clock.advance(100);
    await until("the second failure", () => /cannot read token file/.test(identity.lastError ?? ""));
    assert.equal(identity.nextRefreshAt! - clock.now(), 200);

    // ...and the next attempt with the right token succeeds again.
    await Deno.writeTextFile(tokenFile, "tok-a\n");
    clock.advance(200);
    await until("recovery", () => changes.length === 3);
    assert.equal(identity.lastError, undefined);
    assert.ok(logs.some((l) => l.startsWith(`Certified identity ${A} until`)));
  } finally {
    ctl.abort();
    await running;
    await srv.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("over TLS (non-loopback name) the proxy checks the identity server's certificate and name", async () => {
  const dir = await Deno.makeTempDir({ prefix: "weft-proxy-identity-tls-" });
  const srv = await startIdentityServer(dir, ["tok-id=linkerd/linkerd-identity", "tok-a=ns-a/sa-a"], "24h");
  await Deno.writeTextFile(`${dir}/tok-id`, "tok-id");
  await Deno.writeTextFile(`${dir}/tok-a`, "tok-a");
  let tlsServer: tls.Server | undefined;
  const sockets = new Set<net.Socket>();
  try {
    // The identity pod's own proxy: certified over loopback, then terminating TLS for the others.
    const idStore = new CertStore();
    const idProxy = new ProxyIdentity(
      config({
        localName: ID,
        svcAddr: `127.0.0.1:${srv.port}`,
        trustAnchorsPem: srv.anchorsPem,
        tokenFile: `${dir}/tok-id`,
      }),
      { store: idStore, log: () => {} },
    );
    await idProxy.refreshOnce();
    idProxy.close();
    const idCreds = idStore.current()!;
    // Terminate TLS and forward the bytes to the plaintext server, as the identity pod's proxy does.
    tlsServer = tls.createServer(
      { key: idCreds.keyPem, cert: idCreds.certChainPem, ALPNProtocols: ["h2"] },
      (sock) => {
        const up = net.connect(srv.port, "127.0.0.1");
        sock.pipe(up).pipe(sock);
        const end = () => {
          sock.destroy();
          up.destroy();
        };
        sock.on("error", end);
        up.on("error", end);
        sock.on("close", end);
        up.on("close", end);
      },
    );
    await new Promise<void>((r) => tlsServer!.listen(0, "127.0.0.1", () => r()));
    const tlsPort = (tlsServer.address() as net.AddressInfo).port;
    const attempt = async (svcName: string, anchorsPem = srv.anchorsPem) => {
      const store = new CertStore();
      const p = new ProxyIdentity(
        config({
          svcAddr: `localhost:${tlsPort}`,
          svcName,
          trustAnchorsPem: anchorsPem,
          tokenFile: `${dir}/tok-a`,
        }),
        { store, log: () => {} },
      );
      await p.refreshOnce();
      p.close();
      return { cert: store.current(), error: p.lastError };
    };
    const ok = await attempt(ID);

    assert.equal(ok.error, undefined);
    assert.equal(ok.cert?.localName, A);
    const wrongName = await attempt(
      "linkerd-destination.linkerd.serviceaccount.identity.linkerd.cluster.local",
    );
    assert.equal(wrongName.cert, undefined);
    assert.match(
      wrongName.error!,
      /server presented \["linkerd-identity\.linkerd\..*\], want linkerd-destination\./,
    );
    // A server whose chain does not lead to our anchors is refused as well.
    const otherDir = await Deno.makeTempDir({ prefix: "weft-proxy-identity-other-" });
    const other = await startIdentityServer(otherDir, [], "1h");
    await other.close();
    const wrongAnchor = await attempt(ID, other.anchorsPem);
    await Deno.remove(otherDir, { recursive: true });
    assert.equal(wrongAnchor.cert, undefined);
    assert.match(wrongAnchor.error ?? "", /unable to verify the first certificate/);
  } finally {
    for (const s of sockets) s.destroy();
    await new Promise((r) => tlsServer ? tlsServer.close(r) : r(undefined));
    await srv.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("before the first certificate, retries stay brisk (capped backoff) until the identity service answers", async () => {
  const dir = await Deno.makeTempDir({ prefix: "weft-proxy-identity-first-" });
  const srv = await startIdentityServer(dir, ["tok-a=ns-a/sa-a"], "1h");
  const tokenFile = `${dir}/token`;
  const clock = new FakeClock(Date.now());
  const store = new CertStore();
  const identity = new ProxyIdentity(
    config({ svcAddr: `127.0.0.1:${srv.port}`, trustAnchorsPem: srv.anchorsPem, tokenFile }),
    { store, registry: new Registry(), clock, random: () => 0.5, log: () => {} },
  );
  const ctl = new AbortController();
  const running = identity.run(ctl.signal);
  try {
    // No token yet: every attempt fails. Uncapped, the 10th wait would be 51.2 s.
    let failures = 0;
    for (let i = 1; i <= 10; i++) {
      await until(
        `failure ${i}`,
        () => identity.nextRefreshAt !== undefined && identity.lastError !== undefined,
      );
      const wait = identity.nextRefreshAt! - clock.now();
      assert.ok(wait <= FIRST_CERT_MAX_BACKOFF_MS, `attempt ${i} waits ${wait}ms`);
      failures++;
      identity.lastError = undefined;
      clock.advance(wait);
    }
    assert.equal(failures, 10);
    await Deno.writeTextFile(tokenFile, "tok-a");
    // The 11th attempt may still be in flight (without the token) when the clock moves, and then sleep
    // past a single advance: keep the fake time moving until the certificate lands, bounded in real time.
    let ready = false;
    store.ready.then(() => ready = true);
    const end = Date.now() + 10_000;
    while (!ready) {
      if (Date.now() > end) throw new Error("no certificate within 10 s of the token appearing");
      clock.advance(FIRST_CERT_MAX_BACKOFF_MS);
      await new Promise((r) => setTimeout(r, 20));
    }
    assert.equal(store.current()?.localName, A);
  } finally {
    ctl.abort();
    await running;
    await srv.close();
    await Deno.remove(dir, { recursive: true });
  }
});
