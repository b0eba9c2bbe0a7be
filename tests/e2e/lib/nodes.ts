/**
 * Two nodes for the cross-node tests. On the local cluster without a worker, worker 1 is added for the test
 * and removed afterwards (`cluster:up --nodes=2` keeps one for good); another cluster needs two Ready nodes.
 */
import { join } from "node:path";
import { ADMIN_KUBECONFIG, API_URL, NODE_NAME } from "../../cluster/config.ts";
import { binaryDirs } from "../../cluster/cluster.ts";
import { withWorker } from "../../cluster/worker.ts";
import { type Json, kjson, kubectl } from "./kube.ts";

export interface TwoNodes {
  /** A node that stays up (the control plane's, on the local cluster). */
  main: string;
  /** The other node; on the local cluster a worker the test may kill (`index` for worker.ts). */
  other: string;
  workerIndex?: number;
}

async function isLocalCluster(): Promise<boolean> {
  const r = await kubectl(["config", "view", "--minify", "-o", "jsonpath={.clusters[0].cluster.server}"]);
  return r.code === 0 && r.stdout.trim() === API_URL && Deno.uid?.() === 0;
}

/** Why the cross-node tests cannot run here, or undefined. */
export async function twoNodesUnavailable(): Promise<string | undefined> {
  if (await isLocalCluster()) return undefined;
  const ready = ((await kjson(["get", "nodes"])).items as Json[]).filter((n) =>
    n.status.conditions.some((c: Json) => c.type === "Ready" && c.status === "True")
  );
  return ready.length >= 2 ? undefined : `the cluster has ${ready.length} Ready node(s); these tests need 2`;
}

export async function withTwoNodes(fn: (nodes: TwoNodes) => Promise<void>): Promise<void> {
  if (!(await isLocalCluster())) {
    const names = ((await kjson(["get", "nodes"])).items as Json[]).map((n) => n.metadata.name as string);
    return await fn({ main: names[0], other: names[1] });
  }
  const bins = await binaryDirs();
  await withWorker((w) => fn({ main: NODE_NAME, other: w.name, workerIndex: w.index }), {
    bins,
    kubectl: join(bins.k8s, "kubectl"),
    kubeconfig: ADMIN_KUBECONFIG,
    log: (s) => console.log(`  ${s}`),
  });
}

/** Runs the named Deployments' pods on the given nodes (by hostname label). */
export function placeOn(docs: Json[], placement: Record<string, string>) {
  for (const d of docs) {
    const node = d.kind === "Deployment" ? placement[d.metadata.name] : undefined;
    if (!node) continue;
    d.spec.template.spec.nodeSelector = { "kubernetes.io/hostname": node };
  }
}
