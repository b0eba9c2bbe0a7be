/**
 * `deno task undeploy`: removes what deploy created. Webhook configurations go first, so no API
 * request waits on a webhook that is being deleted; then the namespace (every namespaced object,
 * the certificates included), the cluster-scoped RBAC, and the CRDs deploy owns (label
 * app.kubernetes.io/managed-by=weft; a Gateway API CRD another project installed is left alone).
 * Deleting a CRD deletes every object of that kind in the cluster: `--keep-crds` keeps them.
 */
import { METRICS_DIR } from "./metrics/render_store.ts";
import { describe, type Manifest, objectPath } from "./kinds.ts";
import type { Kube } from "./kube.ts";
import type { Progress } from "./progress.ts";
import { loadDir, NAMESPACE } from "./render.ts";
import { CONTROL_PLANE_DIR, CRD_DIR } from "./deploy.ts";

export interface UndeployOptions {
  kube: Kube;
  keepCrds: boolean;
  timeoutMs: number;
  progress: Progress;
}

function sleep(ms: number) {
  return new Promise((r) => setTimeout(r, ms));
}

async function deleteAll(kube: Kube, ms: Manifest[]): Promise<{ deleted: string[]; absent: number }> {
  const deleted: string[] = [];
  let absent = 0;
  for (const m of ms) {
    if (await kube.delete(objectPath(m))) deleted.push(describe(m));
    else absent++;
  }
  return { deleted, absent };
}

function summary(r: { deleted: string[]; absent: number }): string {
  return `${r.deleted.length} deleted${r.absent ? `, ${r.absent} already absent` : ""}`;
}

async function waitGone(kube: Kube, paths: string[], deadline: number, progress: Progress, what: string) {
  for (;;) {
    const left: string[] = [];
    for (const p of paths) if (await kube.get(p)) left.push(p.split("/").pop()!);
    if (left.length === 0) return;
    if (Date.now() > deadline) throw new Error(`${what} still present after the timeout: ${left.join(", ")}`);
    progress.status(`waiting for ${what} to go: ${left.join(", ")}`);
    await sleep(1000);
  }
}

export async function undeploy(o: UndeployOptions): Promise<{ deleted: string[]; seconds: number }> {
  const t0 = Date.now();
  const { kube, progress } = o;
  const deadline = t0 + o.timeoutMs;
  const docs = await loadDir(CONTROL_PLANE_DIR);
  const all: string[] = [];
  progress.begin();

  const webhooks = await deleteAll(kube, docs.filter((d) => d.kind.endsWith("WebhookConfiguration")));
  all.push(...webhooks.deleted);
  progress.done("webhooks", summary(webhooks));

  const ns = docs.filter((d) => d.kind === "Namespace");
  const nsResult = await deleteAll(kube, ns);
  all.push(...nsResult.deleted);
  await waitGone(kube, ns.map(objectPath), deadline, progress, `namespace ${NAMESPACE}`);
  progress.done("namespace", `${summary(nsResult)} (with the control plane and its certificates)`);

  // The embedded metrics store's cluster RBAC too (its namespaced objects went with the namespace).
  const clusterScoped = [...docs, ...await loadDir(METRICS_DIR)].filter((d) =>
    d.kind === "ClusterRole" || d.kind === "ClusterRoleBinding"
  );
  const rbac = await deleteAll(kube, clusterScoped);
  all.push(...rbac.deleted);
  progress.done("cluster RBAC", summary(rbac));

  if (o.keepCrds) progress.done("CRDs", "kept (--keep-crds)");
  else {
    const ours: Manifest[] = [];
    let foreign = 0;
    for (const crd of await loadDir(CRD_DIR)) {
      const live = await kube.get<Manifest>(objectPath(crd));
      if (!live) continue;
      if (live.metadata.labels?.["app.kubernetes.io/managed-by"] === "weft") ours.push(crd);
      else foreign++;
    }
    const crds = await deleteAll(kube, ours);
    all.push(...crds.deleted);
    await waitGone(kube, ours.map(objectPath), deadline, progress, "CRDs");
    progress.done(
      "CRDs",
      `${summary(crds)}${foreign ? `, ${foreign} installed by another owner left alone` : ""}`,
    );
  }
  const seconds = (Date.now() - t0) / 1000;
  progress.note(`undeployed in ${seconds.toFixed(1)}s: ${all.length} objects deleted`);
  return { deleted: all, seconds };
}
