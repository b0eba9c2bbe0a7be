/**
 * Leaving HA on a cluster where `--ha` placed one replica per node with *required* anti-affinity: the old pods'
 * own anti-affinity keeps any pod of their component off their nodes, so the single new pod of a non-HA
 * template finds no node until old pods are gone, and the scheduler may not look again for minutes. So before
 * such a Deployment gets its non-HA template, it is scaled to the new replica count (its current template
 * unchanged) and the surplus pods are waited out; the roll that follows has free nodes.
 */
import type { Kube } from "./kube.ts";
import type { Manifest } from "./kinds.ts";

// deno-lint-ignore no-explicit-any
type Json = any;

/** True when a live Deployment requires its pods apart from each other (HA with nodes ≥ replicas). */
export function requiresSpread(live: Json): boolean {
  const terms = live?.spec?.template?.spec?.affinity?.podAntiAffinity
    ?.requiredDuringSchedulingIgnoredDuringExecution;
  return Array.isArray(terms) && terms.length > 0;
}

/** The Deployments of `rendered` whose live objects must shrink first, with the replica count they go to. */
export function shrinkFirst(
  rendered: readonly Manifest[],
  live: ReadonlyMap<string, Json>,
): Map<string, number> {
  const out = new Map<string, number>();
  for (const m of rendered) {
    if (m.kind !== "Deployment") continue;
    const cur = live.get(m.metadata.name);
    if (!cur || !requiresSpread(cur) || requiresSpread(m)) continue;
    const want = Number((m as Json).spec?.replicas ?? 1);
    if ((cur.spec?.replicas ?? 1) > want) out.set(m.metadata.name, want);
  }
  return out;
}

/**
 * Scales each Deployment of `shrink` to its count and waits (until `deadline`) for its surplus pods to be gone.
 */
export async function releaseHaPlacement(
  kube: Kube,
  namespace: string,
  rendered: readonly Manifest[],
  deadline: number,
  progress: (msg: string) => void,
): Promise<string[]> {
  const live = new Map<string, Json>();
  for (const m of rendered) {
    if (m.kind !== "Deployment") continue;
    const cur = await kube.get(`/apis/apps/v1/namespaces/${namespace}/deployments/${m.metadata.name}`);
    if (cur) live.set(m.metadata.name, cur);
  }
  const shrink = shrinkFirst(rendered, live);
  for (const [name, replicas] of shrink) {
    await kube.json("PATCH", `/apis/apps/v1/namespaces/${namespace}/deployments/${name}`, {
      body: JSON.stringify({ spec: { replicas } }),
      contentType: "application/merge-patch+json",
    });
  }
  for (const [name, replicas] of shrink) {
    const selector = Object.entries(live.get(name).spec.selector.matchLabels ?? {})
      .map(([k, v]) => `${k}=${v}`).join(",");
    for (;;) {
      const pods = await kube.list(`/api/v1/namespaces/${namespace}/pods`, { labelSelector: selector });
      if (pods.length <= replicas) break;
      if (Date.now() > deadline) {
        throw new Error(`${name}: ${pods.length} pods still there after scaling to ${replicas} to leave HA`);
      }
      progress(`${name}: leaving HA, ${pods.length} pods → ${replicas}`);
      await new Promise((r) => setTimeout(r, 1000));
    }
  }
  return [...shrink.keys()];
}
