/**
 * The informer against a real API server (KUBECONFIG): full and metadata-only list+watch of
 * ConfigMaps in a namespace of its own, with adds, updates and deletes, and a resumed watch.
 */
import assert from "node:assert/strict";
import { CoreV1Api, type V1ConfigMap } from "@kubernetes/client-node";
import { Registry } from "prom-client";
import { KubeApiSource } from "./api_source.ts";
import { GoneError } from "./event_source.ts";
import { Informer } from "./informer.ts";
import { loadKubeConfig } from "./kubeconfig.ts";
import type { KubeObject } from "./types.ts";

const kubeconfig = Deno.env.get("KUBECONFIG");

async function waitFor(what: string, cond: () => boolean, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

type ConfigMap = KubeObject & { data?: Record<string, string> };

Deno.test({
  name: "informer lists, watches and resumes ConfigMaps on a real API server, full and metadata-only",
  ignore: !kubeconfig,
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const kc = loadKubeConfig(kubeconfig);
    const core = kc.makeApiClient(CoreV1Api);
    const ns = `weft-k8s-informer-${crypto.randomUUID().slice(0, 8)}`;
    await core.createNamespace({ body: { metadata: { name: ns } } });
    const ctrl = new AbortController();
    try {
      const cm = (name: string, v: string): V1ConfigMap => ({
        metadata: { name, namespace: ns },
        data: { v },
      });
      await core.createNamespacedConfigMap({ namespace: ns, body: cm("before", "1") });

      const registry = new Registry();
      const ref = { group: "", version: "v1", plural: "configmaps", namespace: ns };
      const full = new Informer<ConfigMap>({
        name: "configmaps",
        source: new KubeApiSource(kc, ref),
        registry,
        watchTimeoutSeconds: [2, 3],
        log: () => {},
      });
      const meta = new Informer<KubeObject>({
        name: "configmaps_meta",
        source: new KubeApiSource(kc, { ...ref, metadataOnly: true }),
        log: () => {},
      });
      const events: string[] = [];
      full.onAdd((o) => events.push(`add ${o.metadata.name} ${o.data?.v}`));
      full.onUpdate((_o, n) => events.push(`update ${n.metadata.name} ${n.data?.v}`));
      full.onDelete((o) => events.push(`delete ${o.metadata.name}`));
      const runs = [full.start(ctrl.signal), meta.start(ctrl.signal)];
      await Promise.all([full.synced, meta.synced]);
      // kube-root-ca.crt is created in every namespace by the controller manager.
      assert.ok(full.get(ns, "before"));
      assert.equal(meta.get(ns, "before")?.kind, "PartialObjectMetadata");
      assert.equal((meta.get(ns, "before") as ConfigMap).data, undefined, "metadata only");

      await core.createNamespacedConfigMap({ namespace: ns, body: cm("a", "1") });
      await core.replaceNamespacedConfigMap({ name: "a", namespace: ns, body: cm("a", "2") });
      await waitFor("update of a", () => full.get(ns, "a")?.data?.v === "2");
      // The server ends watches after 2-3 s; changes after that arrive on the resumed watch.
      await new Promise((r) => setTimeout(r, 3500));
      await core.deleteNamespacedConfigMap({ name: "a", namespace: ns });
      await waitFor("delete of a", () => full.get(ns, "a") === undefined && meta.get(ns, "a") === undefined);
      const mine = events.filter((e) => / a\b| a$/.test(e) || e.startsWith("delete a"));
      assert.deepEqual(mine, ["add a 1", "update a 2", "delete a"]);
      assert.match(await registry.getSingleMetricAsString("configmaps_informer_lists_total"), /initial"} 1/);
      const lag = await registry.getSingleMetricAsString("configmaps_informer_lag_seconds");
      assert.match(lag, /configmaps_informer_lag_seconds_count\{event="add"\} [1-9]/);

      // A watch from a version the server no longer has is GoneError (the informer re-lists).
      const src = new KubeApiSource<ConfigMap>(kc, ref);
      const gone = await src.watch({ resourceVersion: "1", timeoutSeconds: 2, signal: ctrl.signal }, () => {})
        .then(() => undefined, (e) => e);
      if (gone !== undefined) assert.ok(gone instanceof GoneError, String(gone));
      ctrl.abort();
      await Promise.all(runs);
    } finally {
      ctrl.abort();
      await core.deleteNamespace({ name: ns }).catch(() => {});
    }
  },
});
