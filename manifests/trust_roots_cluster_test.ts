/**
 * Issue 21 against the real API server in KUBECONFIG, without touching the shared mesh: the identity
 * controller (control/main.ts identity, as a process here) runs in a namespace of its own as a
 * ServiceAccount holding exactly the manifests' identity Role (rbac.yaml, namespace rewritten) and
 * the tokenreviews ClusterRole, against a trust-roots ConfigMap and an issuer Secret applied the way
 * `deno task deploy` applies them (server-side apply, field manager weft-deploy). It checks that:
 *
 *   - identity publishes weft-issuers.crt, and deploy's apply does not remove it;
 *   - replacing the issuer Secret with one written as cert-manager writes it (kubernetes.io/tls,
 *     tls.crt with the chain, a SEC1 tls.key, ca.crt) makes identity sign with the new issuer and
 *     publish it first, the old one second, and a renew-before time;
 *   - an issuer under an anchor not yet in the bundle is refused (IssuerCaNotTrusted), and taken as
 *     soon as the anchor is added to the ConfigMap (anchors are watched, not read once);
 *   - a bundle that does not parse is refused and the anchors in use stay.
 */
import assert from "node:assert/strict";
import { createPrivateKey } from "node:crypto";
import { parse } from "yaml";
import { createIssuer, createTrustAnchor } from "../control/certs/pki.ts";
import { certInfo, certInfos } from "../control/identity/cert_info.ts";
import {
  ISSUERS_KEY,
  parseRenewBefore,
  RENEW_BEFORE_KEY,
  TRUST_ANCHORS_KEY,
} from "../control/identity/trust_roots.ts";
import { x509 } from "../proto/support/x509.ts";
import { FIELD_MANAGER, Kube } from "./kube.ts";
import type { Manifest } from "./kinds.ts";

const kubeconfig = Deno.env.get("KUBECONFIG")?.split(":")[0];
const DAY = 86_400_000;
const CM = "linkerd-identity-trust-roots";
const SECRET = "linkerd-identity-issuer";

const b64 = (s: string) => btoa(s);

async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 30_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

function freePort(): number {
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (l.addr as Deno.NetAddr).port;
  l.close();
  return port;
}

Deno.test({
  name:
    "identity publishes issuers and renew-before, follows a cert-manager Secret and live anchors (real API server)",
  ignore: !kubeconfig,
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const kube = Kube.fromFile(kubeconfig!);
    const ns = `weft-r2-roots-${crypto.randomUUID().slice(0, 6)}`;
    const crb = `${ns}-tokenreviews`;
    const now = Date.now();
    const anchor = await createTrustAnchor({
      commonName: "root.r2.test",
      lifetimeMs: 365 * DAY,
      now: now - DAY,
    });
    const issuerA = await createIssuer(anchor, {
      commonName: "issuer-a.r2.test",
      lifetimeMs: 30 * DAY,
      now: now - 60_000,
    });
    const issuerB = await createIssuer(anchor, {
      commonName: "issuer-b.r2.test",
      lifetimeMs: 30 * DAY,
      now: now - 60_000,
    });
    const anchor2 = await createTrustAnchor({
      commonName: "root-2.r2.test",
      lifetimeMs: 365 * DAY,
      now: now - DAY,
    });
    const issuerC = await createIssuer(anchor2, {
      commonName: "issuer-c.r2.test",
      lifetimeMs: 30 * DAY,
      now: now - 60_000,
    });
    const fp = async (pem: string) => (await certInfo(new x509.X509Certificate(pem))).fingerprint;

    const cmPath = `/api/v1/namespaces/${ns}/configmaps/${CM}`;
    const secretPath = `/api/v1/namespaces/${ns}/secrets/${SECRET}`;
    // As deploy applies it (render.ts identityObjects): only ca-bundle.crt, server-side, weft-deploy.
    const applyBundle = (pem: string) =>
      kube.apply({
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: { name: CM, namespace: ns },
        data: { [TRUST_ANCHORS_KEY]: pem },
      });
    const readCm = async () =>
      (await kube.get<Manifest & { data?: Record<string, string> }>(cmPath))?.data ?? {};
    const published = async () => {
      const d = await readCm();
      return d[ISSUERS_KEY] ? (await certInfos(d[ISSUERS_KEY], ISSUERS_KEY)).map((c) => c.fingerprint) : [];
    };

    let child: Deno.ChildProcess | undefined;
    const logs: string[] = [];
    let tmp: string | undefined;
    try {
      await kube.json("POST", "/api/v1/namespaces", { body: JSON.stringify({ metadata: { name: ns } }) });
      await kube.json("POST", `/api/v1/namespaces/${ns}/serviceaccounts`, {
        body: JSON.stringify({ metadata: { name: "weft-identity" } }),
      });
      // The identity Roles exactly as the manifests grant them, in this namespace: its own, and the
      // leader-election one (the publisher writes only while it holds its Lease).
      const rbac = await Deno.readTextFile(new URL("./control-plane/rbac.yaml", import.meta.url));
      const docs = rbac.split(/^---$/m).map((d) => parse(d));
      for (const name of ["weft-identity", "weft-identity-leader-election"]) {
        const role = docs.find((d) => d?.kind === "Role" && d.metadata.name === name);
        assert.ok(role, `rbac.yaml has the ${name} Role`);
        await kube.json("POST", `/apis/rbac.authorization.k8s.io/v1/namespaces/${ns}/roles`, {
          body: JSON.stringify({ metadata: { name }, rules: role.rules }),
        });
        await kube.json("POST", `/apis/rbac.authorization.k8s.io/v1/namespaces/${ns}/rolebindings`, {
          body: JSON.stringify({
            metadata: { name },
            roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name },
            subjects: [{ kind: "ServiceAccount", name: "weft-identity", namespace: ns }],
          }),
        });
      }
      await kube.json("POST", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", {
        body: JSON.stringify({
          metadata: { name: crb },
          roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "weft-identity" },
          subjects: [{ kind: "ServiceAccount", name: "weft-identity", namespace: ns }],
        }),
      });
      await applyBundle(anchor.certPem);
      await kube.apply({
        apiVersion: "v1",
        kind: "Secret",
        metadata: { name: SECRET, namespace: ns },
        type: "Opaque",
        data: { "crt.pem": b64(issuerA.certPem), "key.pem": b64(issuerA.keyPem) },
      } as Manifest);

      // A kubeconfig that is the ServiceAccount: the RBAC under test is the real one.
      const token = (await kube.json<{ status: { token: string } }>(
        "POST",
        `/api/v1/namespaces/${ns}/serviceaccounts/weft-identity/token`,
        { body: JSON.stringify({ spec: { expirationSeconds: 3600 } }) },
      )).status.token;
      const cluster = kube.kc.getCurrentCluster()!;
      tmp = await Deno.makeTempDir({ prefix: "weft-r2-" });
      const kc = {
        apiVersion: "v1",
        kind: "Config",
        clusters: [{
          name: "c",
          cluster: {
            server: cluster.server,
            ...(cluster.caData ? { "certificate-authority-data": cluster.caData } : {}),
            ...(cluster.caFile ? { "certificate-authority": cluster.caFile } : {}),
          },
        }],
        users: [{ name: "sa", user: { token } }],
        contexts: [{ name: "sa", context: { cluster: "c", user: "sa" } }],
        "current-context": "sa",
      };
      await Deno.writeTextFile(`${tmp}/kubeconfig`, JSON.stringify(kc), { mode: 0o600 });

      const adminPort = freePort();
      child = new Deno.Command(Deno.execPath(), {
        args: [
          "run",
          "-A",
          new URL("../control/main.ts", import.meta.url).pathname,
          "identity",
          `--controller-namespace=${ns}`,
          "--addr=127.0.0.1:0",
          `--admin-addr=127.0.0.1:${adminPort}`,
          `--kubeconfig=${tmp}/kubeconfig`,
        ],
        stdout: "piped",
        stderr: "piped",
      }).spawn();
      for (const stream of [child.stdout, child.stderr]) {
        void stream.pipeThrough(new TextDecoderStream()).pipeTo(
          new WritableStream({ write: (t) => void logs.push(...t.split("\n").filter((l) => l)) }),
        ).catch(() => {});
      }
      const metrics = async () => {
        try {
          const r = await fetch(`http://127.0.0.1:${adminPort}/metrics`);
          return await r.text();
        } catch {
          return "";
        }
      };
      const log = () => logs.join("\n");

      // 1. Identity publishes the issuer; no renew-before on a fresh ConfigMap.
      const fpA = await fp(issuerA.certPem);
      await until("weft-issuers.crt with issuer A", async () => (await published())[0] === fpA || undefined);
      assert.equal((await readCm())[RENEW_BEFORE_KEY], undefined);
      assert.match(
        await metrics(),
        new RegExp(
          `^weft_identity_issuer_info\\{fingerprint_sha256="${fpA}",subject="issuer-a.r2.test"\\} 1$`,
          "m",
        ),
      );

      // 2. deploy applies the ConfigMap again (same field manager, only ca-bundle.crt): identity's key stays.
      const cmBefore = await readCm();
      const again = await applyBundle(anchor.certPem);
      assert.equal(again.result, "unchanged");
      assert.equal((await readCm())[ISSUERS_KEY], cmBefore[ISSUERS_KEY]);
      const managers = (await kube.get<
        Manifest & { metadata: { managedFields?: { manager: string; fieldsV1?: { "f:data"?: object } }[] } }
      >(cmPath))!
        .metadata.managedFields ?? [];
      const owned = (m: string) =>
        Object.keys(managers.find((f) => f.manager === m)?.fieldsV1?.["f:data"] ?? {});
      assert.deepEqual(owned(FIELD_MANAGER), [`f:${TRUST_ANCHORS_KEY}`]);
      assert.deepEqual(owned("weft-identity"), [`f:${ISSUERS_KEY}`]);

      // 3. The Secret replaced as cert-manager writes it: type kubernetes.io/tls (immutable, so
      //    delete + create), the chain in tls.crt, a SEC1 key ("PKCS1" in cert-manager), ca.crt.
      const fpB = await fp(issuerB.certPem);
      const sec1 = createPrivateKey(issuerB.keyPem).export({ format: "pem", type: "sec1" }) as string;
      const changedAt = Date.now();
      await kube.delete(secretPath);
      await kube.json("POST", `/api/v1/namespaces/${ns}/secrets`, {
        body: JSON.stringify({
          metadata: {
            name: SECRET,
            annotations: { "cert-manager.io/certificate-name": "linkerd-identity-issuer" },
          },
          type: "kubernetes.io/tls",
          data: {
            "tls.crt": b64(issuerB.certPem + anchor.certPem),
            "tls.key": b64(sec1),
            "ca.crt": b64(anchor.certPem),
          },
        }),
      });
      await until("weft-issuers.crt with B first", async () => (await published())[0] === fpB || undefined);
      assert.deepEqual(await published(), [fpB, fpA]);
      const rb = parseRenewBefore((await readCm())[RENEW_BEFORE_KEY]);
      assert.ok(rb, `weft-renew-before is an RFC 3339 time: ${(await readCm())[RENEW_BEFORE_KEY]}`);
      // Before the swap (minus the 20 s skew identity subtracts from notBefore), never after now.
      assert.ok(rb.getTime() >= changedAt - 21_000 && rb.getTime() <= Date.now(), rb.toISOString());
      const m = await metrics();
      assert.match(m, new RegExp(`^weft_identity_issuer_info\\{fingerprint_sha256="${fpB}"`, "m"));
      assert.match(m, /^weft_identity_issuer_secret_ca_trusted 1$/m);
      assert.match(
        m,
        new RegExp(
          `^identity_cert_expiration_timestamp_seconds ${
            Math.floor(issuerB.cert.notAfter.getTime() / 1000)
          }$`,
          "m",
        ),
      );

      // 4. An issuer under an anchor not in the bundle is refused, and taken once the anchor is added.
      const fpC = await fp(issuerC.certPem);
      await kube.delete(secretPath);
      await kube.json("POST", `/api/v1/namespaces/${ns}/secrets`, {
        body: JSON.stringify({
          metadata: { name: SECRET },
          type: "kubernetes.io/tls",
          data: {
            "tls.crt": b64(issuerC.certPem),
            "tls.key": b64(issuerC.keyPem),
            "ca.crt": b64(anchor2.certPem),
          },
        }),
      });
      await until(
        "IssuerCaNotTrusted",
        () => Promise.resolve(/IssuerCaNotTrusted: .*"root-2\.r2\.test"/.test(log()) || undefined),
      );
      assert.match(log(), /IssuerUpdateSkipped \(keeping the current issuer\): .*does not chain/);
      assert.equal((await published())[0], fpB);
      assert.match(await metrics(), /^weft_identity_issuer_secret_ca_trusted 0$/m);
      await applyBundle(anchor.certPem + anchor2.certPem);
      await until(
        "issuer C taken after the anchor joined",
        async () => (await published())[0] === fpC || undefined,
      );
      assert.match(await metrics(), /^weft_identity_issuer_secret_ca_trusted 1$/m);
      assert.equal(
        [...(await metrics()).matchAll(/^weft_identity_trust_anchor_expiration_timestamp_seconds\{/gm)]
          .length,
        2,
      );

      // 5. A bundle that does not parse is refused; the anchors in use stay.
      await applyBundle("-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydA==\n-----END CERTIFICATE-----\n");
      await until("the refusal", () => Promise.resolve(/TrustAnchorsRefused: /.test(log()) || undefined));
      const after = await metrics();
      assert.match(after, /^weft_identity_trust_bundle_reloads_total\{result="error"\} 1$/m);
      assert.equal(
        [...after.matchAll(/^weft_identity_trust_anchor_expiration_timestamp_seconds\{/gm)].length,
        2,
      );
      assert.match(after, new RegExp(`^weft_identity_issuer_info\\{fingerprint_sha256="${fpC}"`, "m"));
    } catch (e) {
      console.error(logs.join("\n"));
      throw e;
    } finally {
      if (child) {
        child.kill("SIGTERM");
        await child.status;
      }
      if (tmp) await Deno.remove(tmp, { recursive: true }).catch(() => {});
      await kube.delete(`/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/${crb}`).catch(() => {});
      await kube.delete(`/api/v1/namespaces/${ns}`).catch(() => {});
    }
  },
});
