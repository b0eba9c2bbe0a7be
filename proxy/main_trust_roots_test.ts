/**
 * The proxy's identity starter (proxy/main.ts) with a trust-roots directory: configured from the
 * environment as the injector writes it, certified by the real identity server (own process), it
 * reads the mounted bundle before certifying, picks up a kubelet-style update, asks for an early
 * renewal on a new weft-renew-before, and shows the rotation metrics.
 */
import assert from "node:assert/strict";
import { X509Certificate } from "node:crypto";
import { ProxyEnv } from "../proto/env.ts";
import { TRUST_ROOTS_DIR_ENV } from "../proto/trust_roots.ts";
import { resolveProxyConfig } from "./config/config.ts";
import { CertStore } from "./core/cert_store.ts";
import { buildTrustBundle, TrustStore } from "./core/trust_store.ts";
import { Registry } from "./metrics/registry.ts";
import { IDENTITY_CLIENT } from "./main.ts";
import { startIdentityServer } from "./testing/identity_server.ts";
import { createTestAnchor } from "./testing/issuer_certs.ts";

const A = "sa-a.ns-a.serviceaccount.identity.linkerd.cluster.local";

async function until(
  what: string,
  cond: () => boolean | Promise<boolean>,
  timeoutMs = 15_000,
): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function writeVersion(dir: string, n: number, data: Record<string, string>): Promise<void> {
  const ts = `..2026_12_04_05_00_0${n}`;
  await Deno.mkdir(`${dir}/${ts}`);
  for (const [k, v] of Object.entries(data)) await Deno.writeTextFile(`${dir}/${ts}/${k}`, v);
  await Deno.symlink(ts, `${dir}/..data_tmp`);
  await Deno.rename(`${dir}/..data_tmp`, `${dir}/..data`);
  for (const k of Object.keys(data)) await Deno.symlink(`..data/${k}`, `${dir}/${k}`).catch(() => {});
}

Deno.test({
  name:
    "proxy main: the identity starter watches WEFT_PROXY_IDENTITY_TRUST_ROOTS_DIR and exports the rotation metrics",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "weft-main-trust-roots-" });
    const srv = await startIdentityServer(dir, ["tok-a=ns-a/sa-a"], "1h");
    await Deno.writeTextFile(`${dir}/token`, "tok-a");
    const roots = `${dir}/trust-roots`;
    await Deno.mkdir(roots);
    const next = await createTestAnchor("main-next-anchor");
    // The mounted bundle already has a second anchor that the environment's does not.
    await writeVersion(roots, 1, { "ca-bundle.crt": srv.anchorsPem + next.certPem });
    const env: Record<string, string> = {
      [ProxyEnv.destinationSvcAddr]: "127.0.0.1:8086",
      [ProxyEnv.policySvcAddr]: "127.0.0.1:8090",
      [ProxyEnv.identitySvcAddr]: `127.0.0.1:${srv.port}`,
      [ProxyEnv.policyWorkload]: '{"ns":"ns-a","pod":"web-0"}',
      [ProxyEnv.identityTrustAnchors]: srv.anchorsPem,
      [ProxyEnv.identityLocalName]: A,
      [ProxyEnv.identityDir]: `${dir}/id`,
      [ProxyEnv.identityTokenFile]: `${dir}/token`,
      [TRUST_ROOTS_DIR_ENV]: roots,
    };
    const config = resolveProxyConfig((n) => env[n]);
    assert.equal(config.identity.trustRootsDir, roots);
    const store = new CertStore();
    const trust = new TrustStore(buildTrustBundle(config.identity.trustAnchorsPem).bundle);
    const registry = new Registry();
    const logs: string[] = [];
    const ctl = new AbortController();
    try {
      await IDENTITY_CLIENT({
        config,
        store,
        trust,
        registry,
        log: (_level, line) => logs.push(line),
        signal: ctl.signal,
      });
      assert.equal(trust.current().anchors.length, 2, "the directory was read before the first Certify");
      await store.ready;
      const text = await registry.metrics();
      const anchorFp = new X509Certificate(srv.anchorsPem).fingerprint256.replaceAll(":", "").toLowerCase();
      assert.match(
        text,
        new RegExp(
          `weft_identity_trust_anchor_expiration_timestamp_seconds\\{fingerprint_sha256="${anchorFp}",subject="[^"]+"\\} \\d+`,
        ),
      );
      assert.match(text, /subject="main-next-anchor"/);
      const issuerPem = store.current()!.certChainPem.split("-----END CERTIFICATE-----\n")[1] +
        "-----END CERTIFICATE-----\n";
      const issuerFp = new X509Certificate(issuerPem).fingerprint256.replaceAll(":", "").toLowerCase();
      assert.match(
        text,
        new RegExp(`weft_identity_leaf_issuer_info\\{fingerprint_sha256="${issuerFp}",subject="[^"]+"\\} 1`),
      );
      assert.match(text, /weft_identity_trust_bundle_reloads_total\{result="ok"\} 1/);
      assert.match(text, /identity_cert_expiration_timestamp_seconds \d+/);

      // A kubelet update: the second anchor removed, and a renew-before after this leaf was issued.
      const at = new Date(Date.now() + 2000).toISOString();
      await writeVersion(roots, 2, { "ca-bundle.crt": srv.anchorsPem, "weft-renew-before": at });
      await until("the new bundle", () => trust.current().anchors.length === 1);
      await until(
        "the early renewal",
        () => logs.some((l) => l.includes(`the leaf was issued before ${at}`)),
      );
      assert.doesNotMatch(await registry.metrics(), /main-next-anchor/);
    } finally {
      ctl.abort();
      await new Promise((r) => setTimeout(r, 100));
      await srv.close();
      await Deno.remove(dir, { recursive: true });
    }
  },
});
