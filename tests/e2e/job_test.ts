// Cluster e2e: a Job whose pod is meshed completes (§7: "Jobs that never finish"): its one request, made as soon
// as the app starts (no retry), succeeds through the proxy, the app exits, the proxy does not keep the pod
// running, and the Job is marked complete.
import assert from "node:assert/strict";
import { apply, inNamespace, type Json, kjson, pods, requireMesh, waitForReadyPods } from "./lib/kube.ts";
import { describePods, logs } from "./lib/kube.ts";
import { injectedContainers } from "./lib/mesh.ts";
import { appManifest, oneShotJobManifest } from "./lib/workloads.ts";
import { WaitAborted, waitFor } from "./lib/wait.ts";

const opts = { sanitizeOps: false, sanitizeResources: false };

Deno.test({
  name: "e2e: a Job with a meshed pod completes",
  ...opts,
  fn: async () => {
    await requireMesh();
    await inNamespace("e2e-job", { inject: true }, async (ns) => {
      await apply(ns, appManifest({ name: "backend", service: true }));
      await waitForReadyPods(ns, "app=backend", 1);
      await apply(ns, oneShotJobManifest("once", `backend.${ns}.svc.cluster.local:80`));
      let job: Json;
      let list: Json[] = [];
      await waitFor("Job once to complete", async () => {
        job = await kjson(["-n", ns, "get", "job", "once"]);
        list = await pods(ns, "job=once");
        const failed = (job.status?.conditions ?? []).find((c: Json) =>
          c.type === "Failed" && c.status === "True"
        );
        if (failed) {
          const log = await logs(ns, list[0]?.metadata?.name ?? "", "once").catch(() => "");
          throw new WaitAborted(
            `Job failed: ${failed.reason} ${failed.message}; ${describePods(list)}; log: ${log}`,
          );
        }
        return (job.status?.succeeded ?? 0) >= 1 &&
          (job.status?.conditions ?? []).some((c: Json) => c.type === "Complete" && c.status === "True");
      }, { timeoutMs: 150_000, intervalMs: 1000, describe: () => describePods(list) });
      assert.equal(list.length, 1);
      const inj = injectedContainers(list[0]);
      assert.ok(typeof inj !== "string", `the Job's pod was not meshed: ${inj}`);
      assert.equal(list[0].status.phase, "Succeeded");
    });
  },
});
