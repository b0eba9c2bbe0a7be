/**
 * What the Kubernetes API says about the objects a view shows: which exist, their pods, and how many
 * of those carry the proxy (MESHED, counted as Linkerd counts it: pods not Failed/Succeeded, meshed
 * when a `linkerd-proxy` container or native sidecar is present).
 */
import { selects as selectsLabels } from "../control/k8s/label_selector.ts";
import type { Kube } from "../manifests/kube.ts";
import { type Kind, KINDS, listPath } from "./kinds.ts";

export const PROXY_CONTAINER = "linkerd-proxy";

export interface LabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: { key: string; operator: string; values?: string[] }[];
}

export interface PodInfo {
  namespace: string;
  name: string;
  labels: Record<string, string>;
  serviceAccount: string;
  ip?: string;
  meshed: boolean;
  phase: string;
  owners: { kind: string; name: string }[];
}

export interface ObjectInfo {
  namespace: string;
  name: string;
  /** How the object picks its pods; a namespace or a pod has none. */
  selector?: LabelSelector;
  /** A Service's `spec.selector` (a plain map), kept apart from workload selectors. */
  serviceSelector?: Record<string, string>;
  clusterIPs?: string[];
}

// deno-lint-ignore no-explicit-any
type Json = any;

export function podInfo(p: Json): PodInfo {
  const containers = [...(p.spec?.containers ?? []), ...(p.spec?.initContainers ?? [])];
  return {
    namespace: p.metadata?.namespace ?? "",
    name: p.metadata?.name ?? "",
    labels: p.metadata?.labels ?? {},
    serviceAccount: p.spec?.serviceAccountName || "default",
    ip: p.status?.podIP,
    meshed: containers.some((c: Json) => c?.name === PROXY_CONTAINER),
    phase: p.status?.phase ?? "Unknown",
    owners: (p.metadata?.ownerReferences ?? []).map((o: Json) => ({ kind: o.kind, name: o.name })),
  };
}

export function objectInfo(o: Json): ObjectInfo {
  const spec = o.spec ?? {};
  const info: ObjectInfo = { namespace: o.metadata?.namespace ?? "", name: o.metadata?.name ?? "" };
  if (o.kind === "Service" || (spec.ports && spec.clusterIP !== undefined)) {
    if (spec.selector) info.serviceSelector = spec.selector;
    info.clusterIPs = (spec.clusterIPs ?? [spec.clusterIP]).filter((x: string) => x && x !== "None");
  } else if (spec.selector) info.selector = spec.selector;
  return info;
}

/** Label selector semantics of the API, as every control-plane component applies them. */
export function selects(sel: LabelSelector, labels: Record<string, string>): boolean {
  return selectsLabels(sel, labels);
}

/** The pods of an object of a kind (pods not Failed/Succeeded, as MESHED counts them). */
export function podsOf(kind: Kind, o: ObjectInfo, pods: readonly PodInfo[]): PodInfo[] {
  const live = pods.filter((p) => p.phase !== "Failed" && p.phase !== "Succeeded");
  switch (kind.label) {
    case "namespace":
      return live.filter((p) => p.namespace === o.name);
    case "pod":
      return live.filter((p) => p.namespace === o.namespace && p.name === o.name);
    case "service":
      return o.serviceSelector && Object.keys(o.serviceSelector).length > 0
        ? live.filter((p) =>
          p.namespace === o.namespace && selects({ matchLabels: o.serviceSelector }, p.labels)
        )
        : [];
    default:
      return o.selector
        ? live.filter((p) => p.namespace === o.namespace && selects(o.selector!, p.labels))
        : [];
  }
}

export function meshedCount(pods: readonly PodInfo[]): { meshed: number; total: number } {
  return { meshed: pods.filter((p) => p.meshed).length, total: pods.length };
}

/** Lists a kind and the pods in a namespace (or all), in parallel. */
export async function listWithPods(
  kube: Kube,
  kind: Kind,
  namespace: string | undefined,
): Promise<{ objects: ObjectInfo[]; pods: PodInfo[] }> {
  const podKind = KINDS.find((k) => k.label === "pod")!;
  const [objects, pods] = await Promise.all([
    kube.list<Json>(listPath(kind, namespace)),
    kube.list<Json>(listPath(podKind, kind.label === "namespace" ? undefined : namespace)),
  ]);
  return { objects: objects.map(objectInfo), pods: pods.map(podInfo) };
}

/**
 * The workload a pod belongs to, as the proxies' series name it: Deployment through its ReplicaSet
 * (the `pod-template-hash` suffix removed), else the direct owner, else the pod itself.
 */
export function workloadOf(p: PodInfo): { kind: string; name: string } {
  const o = p.owners[0];
  if (!o) return { kind: "pod", name: p.name };
  if (o.kind === "ReplicaSet") {
    const hash = p.labels["pod-template-hash"];
    if (hash && o.name.endsWith(`-${hash}`)) {
      return { kind: "deployment", name: o.name.slice(0, -hash.length - 1) };
    }
    return { kind: "replicaset", name: o.name };
  }
  return { kind: o.kind.toLowerCase(), name: o.name };
}
