// Cluster e2e (issue 19), opt-in (WEFT_HA_TESTS=1; about 3 minutes): a whole worker node dies under the demo
// load. Each demo server has one replica on each node and the load clients run on the node that stays. The
// worker's kubelet, kube-proxy, containerd and containers are killed and its link goes down
// (tests/cluster/worker.ts killWorker). The test counts the requests that fail, measures when the dead node's
// endpoints leave discovery, and requires that traffic keeps flowing on the remaining node and that nothing
// fails once discovery has caught up. The worker is started again at the end.
import assert from "node:assert/strict";
import { join } from "node:path";
import { inNamespace, type Json, kjson, requireMesh } from "./lib/kube.ts";
import { delta, fmtCounts, type LoadCounts, loadCounts, startDemoLoad } from "./lib/demo_load.ts";
import { placeOn, twoNodesUnavailable, withTwoNodes } from "./lib/nodes.ts";
import { sleep } from "./lib/wait.ts";
import { proxyMetrics } from "./lib/mesh.ts";
import { binaryDirs } from "../cluster/cluster.ts";
import { ensureWorker, killWorker } from "../cluster/worker.ts";
import { ADMIN_KUBECONFIG, IMAGE_CACHE } from "../cluster/config.ts";
import { buildImages } from "../../images/build.ts";

const enabled = Deno.env.get("WEFT_HA_TESTS") === "1";
const unavailable = enabled ? await twoNodesUnavailable().catch((e) => `${e}`) : "set WEFT_HA_TESTS=1";

const SERVERS = ["web", "api", "grpc", "tcp"];

/** Ready endpoints of the demo Services that are on `node`, from the EndpointSlices. */
async function readyEndpointsOn(ns: string, node: string): Promise<number> {
  const slices = (await kjson(["-n", ns, "get", "endpointslices"])).items as Json[];
  let n = 0;
  for (const s of slices) {
    for (const e of s.endpoints ?? []) if (e.nodeName === node && e.conditions?.ready) n++;
  }
  return n;
}

async function nodeReady(node: string): Promise<boolean> {
  const n = await kjson(["get", "node", node]);
  return n.status.conditions.some((c: Json) => c.type === "Ready" && c.status === "True");
}

const total = (c: LoadCounts, k: "success" | "failure") => Object.values(c).reduce((n, v) => n + v[k], 0);

Deno.test({
  name: "e2e: a worker node dies under load: only requests caught on it fail, traffic continues on the other",
  ignore: unavailable !== undefined,
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => {
    await requireMesh();
    await withTwoNodes(async ({ main, other, workerIndex }) => {
      assert.ok(workerIndex, "node loss needs a worker of the local cluster");
      await inNamespace("e2e-nodeloss", { inject: true }, async (ns) => {
        const loadPods = await startDemoLoad(ns, 10, 900, (docs) => {
          placeOn(docs, { "web-load": main, "grpc-load": main, "tcp-load": main });
          for (const d of docs) {
            if (d.kind !== "Deployment" || !SERVERS.includes(d.metadata.name)) continue;
            d.spec.replicas = 2;
            d.spec.template.spec.topologySpreadConstraints = [{
              maxSkew: 1,
              topologyKey: "kubernetes.io/hostname",
              whenUnsatisfiable: "DoNotSchedule",
              labelSelector: { matchLabels: { app: d.metadata.name } },
            }];
          }
        });
        const pods = ((await kjson(["-n", ns, "get", "pods"])).items as Json[])
          .filter((p) => p.status?.phase === "Running" && !p.metadata.deletionTimestamp);
        for (const app of SERVERS) {
          const nodes = pods.filter((p) => p.metadata.labels.app === app).map((p) => p.spec.nodeName).sort();
          assert.deepEqual(nodes, [main, other].sort(), `${app} replicas run on ${nodes.join(", ")}`);
        }
        assert.ok(await readyEndpointsOn(ns, other) >= SERVERS.length, "no endpoint on the worker to lose");

        const bins = await binaryDirs();
        const before = await loadCounts(loadPods);
        const t0 = Date.now();
        await killWorker(workerIndex!, bins, (s) => console.log(s));
        const at = () => (Date.now() - t0) / 1000;
        let notReadyAt: number | undefined;
        let goneAt: number | undefined;
        let lastFailureAt: number | undefined;
        let prev = before;
        let atGone: LoadCounts | undefined;
        const timeline: string[] = [];
        while (at() < 180) {
          await sleep(1000);
          const now = await loadCounts(loadPods);
          const d = delta(prev, now);
          if (total(d, "failure") > 0) {
            lastFailureAt = at();
            timeline.push(`${at().toFixed(1)} s: ${fmtCounts(d)}`);
          }
          prev = now;
          if (notReadyAt === undefined && !(await nodeReady(other))) notReadyAt = at();
          if (goneAt === undefined && (await readyEndpointsOn(ns, other)) === 0) {
            goneAt = at();
            atGone = now;
          }
          // Done once discovery has dropped the node and 20 s have passed without a failure since.
          if (goneAt !== undefined && at() - Math.max(goneAt, lastFailureAt ?? 0) >= 20) break;
        }
        const during = delta(before, atGone ?? prev);
        const after = delta(atGone ?? prev, prev);
        console.log(`node loss: failures, per second with any:\n  ${timeline.join("\n  ") || "(none)"}`);
        console.log(
          `node loss: node NotReady after ${notReadyAt?.toFixed(1)} s, its endpoints out of discovery after ${
            goneAt?.toFixed(1)
          } s, last failed request at ${lastFailureAt?.toFixed(1) ?? "-"} s`,
        );
        console.log(`node loss: until its endpoints left discovery: ${fmtCounts(during)}`);
        console.log(`node loss: after: ${fmtCounts(after)}`);
        console.log(JSON.stringify({ nodeLoss: { notReadyAt, goneAt, lastFailureAt, during, after } }));
        // What the clients' proxies (and web's, which calls api) failed themselves, by error.
        const callers = ((await kjson(["-n", ns, "get", "pods"])).items as Json[])
          .filter((p) =>
            p.spec.nodeName === main && p.status?.podIP &&
            ["web-load", "grpc-load", "tcp-load", "web"].includes(p.metadata.labels.app)
          );
        for (const p of callers) {
          const errors = (await proxyMetrics(p.status.podIP).catch(() => []))
            .filter((m) => m.name === "outbound_http_errors_total" && m.value > 0)
            .map((m) => `${m.labels.error} ${m.value}`);
          console.log(
            `node loss: ${p.metadata.name} proxy outbound_http_errors_total: ${errors.join(", ") || "none"}`,
          );
        }

        assert.ok(goneAt !== undefined, "the dead node's endpoints never left discovery");
        for (const [mode, c] of Object.entries(during)) {
          assert.ok(c.success > 0, `${mode}: no request succeeded while the node was dead`);
        }
        for (const [mode, c] of Object.entries(after)) {
          assert.equal(
            c.failure,
            0,
            `${mode}: ${c.failure} requests failed after discovery dropped the node`,
          );
          assert.ok(c.success > 0, `${mode}: no traffic after discovery dropped the node`);
        }
      });
      // The worker comes back (and the caller's cleanup removes it when the test added it).
      const images = await buildImages({
        cacheDir: IMAGE_CACHE,
        corednsBinary: join((await binaryDirs()).coredns, "coredns"),
        log: () => {},
      });
      const bins = await binaryDirs();
      await ensureWorker(workerIndex!, {
        bins,
        images,
        kubectl: join(bins.k8s, "kubectl"),
        kubeconfig: ADMIN_KUBECONFIG,
        log: (s) => console.log(`  ${s}`),
      });
    });
  },
});
