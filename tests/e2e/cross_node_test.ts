// Cluster e2e (issue 19): meshed HTTP/1, gRPC and TCP between pods on two nodes. The demo's load clients run on
// one node and its servers on the other, with web -> api crossing back, and every hop is mTLS with the
// caller's identity on the server side. On the local cluster a worker node is added for the test when there
// is none (tests/e2e/lib/nodes.ts).
import assert from "node:assert/strict";
import { inNamespace, type Json, kjson, kubectl, requireMesh } from "./lib/kube.ts";
import { delta, fmtCounts, loadCounts, startDemoLoad } from "./lib/demo_load.ts";
import { placeOn, twoNodesUnavailable, withTwoNodes } from "./lib/nodes.ts";
import { waitForMetric } from "./lib/mesh.ts";
import { identityOf } from "./lib/workloads.ts";
import { sleep, waitFor } from "./lib/wait.ts";
import { sum } from "./lib/prom.ts";

const unavailable = await twoNodesUnavailable().catch((e) => `${e}`);
if (unavailable) console.log(`cross-node tests ignored: ${unavailable}`);

Deno.test({
  name: "e2e: meshed HTTP/1, gRPC and TCP across two nodes, mTLS with the callers' identities",
  ignore: unavailable !== undefined,
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => {
    await requireMesh();
    await withTwoNodes(async ({ main, other }) => {
      let used = "";
      await inNamespace("e2e-xnode", { inject: true }, async (ns) => {
        used = ns;
        // Clients on `other`, servers on `main`; api on `other`, so web -> api crosses back.
        const placement: Record<string, string> = {
          "web-load": other,
          "grpc-load": other,
          "tcp-load": other,
          web: main,
          grpc: main,
          tcp: main,
          api: other,
        };
        const loadPods = await startDemoLoad(ns, 5, 300, (docs) => placeOn(docs, placement));
        const all = (await kjson(["-n", ns, "get", "pods", "-l", "app.kubernetes.io/part-of=weft-demo"]))
          .items as Json[];
        const live = all.filter((p) => p.status?.phase === "Running" && !p.metadata.deletionTimestamp);
        for (const p of live) {
          assert.equal(
            p.spec.nodeName,
            placement[p.metadata.labels.app],
            `${p.metadata.name} runs on ${p.spec.nodeName}`,
          );
        }

        const before = await loadCounts(loadPods);
        await sleep(15_000);
        const during = delta(before, await loadCounts(loadPods));
        console.log(`cross-node load over 15 s: ${fmtCounts(during)}`);
        for (const [mode, c] of Object.entries(during)) {
          assert.ok(c.success >= 20, `${mode}: only ${c.success} requests succeeded across nodes`);
          assert.equal(c.failure, 0, `${mode}: ${c.failure} requests failed across nodes`);
        }

        // Each server's proxy saw its caller, from the other node, over mTLS with the caller's identity.
        const podOf = (app: string) => live.find((p) => p.metadata.labels.app === app)!;
        const hops: [server: string, client: string, family: string][] = [
          ["web", "web-load", "request_total"],
          ["api", "web", "request_total"],
          ["grpc", "grpc-load", "request_total"],
          ["tcp", "tcp-load", "tcp_open_total"],
        ];
        for (const [server, client, family] of hops) {
          const pods = live.filter((p) => p.metadata.labels.app === server);
          let seen = 0;
          for (const p of pods) {
            const match = { direction: "inbound", tls: "true", client_id: identityOf(client, ns) };
            seen += sum(await waitForMetric(p.status.podIP, family, match, 0), family, match);
          }
          assert.ok(
            seen >= 1,
            `${server} (on ${podOf(server).spec.nodeName}) saw no mTLS ${family} from ${client}`,
          );
          console.log(
            `${client} (${placement[client]}) -> ${server} (${
              placement[server]
            }): ${seen} ${family} over mTLS as ${identityOf(client, ns)}`,
          );
        }
      });
      // The worker leaves next: its pods must be gone first, or they stay Running on a deleted node until the
      // pod GC removes them, and the metrics store reports their targets down (seen failing the dashboard's
      // overview check, which runs right after this test).
      await waitFor(
        `namespace ${used} deleted`,
        async () => (await kubectl(["get", "namespace", used])).code !== 0,
        { timeoutMs: 120_000 },
      );
    });
  },
});
