/**
 * The injector in-process against the real API server (KUBECONFIG): the sidecar mode read from
 * `/version`, and the metadata-only namespace informer feeding admissions — a namespace this test
 * creates and annotates decides whether a pod sent over HTTPS is injected. Nothing is deployed.
 */
import assert from "node:assert/strict";
import { CoreV1Api } from "@kubernetes/client-node";
import { Registry } from "prom-client";
import {
  Informer,
  KubeApiSource,
  loadKubeConfig,
  metadataOnly,
  Resources,
  stripManagedFields,
} from "../k8s/mod.ts";
import { testCa, writeLikeKubelet } from "../webhook/testing/pki.ts";
import { defaultInjectorConfig } from "./config.ts";
import { detectNativeSidecars } from "./main.ts";
import type { NamespaceObject } from "./namespace_cache.ts";
import { startInjector } from "./server.ts";

const kubeconfig = Deno.env.get("KUBECONFIG");

Deno.test({
  name:
    "injector against a real API server: native sidecars from /version, namespace annotations from the informer",
  ignore: !kubeconfig,
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const kc = loadKubeConfig(kubeconfig);
    const core = kc.makeApiClient(CoreV1Api);
    const ac = new AbortController();
    const native = await detectNativeSidecars(kc, ac.signal);
    assert.equal(native, true, "the local cluster runs Kubernetes >= 1.29");

    const ns = `weft-injector-${crypto.randomUUID().slice(0, 8)}`;
    await core.createNamespace({ body: { metadata: { name: ns } } });
    const ca = await testCa();
    const dir = await Deno.makeTempDir();
    try {
      const leaf = await ca.issue("weft-proxy-injector");
      await writeLikeKubelet(dir, { "tls.crt": leaf.cert, "tls.key": leaf.key });
      const server = await startInjector({
        webhook: { hostname: "127.0.0.1", port: 0, certFile: `${dir}/tls.crt`, keyFile: `${dir}/tls.key` },
        admin: { hostname: "127.0.0.1", port: 0 },
        config: { ...defaultInjectorConfig(ca.caPem), nativeSidecars: native },
        namespaces: new Informer<NamespaceObject>({
          name: "namespaces",
          source: new KubeApiSource(kc, metadataOnly(Resources.namespaces)),
          transform: stripManagedFields,
          log: () => {},
        }),
        namespaceWaitMs: 1000,
        registry: new Registry(),
        signal: ac.signal,
        log: () => {},
      });
      const client = Deno.createHttpClient({ caCerts: [ca.caPem] });
      const admit = async () => {
        const res = await fetch(`https://127.0.0.1:${server.webhook.port}/inject`, {
          method: "POST",
          client,
          body: JSON.stringify({
            apiVersion: "admission.k8s.io/v1",
            kind: "AdmissionReview",
            request: {
              uid: crypto.randomUUID(),
              kind: { group: "", version: "v1", kind: "Pod" },
              namespace: ns,
              operation: "CREATE",
              object: {
                metadata: { name: "p", namespace: ns },
                spec: { containers: [{ name: "app", image: "x" }] },
              },
            },
          }),
        });
        assert.equal(res.status, 200);
        return (await res.json()).response as { allowed: boolean; patch?: string };
      };
      try {
        const deadline = Date.now() + 20_000;
        while (
          (await fetch(`http://127.0.0.1:${server.adminPort}/ready`).then((r) => r.text())) !== "ready\n"
        ) {
          if (Date.now() > deadline) throw new Error("injector never became ready");
          await new Promise((r) => setTimeout(r, 50));
        }
        assert.equal((await admit()).patch, undefined, "not injected before the namespace is annotated");
        await core.patchNamespace({
          name: ns,
          body: [{ op: "add", path: "/metadata/annotations", value: { "linkerd.io/inject": "enabled" } }],
        });
        let patch: string | undefined;
        while (!patch && Date.now() < deadline) {
          patch = (await admit()).patch;
          if (!patch) await new Promise((r) => setTimeout(r, 50));
        }
        assert.ok(patch, "the annotation never reached the injector's cache");
        const ops = JSON.parse(atob(patch)) as {
          path: string;
          value: { name?: string; restartPolicy?: string };
        }[];
        const proxy = ops.find((o) => o.path === "/spec/initContainers/1")?.value;
        assert.deepEqual([proxy?.name, proxy?.restartPolicy], ["linkerd-proxy", "Always"]);
      } finally {
        client.close();
        ac.abort();
        await server.finished;
      }
    } finally {
      await core.deleteNamespace({ name: ns }).catch(() => {});
      await Deno.remove(dir, { recursive: true });
      await ca.close();
    }
  },
});
