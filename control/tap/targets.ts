/**
 * Which pods a tap reaches: the pods of the target resource that run a proxy of this control plane and
 * have an address. A Deployment's pods are found by their ReplicaSet owner, whose name is the
 * Deployment's name and the pod's `pod-template-hash` (how the Deployment controller names them), so
 * the component needs no access to Deployments or ReplicaSets; a StatefulSet's, DaemonSet's or Job's pods
 * by their controller owner reference, which names it.
 */
import type { ResourceRef } from "./request.ts";

export interface PodLike {
  metadata: {
    name?: string;
    namespace?: string;
    labels?: Record<string, string>;
    ownerReferences?: { kind?: string; name?: string; controller?: boolean }[];
  };
  spec?: { hostNetwork?: boolean };
  status?: { phase?: string; podIP?: string };
}

export interface TapTarget {
  namespace: string;
  name: string;
  ip: string;
}

const CONTROL_PLANE_NS_LABEL = "linkerd.io/control-plane-ns";

const OWNER_KIND: Partial<Record<ResourceRef["kind"], string>> = {
  statefulset: "StatefulSet",
  daemonset: "DaemonSet",
  job: "Job",
};

function belongsTo(pod: PodLike, ref: ResourceRef): boolean {
  if (pod.metadata.namespace !== ref.namespace) return false;
  switch (ref.kind) {
    case "namespace":
      return true;
    case "pod":
      return pod.metadata.name === ref.name;
    case "deployment": {
      const hash = pod.metadata.labels?.["pod-template-hash"];
      const owner = pod.metadata.ownerReferences?.find((o) => o.controller && o.kind === "ReplicaSet");
      return hash !== undefined && owner?.name === `${ref.name}-${hash}`;
    }
    default: {
      // StatefulSets, DaemonSets and Jobs own their pods directly.
      const owner = pod.metadata.ownerReferences?.find((o) =>
        o.controller && o.kind === OWNER_KIND[ref.kind]
      );
      return owner !== undefined && owner.name === ref.name;
    }
  }
}

export type Selection =
  | { kind: "ok"; targets: TapTarget[] }
  | { kind: "none"; message: string };

/** The tappable pods of `ref`, or why there are none (the API answers 404 with it). */
export function selectTargets(pods: readonly PodLike[], ref: ResourceRef, controlPlaneNs: string): Selection {
  const of = pods.filter((p) => belongsTo(p, ref));
  const what = ref.kind === "namespace"
    ? `namespace ${ref.namespace}`
    : `${ref.kind} ${ref.namespace}/${ref.name}`;
  if (of.length === 0) return { kind: "none", message: `no pods found for ${what}` };
  const running = of.filter((p) => p.status?.phase === "Running" && p.status.podIP && !p.spec?.hostNetwork);
  const meshed = running.filter((p) => p.metadata.labels?.[CONTROL_PLANE_NS_LABEL] === controlPlaneNs);
  if (meshed.length === 0) {
    return {
      kind: "none",
      message: running.length === 0
        ? `no running pods with an address for ${what} (${of.length} found)`
        : `no pods of ${what} are meshed by the control plane in ${controlPlaneNs} (${running.length} running)`,
    };
  }
  return {
    kind: "ok",
    targets: meshed.map((p) => ({
      namespace: p.metadata.namespace!,
      name: p.metadata.name ?? "",
      ip: p.status!.podIP!,
    }))
      .sort((a, b) => a.name.localeCompare(b.name)),
  };
}
