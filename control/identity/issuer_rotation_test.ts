import assert from "node:assert/strict";
import * as grpc from "@grpc/grpc-js";
import { Registry } from "prom-client";
import { type CertifyResponse, IdentityClient } from "../../proto/gen/identity.ts";
import { FakeEventSource } from "../k8s/mod.ts";
import { systemClock } from "../../proto/support/clock.ts";
import { serveIdentityGrpc } from "./grpc_server.ts";
import type { IssuerMaterial } from "./issuer.ts";
import { IssuerReloader } from "./issuer_reloader.ts";
import {
  DirectoryIssuerSource,
  materialFromData,
  SecretIssuerSource,
  type SecretObject,
} from "./issuer_source.ts";
import { IdentityMetrics } from "./metrics.ts";
import { CertifyService } from "./service.ts";
import { csrFor, identityOf, makeCa, newIssuerMaterial, TEST_CERTIFY_CONFIG } from "./test_pki.ts";
import { x509 } from "../../proto/support/x509.ts";

const A = identityOf("sa-a", "ns-a");

async function writeIssuer(dir: string, m: IssuerMaterial): Promise<void> {
  // Replace each file atomically, as the kubelet's symlink swap does for a mounted Secret.
  for (const [name, text] of [["tls.crt", m.certPem], ["tls.key", m.keyPem]]) {
    await Deno.writeTextFile(`${dir}/.${name}.tmp`, text);
    await Deno.rename(`${dir}/.${name}.tmp`, `${dir}/${name}`);
  }
}

async function until(what: string, cond: () => boolean, timeoutMs = 10_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

Deno.test("issuer rotation under load: the Secret's files change while requests flow, none fail, new leaves chain to the new issuer", async () => {
  const ca = await makeCa();
  const root = { certPem: ca.anchorPem, keyPem: ca.anchorKeyPem };
  const second = await newIssuerMaterial(root, Date.now(), "identity-2.linkerd.cluster.local");
  const bogus = (await makeCa()).material; // chains to another anchor: must be refused
  const dir = await Deno.makeTempDir({ prefix: "weft-issuer-" });
  const ctl = new AbortController();
  const registry = new Registry();
  const metrics = new IdentityMetrics(registry);
  const logs: string[] = [];
  const reloader = new IssuerReloader(ca.anchors, systemClock, metrics, (l) => logs.push(l));
  await writeIssuer(dir, ca.material);
  const sourceDone = new DirectoryIssuerSource(dir, 50).run(
    (m) => void reloader.offer(m),
    (e) => logs.push(e),
    ctl.signal,
  );
  assert.equal((await reloader.first).ok, true);
  const service = new CertifyService({
    config: TEST_CERTIFY_CONFIG,
    issuer: () => reloader.current(),
    screenToken: () => undefined,
    validateToken: () => Promise.resolve({ namespace: "ns-a", serviceAccount: "sa-a" }),
    clock: systemClock,
    metrics,
  });
  const server = await serveIdentityGrpc({ service, registry, address: "127.0.0.1:0" });
  const client = new IdentityClient(`127.0.0.1:${server.port}`, grpc.credentials.createInsecure());
  const csr = (await csrFor(A)).der;
  const certify = () =>
    new Promise<CertifyResponse>((resolve, reject) =>
      client.certify(
        { identity: A, token: new TextEncoder().encode("t"), certificateSigningRequest: csr },
        (err, res) => err ? reject(err) : resolve(res),
      )
    );
  const firstSubject = ca.issuer.certificate.subject;
  const secondSubject = new x509.X509Certificate(second.certPem).subject;
  const seen: string[] = [];
  let failures = 0;
  let stop = false;
  const deadline = Date.now() + 20_000;
  const worker = async () => {
    while (!stop && Date.now() < deadline) {
      try {
        const res = await certify();
        const leaf = new x509.X509Certificate(Uint8Array.from(res.leafCertificate));
        const inter = new x509.X509Certificate(Uint8Array.from(res.intermediateCertificates[0]));
        // The leaf is signed by the intermediate it came with: no mixed chains mid-swap.
        assert.equal(leaf.issuer, inter.subject);
        assert.ok(await leaf.verify({ publicKey: inter.publicKey, signatureOnly: true }));
        seen.push(inter.subject);
      } catch (e) {
        failures++;
        logs.push(`request failed: ${e}`);
      }
    }
  };
  try {
    const workers = Array.from({ length: 8 }, worker);
    await until("certificates from the first issuer", () => seen.length >= 50);
    await writeIssuer(dir, bogus);
    await until("the bad issuer refused", () => logs.some((l) => l.startsWith("IssuerUpdateSkipped")));
    const beforeSwap = seen.length;
    await until("more certificates after the refused update", () => seen.length >= beforeSwap + 50);
    await writeIssuer(dir, second);
    await until(
      "certificates from the second issuer",
      () => seen.filter((s) => s === secondSubject).length >= 50,
    );
    stop = true;
    await Promise.all(workers);
    assert.equal(failures, 0, logs.join("\n"));
    const firstNew = seen.indexOf(secondSubject);
    assert.ok(firstNew > beforeSwap);
    assert.ok(
      seen.slice(0, beforeSwap).every((s) => s === firstSubject),
      "the refused issuer was never used",
    );
    assert.ok(
      seen.slice(firstNew + 16).every((s) => s === secondSubject),
      "after the swap only the new issuer",
    );
    const text = await registry.metrics();
    assert.match(text, /identity_issuer_reloads_total\{result="success"\} 2/);
    assert.match(text, /identity_issuer_reloads_total\{result="failure"\} 1/);
    assert.ok(
      logs.some((l) => /IssuerUpdateSkipped.*does not chain to any of the 1 trust anchor/.test(l)),
      logs.join("\n"),
    );
    assert.ok(logs.some((l) => l.startsWith(`IssuerUpdated: "${secondSubject}"`)), logs.join("\n"));
  } finally {
    stop = true;
    client.close();
    await server.close(100);
    ctl.abort();
    await sourceDone;
    await Deno.remove(dir, { recursive: true });
  }
});

function secret(data: Record<string, string>, name = "linkerd-identity-issuer"): SecretObject {
  return {
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name, namespace: "linkerd" },
    data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, btoa(v)])),
  };
}

Deno.test("the issuer Secret is hot-reloaded through the informer (tls.crt/tls.key or crt.pem/key.pem)", async () => {
  const ca = await makeCa();
  const root = { certPem: ca.anchorPem, keyPem: ca.anchorKeyPem };
  const second = await newIssuerMaterial(root, Date.now(), "identity-2.linkerd.cluster.local");
  const source = new FakeEventSource<SecretObject>("secrets");
  source.apply(
    secret({ "tls.crt": ca.material.certPem, "tls.key": ca.material.keyPem, "ca.crt": ca.anchorPem }),
  );
  source.apply(secret({ "tls.crt": "unrelated" }, "other-secret"));
  const errors: string[] = [];
  const reloader = new IssuerReloader(ca.anchors, systemClock);
  const ctl = new AbortController();
  const done = new SecretIssuerSource(source, "linkerd", "linkerd-identity-issuer").run(
    (m) => void reloader.offer(m),
    (e) => errors.push(e),
    ctl.signal,
  );
  try {
    assert.equal((await reloader.first).ok, true);
    assert.equal(reloader.current()?.certificate.subject, ca.issuer.certificate.subject);
    source.apply(secret({ "crt.pem": second.certPem, "key.pem": second.keyPem }));
    await until(
      "the second issuer",
      () => reloader.current()?.certificate.subject === "CN=identity-2.linkerd.cluster.local",
    );
    assert.match(reloader.current()!.origin, /^secret linkerd\/linkerd-identity-issuer@\d+$/);
    source.apply(secret({ "tls.crt": second.certPem }));
    await until("an error for the half-written secret", () => errors.length > 0);
    assert.match(errors[0], /has "tls\.crt" but not "tls\.key"/);
    source.delete("linkerd", "linkerd-identity-issuer");
    await until("the delete reported", () => errors.length > 1);
    assert.match(errors[1], /was deleted; keeping the current issuer/);
    assert.equal(reloader.current()?.certificate.subject, "CN=identity-2.linkerd.cluster.local");
  } finally {
    ctl.abort();
    await done;
  }
});

Deno.test("issuer material must name both halves", () => {
  assert.throws(
    () => materialFromData({ "ca.crt": "x" }, "secret a/b"),
    /has none of the keys tls\.crt\+tls\.key or crt\.pem\+key\.pem \(keys present: ca\.crt\)/,
  );
});
