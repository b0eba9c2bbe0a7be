// Cluster e2e: deleting the destination controller's pod does not break an established meshed connection, and
// once the replacement is ready, new connections work again (proxies keep the last known discovery and
// reconnect with backoff). This test deletes a pod in the control-plane namespace; its Deployment replaces it.
import assert from "node:assert/strict";
import {
  CONTROL_PLANE_NS,
  inNamespace,
  type Json,
  kc,
  kjson,
  requireMesh,
  rolloutStatus,
  waitForReadyPods,
} from "./lib/kube.ts";
import { apply } from "./lib/kube.ts";
import { appManifest, byPod, fetchFrom, sessionStats, startSession, stopSession } from "./lib/workloads.ts";
import { waitFor } from "./lib/wait.ts";

const opts = { sanitizeOps: false, sanitizeResources: false };
const SELECTOR = "linkerd.io/control-plane-component=destination";

Deno.test({
  name: "e2e: deleting the destination pod keeps established traffic flowing, and new connections recover",
  ...opts,
  fn: async () => {
    await requireMesh();
    await inNamespace("e2e-dst", { inject: true }, async (ns) => {
      await apply(ns, appManifest({ name: "backend", service: true }));
      await apply(ns, appManifest({ name: "client" }));
      const [backend] = await waitForReadyPods(ns, "app=backend", 1);
      const [client] = await waitForReadyPods(ns, "app=client", 1);
      const ip = client.status.podIP;
      const target = `backend.${ns}.svc.cluster.local:80`;
      assert.deepEqual(byPod(await fetchFrom(ip, target, 2)), { [backend.metadata.name]: 2 });

      await startSession(ip, target, 200);
      await waitFor("the session's first answers", async () => (await sessionStats(ip)).ok >= 5, {
        timeoutMs: 20_000,
      });
      const old: Json[] = (await kjson(["-n", CONTROL_PLANE_NS, "get", "pods", "-l", SELECTOR])).items;
      assert.ok(old.length > 0, `no pods labelled ${SELECTOR} in ${CONTROL_PLANE_NS}`);
      const deploy = old[0].metadata.ownerReferences?.[0]?.name?.replace(/-[a-z0-9]+$/, "");
      await kc(["-n", CONTROL_PLANE_NS, "delete", "pod", "-l", SELECTOR, "--wait=false"]);
      const okAtDelete = (await sessionStats(ip)).ok;

      // While the replacement starts, the established connection keeps answering.
      await waitFor("a replacement destination pod to be ready", async () => {
        const now: Json[] = (await kjson(["-n", CONTROL_PLANE_NS, "get", "pods", "-l", SELECTOR])).items;
        const oldNames = new Set(old.map((p) => p.metadata.name));
        return now.some((p) =>
          !oldNames.has(p.metadata.name) &&
          (p.status?.conditions ?? []).some((c: Json) => c.type === "Ready" && c.status === "True")
        );
      }, { timeoutMs: 180_000, intervalMs: 1000 });
      if (deploy) await rolloutStatus(CONTROL_PLANE_NS, `deployment/${deploy}`);
      const during = await stopSession(ip);
      assert.equal(during.failed, 0, `the established connection failed: ${JSON.stringify(during)}`);
      assert.equal(during.reconnects, 0, `the established connection broke: ${JSON.stringify(during)}`);
      assert.ok(during.ok > okAtDelete, `no answers after the delete: ${JSON.stringify(during)}`);

      // New connections work again (bounded: the proxies re-sync with the new pod on their own backoff).
      await waitFor("new connections to succeed after the restart", async () => {
        const answers = await fetchFrom(ip, target, 5);
        return answers.every((a) => a.ok);
      }, { timeoutMs: 60_000, intervalMs: 1000 });
    });
  },
});
