/**
 * The trust-roots watch on a real directory laid out and updated as the kubelet does for a
 * ConfigMap volume (timestamped data directory, `..data` symlink swapped by rename, one symlink
 * per key), with real TLS handshakes before and after, and the metrics on the proxy's registry.
 */
import assert from "node:assert/strict";
import * as net from "node:net";
import { CertStore, type TlsCredentials } from "../core/cert_store.ts";
import { buildTrustBundle, TrustStore } from "../core/trust_store.ts";
import { Registry } from "../metrics/registry.ts";
import { MeshTls } from "../transport/tls.ts";
import { createTestAnchor } from "../testing/issuer_certs.ts";
import { TrustMetrics } from "./metrics.ts";
import { TrustRootsWatch } from "./trust_roots_watch.ts";

const A = "a.ns.serviceaccount.identity.linkerd.cluster.local";
const B = "b.ns.serviceaccount.identity.linkerd.cluster.local";

/** A ConfigMap volume as the kubelet writes it; `update` swaps in a whole new version atomically. */
async function configMapVolume(data: Record<string, string>) {
  const dir = await Deno.makeTempDir({ prefix: "weft-trust-roots-" });
  let version = 0;
  const update = async (d: Record<string, string>) => {
    const ts = `..2026_12_04_05_00_00.${++version}`;
    await Deno.mkdir(`${dir}/${ts}`);
    for (const [k, v] of Object.entries(d)) await Deno.writeTextFile(`${dir}/${ts}/${k}`, v);
    await Deno.symlink(ts, `${dir}/..data_tmp`);
    await Deno.rename(`${dir}/..data_tmp`, `${dir}/..data`);
    for (const k of Object.keys(d)) {
      await Deno.symlink(`..data/${k}`, `${dir}/${k}`).catch((e) => {
        if (!(e instanceof Deno.errors.AlreadyExists)) throw e;
      });
    }
  };
  await update(data);
  return { dir, update, remove: () => Deno.remove(dir, { recursive: true }) };
}

async function sha256Hex(pem: string): Promise<string> {
  const b64 = pem.replace(/-----[^-]+-----/g, "").replace(/\s+/g, "");
  const der = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
  const d = new Uint8Array(await crypto.subtle.digest("SHA-256", der));
  return Array.from(d, (b) => b.toString(16).padStart(2, "0")).join("");
}

function store(c: TlsCredentials): CertStore {
  const s = new CertStore();
  s.set(c);
  return s;
}

async function tlsServer(mesh: MeshTls) {
  const srv = net.createServer(async (sock) => {
    try {
      const t = await mesh.accept(sock, [], 2000);
      t.socket.on("data", (d) => t.socket.write(d));
      t.socket.on("end", () => t.socket.end());
      t.socket.on("error", () => {});
    } catch { /* refused: the socket is closed */ }
  });
  await new Promise<void>((r) => srv.listen(0, "127.0.0.1", r));
  return { port: (srv.address() as net.AddressInfo).port, close: () => new Promise((r) => srv.close(r)) };
}

async function echo(mesh: MeshTls, port: number, expected: string): Promise<string> {
  try {
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
      socket.on("close", () => resolve(s));
      socket.on("error", () => resolve(s));
      socket.end("hello");
    });
  } catch {
    return "";
  }
}

Deno.test("trust roots watch: a symlink-swapped bundle applies to new connections; a bad one is refused and the old stays", async () => {
  const oldAnchor = await createTestAnchor("watch-old-anchor");
  const oldIssuer = await oldAnchor.issuer("watch-old-issuer");
  const newAnchor = await createTestAnchor("watch-new-anchor");
  const newIssuer = await newAnchor.issuer("watch-new-issuer");
  const vol = await configMapVolume({ "ca-bundle.crt": oldAnchor.certPem });

  // This proxy: old issuer, trusting what the directory says. The peer: new issuer, trusting both.
  const credsA = await oldIssuer.issue(A);
  const trust = new TrustStore(buildTrustBundle(credsA.trustAnchorsPem).bundle);
  const certs = store(credsA);
  const ours = new MeshTls(certs, trust);
  const peerCreds = await newIssuer.issue(B);
  const peer = new MeshTls(store({ ...peerCreds, trustAnchorsPem: oldAnchor.certPem + newAnchor.certPem }));
  const registry = new Registry();
  const metrics = new TrustMetrics(registry, trust, certs);
  const logs: string[] = [];
  const renewals: Date[] = [];
  const watch = new TrustRootsWatch(vol.dir, {
    trust,
    reloads: metrics.reloads,
    log: (level, l) => logs.push(`${level} ${l}`),
    onRenewBefore: (at) => renewals.push(at),
    pollMs: 20,
  });
  const ctl = new AbortController();
  const ps = await tlsServer(peer), os = await tlsServer(ours);
  try {
    assert.equal(await watch.reload(), "ok");
    assert.equal(await watch.reload(), "unchanged", "an unchanged ..data link is not re-read");
    assert.equal(await echo(ours, ps.port, B), "", "the new issuer's server is not trusted yet");
    assert.equal(await echo(peer, os.port, A), "", "nor its client");

    const running = watch.run(ctl.signal);
    // Rotation step 1: both anchors, new issuer published, renew-before set.
    const before = trust.current();
    await vol.update({
      "ca-bundle.crt": oldAnchor.certPem + newAnchor.certPem,
      "weft-issuers.crt": newIssuer.certPem + oldIssuer.certPem,
      "weft-renew-before": "2026-12-04T05:00:00Z\n",
    });
    for (let i = 0; i < 200 && trust.current() === before; i++) await new Promise((r) => setTimeout(r, 10));
    assert.equal(trust.current().anchors.length, 2);
    assert.equal(trust.current().issuers.length, 2);
    assert.deepEqual(renewals, [new Date("2026-12-04T05:00:00Z")]);
    assert.equal(await echo(ours, ps.port, B), "hello", "as client, after the swap");
    assert.equal(await echo(peer, os.port, A), "hello", "as server, after the swap");

    let text = await registry.metrics();
    for (const a of [oldAnchor, newAnchor]) {
      const fp = await sha256Hex(a.certPem);
      assert.match(
        text,
        new RegExp(
          `weft_identity_trust_anchor_expiration_timestamp_seconds\\{fingerprint_sha256="${fp}",subject="watch-(old|new)-anchor"\\} \\d+`,
        ),
      );
    }
    assert.match(
      text,
      new RegExp(
        `weft_identity_leaf_issuer_info\\{fingerprint_sha256="${await sha256Hex(
          oldIssuer.certPem,
        )}",subject="watch-old-issuer"\\} 1`,
      ),
    );
    assert.match(text, /weft_identity_trust_bundle_reloads_total\{result="ok"\} 2/);

    // A bundle that does not parse: refused with a log line, counted, the old one stays.
    const good = trust.current();
    await vol.update({
      "ca-bundle.crt": "-----BEGIN CERTIFICATE-----\nnot base64 DER\n-----END CERTIFICATE-----\n",
    });
    for (let i = 0; i < 200 && !logs.some((l) => l.includes("refusing")); i++) {
      await new Promise((r) => setTimeout(r, 10));
    }
    assert.ok(
      logs.some((l) =>
        /^warn trust roots: refusing the bundle in .* keeping the current one: trust anchors: certificate #1 does not parse/
          .test(l)
      ),
      logs.join("\n"),
    );
    assert.equal(trust.current(), good);
    assert.equal(await echo(ours, ps.port, B), "hello", "still served with the old bundle");
    text = await registry.metrics();
    assert.match(text, /weft_identity_trust_bundle_reloads_total\{result="error"\} 1/);

    // An empty bundle too.
    await vol.update({ "ca-bundle.crt": "" });
    for (let i = 0; i < 200 && !(await registry.metrics()).includes(`result="error"} 2`); i++) {
      await new Promise((r) => setTimeout(r, 10));
    }
    assert.equal(trust.current(), good);

    // Rotation step 5: the old anchor removed; its issuer is no longer published-and-trusted.
    await vol.update({
      "ca-bundle.crt": newAnchor.certPem,
      "weft-issuers.crt": newIssuer.certPem + oldIssuer.certPem,
    });
    for (let i = 0; i < 200 && trust.current() === good; i++) await new Promise((r) => setTimeout(r, 10));
    assert.equal(trust.current().anchors.length, 1);
    assert.equal(trust.current().issuers.length, 1, "the old issuer no longer chains to an anchor");
    assert.ok(
      logs.some((l) =>
        l.includes('ignoring published issuer "watch-old-issuer" does not chain to a trust anchor')
      ),
    );
    text = await registry.metrics();
    assert.doesNotMatch(text, /subject="watch-old-anchor"/, "the removed anchor's series is gone");
    ctl.abort();
    await running;
  } finally {
    ctl.abort();
    await ps.close();
    await os.close();
    await vol.remove();
  }
});

Deno.test("trust roots watch: a renew-before that is not RFC 3339 is ignored with a log line", async () => {
  const anchor = await createTestAnchor("watch-rb-anchor");
  const vol = await configMapVolume({ "ca-bundle.crt": anchor.certPem, "weft-renew-before": "tomorrow" });
  const trust = new TrustStore(buildTrustBundle(anchor.certPem).bundle);
  const logs: string[] = [];
  const renewals: Date[] = [];
  const watch = new TrustRootsWatch(vol.dir, {
    trust,
    log: (_level, l) => logs.push(l),
    onRenewBefore: (at) => renewals.push(at),
  });
  try {
    await watch.reload();
    assert.deepEqual(renewals, []);
    assert.ok(logs.some((l) => l.includes('ignoring weft-renew-before "tomorrow": not an RFC 3339 time')));
  } finally {
    await vol.remove();
  }
});
