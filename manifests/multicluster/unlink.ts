/**
 * `weft multicluster unlink`: removes a link from the source cluster: its Link and service mirror first (so
 * nothing recreates mirrors), then both credentials Secrets, every mirror Service and Endpoints labelled with the
 * cluster's name (all namespaces), and the cluster's entries in federated Services' remote-discovery annotation
 * (a federated Service left with neither remote nor local members is deleted).
 */
import { Annotations, Labels } from "../../control/multicluster/link.ts";
import { describe, type Manifest, objectPath } from "../kinds.ts";
import type { Kube } from "../kube.ts";
import { NAMESPACE } from "../render.ts";
import { MC_NAMESPACE } from "./install.ts";
import { credentialsSecretName } from "./link.ts";
import { serviceMirrorName } from "./service_mirror.ts";

interface Obj {
  metadata: { name: string; namespace?: string; annotations?: Record<string, string> };
}

export type FederatedChange =
  | { action: "keep" }
  | { action: "patch"; remoteDiscovery: string | null }
  | { action: "delete" };

/** What unlinking `cluster` does to a federated Service with these annotations (pure). */
export function federatedChange(
  annotations: Record<string, string> | undefined,
  cluster: string,
): FederatedChange {
  const remote = annotations?.[Annotations.remoteDiscovery];
  if (remote === undefined) return { action: "keep" };
  const members = remote.split(",").map((s) => s.trim()).filter((s) => s !== "");
  const left = members.filter((m) => m.slice(m.lastIndexOf("@") + 1) !== cluster);
  if (left.length === members.length) return { action: "keep" };
  if (left.length === 0 && !annotations?.[Annotations.localDiscovery]) return { action: "delete" };
  return { action: "patch", remoteDiscovery: left.length ? left.join(",") : null };
}

/**
 * The service mirror's pods may still be reconciling while they shut down: mirrors are deleted only once they are
 * gone (bounded; a pod stuck terminating does not hold unlink forever).
 */
async function waitPodsGone(kube: Kube, objects: Manifest[], waitMs: number): Promise<void> {
  const d = objects.find((m) => m.kind === "Deployment") as
    | (Manifest & { spec?: { selector?: { matchLabels?: Record<string, string> } } })
    | undefined;
  const labels = Object.entries(d?.spec?.selector?.matchLabels ?? {}).map(([k, v]) => `${k}=${v}`).join(",");
  if (!d || !labels) return;
  const deadline = Date.now() + waitMs;
  while (Date.now() < deadline) {
    const pods = await kube.list(`/api/v1/namespaces/${d.metadata.namespace}/pods`, {
      labelSelector: labels,
    });
    if (pods.length === 0) return;
    await new Promise((r) => setTimeout(r, 500));
  }
}

export interface UnlinkResult {
  deleted: string[];
  patched: string[];
  ms: number;
}

export async function unlink(
  kube: Kube,
  clusterName: string,
  serviceMirrorObjects: Manifest[],
  log: (line: string) => void = () => {},
  waitMs = 30_000,
): Promise<UnlinkResult> {
  const t0 = Date.now();
  const deleted: string[] = [];
  const patched: string[] = [];
  const del = async (path: string, what: string) => {
    if (await kube.delete(path)) {
      deleted.push(what);
      log(`deleted ${what}`);
    }
  };
  await del(
    `/apis/multicluster.linkerd.io/v1alpha2/namespaces/${MC_NAMESPACE}/links/${clusterName}`,
    `Link ${clusterName}`,
  )
    .catch((e) => {
      // No Link CRD at all: nothing was linked through it.
      if (!/HTTP 404/.test((e as Error).message)) throw e;
    });
  const mirrorDeployment = `/apis/apps/v1/namespaces/${MC_NAMESPACE}/deployments/${
    serviceMirrorName(clusterName)
  }`;
  const paths = new Map<string, string>([[
    mirrorDeployment,
    `Deployment ${MC_NAMESPACE}/${serviceMirrorName(clusterName)}`,
  ]]);
  for (const m of serviceMirrorObjects) paths.set(objectPath(m), describe(m));
  for (const ns of [MC_NAMESPACE, NAMESPACE]) {
    paths.set(
      `/api/v1/namespaces/${ns}/secrets/${credentialsSecretName(clusterName)}`,
      `Secret ${ns}/${credentialsSecretName(clusterName)}`,
    );
  }
  for (const [path, what] of paths) await del(path, what);
  await waitPodsGone(kube, serviceMirrorObjects, waitMs);

  const selector = { labelSelector: `${Labels.clusterName}=${clusterName}` };
  for (const kind of ["services", "endpoints"] as const) {
    for (const o of await kube.list<Obj>(`/api/v1/${kind}`, selector)) {
      // A federated Service is shared by every link: only its entry goes (below).
      if (o.metadata.annotations?.[Annotations.remoteDiscovery] !== undefined) continue;
      await del(
        `/api/v1/namespaces/${o.metadata.namespace}/${kind}/${o.metadata.name}`,
        `${kind === "services" ? "Service" : "Endpoints"} ${o.metadata.namespace}/${o.metadata.name}`,
      );
    }
  }
  for (const svc of await kube.list<Obj>("/api/v1/services")) {
    const change = federatedChange(svc.metadata.annotations, clusterName);
    const path = `/api/v1/namespaces/${svc.metadata.namespace}/services/${svc.metadata.name}`;
    const what = `Service ${svc.metadata.namespace}/${svc.metadata.name}`;
    if (change.action === "delete") await del(path, what);
    if (change.action === "patch") {
      await kube.json("PATCH", path, {
        body: JSON.stringify({
          metadata: { annotations: { [Annotations.remoteDiscovery]: change.remoteDiscovery } },
        }),
        contentType: "application/merge-patch+json",
      });
      patched.push(what);
      log(`patched ${what}: ${Annotations.remoteDiscovery} ${change.remoteDiscovery ?? "removed"}`);
    }
  }
  return { deleted, patched, ms: Date.now() - t0 };
}
