import assert from "node:assert/strict";
import { createIssuer, createTrustAnchor } from "../control/certs/pki.ts";
import { identityStep } from "./deploy.ts";
import type { Kube } from "./kube.ts";
import type { Progress } from "./progress.ts";
import { ISSUER_SECRET, NAMESPACE, TRUST_ROOTS_CONFIGMAP } from "./render.ts";

const DAY = 86_400_000;

/** A Kube that only answers the two GETs identityStep makes. */
function fakeKube(objects: Record<string, unknown>): Kube {
  return { get: (path: string) => Promise.resolve(objects[path]) } as unknown as Kube;
}

Deno.test("deploy leaves a cert-manager issuer Secret alone (short-lived, kubernetes.io/tls) and applies only ca-bundle.crt", async () => {
  const now = Date.now();
  const anchor = await createTrustAnchor({
    commonName: "root.weft.cluster.local",
    lifetimeMs: 3650 * DAY,
    now,
  });
  // cert-manager's usual issuer: 48 h, well inside deploy's 90-day renewal window.
  const issuer = await createIssuer(anchor, {
    commonName: "identity.weft.cluster.local",
    lifetimeMs: 2 * DAY,
    now,
  });
  const certsDir = await Deno.makeTempDir();
  // deploy has the anchor key, so without the rule it would renew (and overwrite) this issuer.
  await Deno.writeTextFile(`${certsDir}/ca.crt`, anchor.certPem);
  await Deno.writeTextFile(`${certsDir}/ca.key`, anchor.keyPem);
  const kube = fakeKube({
    [`/api/v1/namespaces/${NAMESPACE}/configmaps/${TRUST_ROOTS_CONFIGMAP}`]: {
      data: { "ca-bundle.crt": anchor.certPem, "weft-issuers.crt": issuer.certPem },
    },
    [`/api/v1/namespaces/${NAMESPACE}/secrets/${ISSUER_SECRET}`]: {
      apiVersion: "v1",
      kind: "Secret",
      metadata: {
        name: ISSUER_SECRET,
        annotations: { "cert-manager.io/certificate-name": "linkerd-identity-issuer" },
      },
      type: "kubernetes.io/tls",
      data: {
        "tls.crt": btoa(issuer.certPem),
        "tls.key": btoa(issuer.keyPem),
        "ca.crt": btoa(anchor.certPem),
      },
    },
  });
  const o = { kube, certsDir, progress: { note: () => {} } as unknown as Progress };
  try {
    const step = await identityStep(o as unknown as Parameters<typeof identityStep>[0]);
    assert.deepEqual(step.objects.map((m) => m.kind), ["ConfigMap"]);
    assert.deepEqual(Object.keys(step.objects[0].data as object), ["ca-bundle.crt"]);
    assert.equal(step.material.issuer.certPem, issuer.certPem);
    assert.match(
      step.detail,
      /issuer Secret managed outside deploy \(type kubernetes\.io\/tls\), left as is/,
    );
    await assert.rejects(
      identityStep(
        {
          ...o,
          given: { anchorsPem: anchor.certPem, issuer: { certPem: issuer.certPem, keyPem: issuer.keyPem } },
        } as unknown as Parameters<typeof identityStep>[0],
      ),
      /managed outside deploy .*rotate it there/,
    );
  } finally {
    await Deno.remove(certsDir, { recursive: true });
  }
});
