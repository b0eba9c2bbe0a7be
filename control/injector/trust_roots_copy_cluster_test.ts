/**
 * The trust-roots copier against the real API server (KUBECONFIG): a source ConfigMap in a namespace
 * standing in for the control plane's, a copy created at "admission" in another namespace, then kept
 * equal to the source through changes (a key added, the anchors changed, a key removed). Nothing is
 * deployed; both namespaces are this test's own.
 */
import assert from "node:assert/strict";
import { CoreV1Api } from "@kubernetes/client-node";
import { loadKubeConfig } from "../k8s/mod.ts";
import {
  TRUST_ROOTS_CONFIGMAP,
  TRUST_ROOTS_COPY_CONFIGMAP,
  TRUST_ROOTS_COPY_LABEL,
} from "../../proto/trust_roots.ts";
import { TrustRootsCopier } from "./trust_roots_copy.ts";
import { KubeTrustRootsCopyApi } from "./trust_roots_copy_client.ts";

const kubeconfig = Deno.env.get("KUBECONFIG");
const PEM_A = "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n";
const PEM_B = "-----BEGIN CERTIFICATE-----\nBBBB\n-----END CERTIFICATE-----\n";

Deno.test({
  name: "trust roots copier against a real API server: created at admission, kept equal to the source",
  ignore: !kubeconfig,
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const kc = loadKubeConfig(kubeconfig);
    const core = kc.makeApiClient(CoreV1Api);
    const id = crypto.randomUUID().slice(0, 8);
    const cp = `weft-r1-cp-${id}`, app = `weft-r1-app-${id}`;
    await core.createNamespace({ body: { metadata: { name: cp } } });
    await core.createNamespace({ body: { metadata: { name: app } } });
    const copy = async () =>
      await core.readNamespacedConfigMap({ name: TRUST_ROOTS_COPY_CONFIGMAP, namespace: app });
    try {
      await core.createNamespacedConfigMap({
        namespace: cp,
        body: {
          metadata: { name: TRUST_ROOTS_CONFIGMAP },
          data: { "ca-bundle.crt": PEM_A, "other-key": "x" },
        },
      });
      const logs: string[] = [];
      const copier = new TrustRootsCopier(new KubeTrustRootsCopyApi(kc, cp), {
        controlPlaneNamespace: cp,
        log: (l) => logs.push(l),
        ensureTimeoutMs: 10_000,
      });

      // The control plane's own namespace needs no copy.
      await copier.ensure(cp);
      await assert.rejects(core.readNamespacedConfigMap({ name: TRUST_ROOTS_COPY_CONFIGMAP, namespace: cp }));

      await copier.ensure(app);
      let c = await copy();
      assert.deepEqual(c.data, { "ca-bundle.crt": PEM_A }, "only the trust-roots keys are copied");
      assert.equal(c.metadata?.labels?.[TRUST_ROOTS_COPY_LABEL], "true");
      assert.ok(logs.includes(`trust roots: copied into namespace ${app}`));

      // Rotation step 1 and identity's keys: the next sync brings them over.
      await core.patchNamespacedConfigMap({
        namespace: cp,
        name: TRUST_ROOTS_CONFIGMAP,
        body: [
          { op: "replace", path: "/data/ca-bundle.crt", value: PEM_A + PEM_B },
          { op: "add", path: "/data/weft-issuers.crt", value: PEM_B },
          { op: "add", path: "/data/weft-renew-before", value: "2026-12-04T05:00:00Z" },
        ],
      });
      assert.ok((await copier.sync()).includes(app));
      c = await copy();
      assert.deepEqual(c.data, {
        "ca-bundle.crt": PEM_A + PEM_B,
        "weft-issuers.crt": PEM_B,
        "weft-renew-before": "2026-12-04T05:00:00Z",
      });
      assert.ok(!(await copier.sync()).includes(app), "an equal copy is not written again");

      // A copy deleted after it was listed (its namespace going away, as other tests' namespaces do while
      // this runs) is not an error of the sync.
      const api = new KubeTrustRootsCopyApi(kc, cp);
      const before = (await copy()).data ?? {};
      await core.deleteNamespacedConfigMap({ name: TRUST_ROOTS_COPY_CONFIGMAP, namespace: app });
      await api.patch(app, { "weft-renew-before": null });
      await assert.rejects(copy(), "a patch of a deleted copy must not create it again");
      assert.equal(await api.create(app, before), "created");

      // Another control plane's copier (the cluster's own weft, a second mesh) does not list this source's
      // copies, so it never overwrites them.
      const others = await new KubeTrustRootsCopyApi(kc, `${cp}-other`).listCopies();
      assert.ok(!others.some((c) => c.namespace === app), "another control plane lists this test's copy");
      assert.ok((await new KubeTrustRootsCopyApi(kc, cp).listCopies()).some((c) => c.namespace === app));

      // A key removed from the source is removed from the copy.
      await core.patchNamespacedConfigMap({
        namespace: cp,
        name: TRUST_ROOTS_CONFIGMAP,
        body: [{ op: "remove", path: "/data/weft-renew-before" }],
      });
      await copier.sync();
      assert.deepEqual((await copy()).data, { "ca-bundle.crt": PEM_A + PEM_B, "weft-issuers.crt": PEM_B });

      // A source without anchors is not copied: the copy keeps the last good bundle.
      await core.patchNamespacedConfigMap({
        namespace: cp,
        name: TRUST_ROOTS_CONFIGMAP,
        body: [{ op: "replace", path: "/data/ca-bundle.crt", value: "" }],
      });
      await copier.sync();
      assert.equal((await copy()).data?.["ca-bundle.crt"], PEM_A + PEM_B);
    } finally {
      await core.deleteNamespace({ name: cp }).catch(() => {});
      await core.deleteNamespace({ name: app }).catch(() => {});
    }
  },
});
