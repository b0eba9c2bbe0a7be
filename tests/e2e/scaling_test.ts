// Cluster e2e: scaling a Deployment changes the endpoints the client's proxy uses. New replicas start getting
// connections (seen in their answers and in their own proxies' inbound metrics, mTLS from the client), and
// removed replicas stop getting any, with no failed request on the way down.
import assert from "node:assert/strict";
import { inNamespace, type Json, kc, requireMesh, waitForReadyPods } from "./lib/kube.ts";
import { apply } from "./lib/kube.ts";
import { proxyMetrics } from "./lib/mesh.ts";
import { sum } from "./lib/prom.ts";
import { type Answer, appManifest, byPod, fetchFrom, identityOf } from "./lib/workloads.ts";
import { waitFor } from "./lib/wait.ts";

const opts = { sanitizeOps: false, sanitizeResources: false };

Deno.test({
  name: "e2e: scaling a Deployment up and down changes the endpoints the proxies use",
  ...opts,
  fn: async () => {
    await requireMesh();
    await inNamespace("e2e-scale", { inject: true }, async (ns) => {
      await apply(ns, appManifest({ name: "backend", service: true }));
      await apply(ns, appManifest({ name: "client" }));
      const [first] = await waitForReadyPods(ns, "app=backend", 1);
      const [client] = await waitForReadyPods(ns, "app=client", 1);
      const target = `backend.${ns}.svc.cluster.local:80`;
      const clientId = identityOf("client", ns);

      assert.deepEqual(byPod(await fetchFrom(client.status.podIP, target, 5)), { [first.metadata.name]: 5 });

      await kc(["-n", ns, "scale", "deployment/backend", "--replicas=3"]);
      const three = await waitForReadyPods(ns, "app=backend", 3);
      const names = three.map((p: Json) => p.metadata.name as string).sort();
      // Each request is a new connection; within a bounded number of rounds every replica must answer.
      const seen = new Set<string>();
      let last: Answer[] = [];
      await waitFor(`answers from all of ${names.join(", ")}`, async () => {
        last = await fetchFrom(client.status.podIP, target, 15);
        const failed = last.filter((a) => !a.ok);
        assert.equal(failed.length, 0, `failed requests while scaling up: ${JSON.stringify(byPod(failed))}`);
        for (const a of last) if (a.pod) seen.add(a.pod);
        return names.every((n) => seen.has(n));
      }, { timeoutMs: 60_000, intervalMs: 1000, describe: () => `seen ${[...seen].join(", ")}` });
      for (const p of three) {
        if (p.metadata.name === first.metadata.name) continue;
        const m = await proxyMetrics(p.status.podIP);
        const n = sum(m, "tcp_open_total", { direction: "inbound", tls: "true", client_id: clientId });
        assert.ok(n >= 1, `new replica ${p.metadata.name} shows ${n} mTLS connections from ${clientId}`);
      }

      await kc(["-n", ns, "scale", "deployment/backend", "--replicas=1"]);
      const [kept] = await waitForReadyPods(ns, "app=backend", 1);
      const answers = await fetchFrom(client.status.podIP, target, 20);
      assert.deepEqual(byPod(answers), { [kept.metadata.name]: 20 }, "only the remaining replica answers");
    });
  },
});
