// Cluster e2e: a rolling restart of a meshed Deployment drops no request (§7: the shutdown race). The client makes
// a request on a new connection every 100 ms through the whole rollout; the old pods keep serving while they drain
// (the app serves DRAIN_MS after SIGTERM, and its proxy must outlive it), and the new pods take over.
import assert from "node:assert/strict";
import {
  apply,
  inNamespace,
  type Json,
  kc,
  requireMesh,
  rolloutStatus,
  waitForReadyPods,
} from "./lib/kube.ts";
import { appManifest, byPod, fetchFrom } from "./lib/workloads.ts";

const opts = { sanitizeOps: false, sanitizeResources: false };

Deno.test({
  name: "e2e: a rolling restart of a meshed Deployment drops no request",
  ...opts,
  fn: async () => {
    await requireMesh();
    await inNamespace("e2e-rollout", { inject: true }, async (ns) => {
      await apply(ns, appManifest({ name: "backend", service: true, replicas: 2 }));
      await apply(ns, appManifest({ name: "client" }));
      const old = await waitForReadyPods(ns, "app=backend", 2);
      const [client] = await waitForReadyPods(ns, "app=client", 1);
      const target = `backend.${ns}.svc.cluster.local:80`;
      const first = await fetchFrom(client.status.podIP, target, 4);
      assert.equal(
        first.filter((a) => !a.ok).length,
        0,
        `before the rollout: ${JSON.stringify(byPod(first))}`,
      );

      // 300 requests 100 ms apart: ~30 s of traffic, longer than the rollout.
      const during = fetchFrom(client.status.podIP, target, 300, 3000, 100);
      await new Promise((r) => setTimeout(r, 2000));
      await kc(["-n", ns, "rollout", "restart", "deployment/backend"]);
      await rolloutStatus(ns, "deployment/backend", 120_000);
      const answers = await during;
      const fresh = (await waitForReadyPods(ns, "app=backend", 2)).map((p: Json) =>
        p.metadata.name as string
      );
      const counts = byPod(answers);
      const failed = answers.filter((a) => !a.ok);
      assert.equal(failed.length, 0, `requests failed during the rollout: ${JSON.stringify(counts)}`);
      const oldNames = old.map((p: Json) => p.metadata.name as string);
      assert.ok(oldNames.some((n) => counts[n]), `no answer from the old pods: ${JSON.stringify(counts)}`);
      assert.ok(
        fresh.some((n) => counts[n]),
        `no answer from the new pods ${fresh}: ${JSON.stringify(counts)}`,
      );
    });
  },
});
