// Cluster e2e: the proxy injector meshes pods of an annotated namespace (init container with NET_ADMIN/NET_RAW
// + proxy, native sidecar where the API server has them) and leaves others alone.
import assert from "node:assert/strict";
import { apply, inNamespace, type Json, pods, requireMesh, waitForReadyPods } from "./lib/kube.ts";
import { injectedContainers } from "./lib/mesh.ts";
import { appManifest, PROXY_CONTAINER } from "./lib/workloads.ts";

const opts = { sanitizeOps: false, sanitizeResources: false };

Deno.test({
  name: "e2e: a pod in an annotated namespace gets the init container and the proxy",
  ...opts,
  fn: async () => {
    await requireMesh();
    await inNamespace("e2e-inject", { inject: true }, async (ns) => {
      await apply(ns, appManifest({ name: "app" }));
      const [pod] = await waitForReadyPods(ns, "app=app", 1);
      const inj = injectedContainers(pod);
      assert.ok(typeof inj !== "string", inj as string);

      const caps: string[] = inj.init.securityContext?.capabilities?.add ?? [];
      assert.ok(caps.includes("NET_ADMIN") && caps.includes("NET_RAW"), `init capabilities: ${caps}`);
      if (inj.native) {
        assert.equal(inj.proxy.restartPolicy, "Always", "a native sidecar proxy has restartPolicy Always");
        assert.ok(inj.proxy.startupProbe, "a native sidecar proxy holds the app back with a startup probe");
        const names = pod.spec.initContainers.map((c: Json) => c.name);
        assert.ok(names.indexOf("linkerd-init") < names.indexOf(PROXY_CONTAINER), `init order: ${names}`);
      } else {
        assert.equal(pod.spec.containers[0].name, PROXY_CONTAINER, "the proxy is the first container");
      }
      const env = new Map((inj.proxy.env ?? []).map((e: Json) => [e.name, e.value]));
      assert.ok(env.get("LINKERD2_PROXY_IDENTITY_LOCAL_NAME"), "proxy has an identity local name");
      const tokenVolume = (pod.spec.volumes ?? []).find((v: Json) =>
        v.projected?.sources?.some((s: Json) => s.serviceAccountToken?.audience === "identity.l5d.io")
      );
      assert.ok(tokenVolume, "a projected ServiceAccount token with audience identity.l5d.io is mounted");
      assert.ok(pod.metadata.annotations?.["linkerd.io/proxy-version"], "the injector recorded what it did");

      // The init container ran to success and the proxy is up and ready.
      const initStatus = (pod.status.initContainerStatuses ?? []).find((c: Json) =>
        c.name === "linkerd-init"
      );
      assert.equal(initStatus?.state?.terminated?.exitCode, 0, `init status ${JSON.stringify(initStatus)}`);
      const proxyStatus = [...(pod.status.initContainerStatuses ?? []), ...pod.status.containerStatuses]
        .find((c: Json) => c.name === PROXY_CONTAINER);
      assert.ok(
        proxyStatus?.ready && proxyStatus?.state?.running,
        `proxy status ${JSON.stringify(proxyStatus)}`,
      );
    });
  },
});

Deno.test({
  name: "e2e: pods outside annotated namespaces, or annotated disabled, are not injected",
  ...opts,
  fn: async () => {
    await requireMesh();
    await inNamespace("e2e-noinject", { inject: false }, async (ns) => {
      await apply(ns, appManifest({ name: "plain" }));
      const [pod] = await waitForReadyPods(ns, "app=plain", 1);
      assert.equal(typeof injectedContainers(pod), "string", "pod in an unannotated namespace was injected");
    });
    await inNamespace("e2e-optout", { inject: true }, async (ns) => {
      await apply(ns, appManifest({ name: "optout", podAnnotations: { "linkerd.io/inject": "disabled" } }));
      const [pod] = await waitForReadyPods(ns, "app=optout", 1);
      assert.equal(typeof injectedContainers(pod), "string", "pod annotated disabled was injected");
      assert.equal((await pods(ns, "app=optout")).length, 1);
    });
  },
});
