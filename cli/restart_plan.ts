/**
 * The pure half of `weft restart-proxies` (issue 19): its flags, which workloads it restarts (Deployments,
 * StatefulSets and DaemonSets whose live pods carry the proxy), how they are cut into batches, the patch
 * (`kubectl rollout restart`'s), and when a rollout has finished (kubectl rollout status's rules).
 */
import { PROXY_CONTAINER } from "../control/injector/decision.ts";
import { UsageError } from "./context.ts";
import { type FlagSpec, type ParsedFlags, parseWindow } from "./flags.ts";

// deno-lint-ignore no-explicit-any
type Json = any;

export const RESTART_FLAGS: readonly FlagSpec[] = [
  { name: "namespace", short: "n", help: "namespace of the workloads", default: "the context's namespace" },
  { name: "all-namespaces", short: "A", bool: true, help: "workloads of every namespace" },
  {
    name: "selector",
    short: "l",
    help: "only workloads whose own labels match (kubectl's syntax: app=web, 'app in (web,api)')",
  },
  {
    name: "batch",
    help: "workloads restarted together; the next batch starts when these rolled out",
    default: "1",
  },
  { name: "timeout", help: "how long one batch may take to roll out (30s, 5m, 1h)", default: "5m" },
  { name: "dry-run", bool: true, help: "list the batches, restart nothing" },
  { name: "kubeconfig", help: "kubeconfig file", default: "$KUBECONFIG, else ~/.kube/config" },
];

export interface RestartOptions {
  /** undefined: every namespace (-A). */
  namespace?: string;
  selector?: string;
  batch: number;
  timeoutMs: number;
  dryRun: boolean;
}

/** The options from parsed flags; `contextNamespace` is used when neither -n nor -A is given. */
export function restartOptions(f: ParsedFlags, contextNamespace: () => string): RestartOptions {
  if (f.positionals.length > 0) throw new UsageError(`unexpected argument "${f.positionals[0]}"`);
  const all = f.bools.has("all-namespaces");
  const ns = f.values.get("namespace");
  if (all && ns !== undefined) throw new UsageError("-n and --all-namespaces exclude each other");
  if (ns === "") throw new UsageError("-n: the namespace is empty");
  const batchText = f.values.get("batch") ?? "1";
  if (!/^[1-9]\d*$/.test(batchText)) {
    throw new UsageError(`--batch: "${batchText}" is not a whole number of workloads (1 or more)`);
  }
  return {
    namespace: all ? undefined : ns ?? contextNamespace(),
    selector: f.values.get("selector") || undefined,
    batch: Number(batchText),
    timeoutMs: parseWindow(f.values.get("timeout") ?? "5m", "--timeout") * 1000,
    dryRun: f.bools.has("dry-run"),
  };
}

export type WorkloadKind = "Deployment" | "StatefulSet" | "DaemonSet";
export const WORKLOAD_KINDS: readonly WorkloadKind[] = ["Deployment", "StatefulSet", "DaemonSet"];

/** The API collection of a kind (`deployments`). */
export const plural = (k: WorkloadKind) => `${k.toLowerCase()}s`;

export interface WorkloadRef {
  kind: WorkloadKind;
  namespace: string;
  name: string;
}

export const refText = (w: WorkloadRef) => `${w.kind.toLowerCase()}/${w.name}`;
export const fullRef = (w: WorkloadRef) => `${w.namespace}/${refText(w)}`;

const live = (p: Json) =>
  !p.metadata?.deletionTimestamp && p.status?.phase !== "Succeeded" && p.status?.phase !== "Failed";

const meshedPod = (p: Json) =>
  [...(p.spec?.initContainers ?? []), ...(p.spec?.containers ?? [])].some((c: Json) =>
    c?.name === PROXY_CONTAINER
  );

function controller(o: Json): { kind: string; name: string } | undefined {
  return (o.metadata?.ownerReferences ?? []).find((r: Json) => r.controller) ??
    o.metadata?.ownerReferences?.[0];
}

export interface Selection {
  /** Sorted by namespace, kind, name. */
  selected: WorkloadRef[];
  /** Meshed workloads left out, and why. */
  skipped: { workload: WorkloadRef; why: string }[];
}

/**
 * The workloads (of `workloads`, already filtered by namespace and selector) with at least one live pod that
 * carries the proxy, found through the pods' owners (a Deployment's pods through their ReplicaSet). The
 * control plane is left to `deploy`; a rollout that restartedAt cannot start (OnDelete, a paused Deployment)
 * is left out with its reason rather than waited for.
 */
export function selectMeshed(
  workloads: { kind: WorkloadKind; items: Json[] }[],
  replicaSets: Json[],
  pods: Json[],
  controlPlaneNamespace: string,
): Selection {
  const rsOwner = new Map<string, string>();
  for (const rs of replicaSets) {
    const o = controller(rs);
    if (o?.kind === "Deployment") rsOwner.set(`${rs.metadata.namespace}/${rs.metadata.name}`, o.name);
  }
  const meshed = new Set<string>();
  for (const p of pods.filter((p) => live(p) && meshedPod(p))) {
    const o = controller(p);
    const ns = p.metadata.namespace;
    if (o?.kind === "ReplicaSet") {
      const d = rsOwner.get(`${ns}/${o.name}`);
      if (d) meshed.add(`Deployment ${ns}/${d}`);
    } else if (o?.kind === "StatefulSet" || o?.kind === "DaemonSet") meshed.add(`${o.kind} ${ns}/${o.name}`);
  }
  const out: Selection = { selected: [], skipped: [] };
  for (const { kind, items } of workloads) {
    for (const w of items) {
      const ref: WorkloadRef = { kind, namespace: w.metadata.namespace, name: w.metadata.name };
      if (!meshed.has(`${kind} ${ref.namespace}/${ref.name}`)) continue;
      const why = ref.namespace === controlPlaneNamespace ||
          w.spec?.template?.metadata?.labels?.["linkerd.io/control-plane-component"] !== undefined
        ? "the control plane: `deploy` rolls it"
        : kind !== "Deployment" && w.spec?.updateStrategy?.type === "OnDelete"
        ? "updateStrategy OnDelete: its pods roll only when deleted"
        : kind === "Deployment" && w.spec?.paused
        ? "its rollout is paused (kubectl rollout resume)"
        : undefined;
      if (why) out.skipped.push({ workload: ref, why });
      else out.selected.push(ref);
    }
  }
  const key = (w: WorkloadRef) => `${w.namespace}\0${WORKLOAD_KINDS.indexOf(w.kind)}\0${w.name}`;
  out.selected.sort((a, b) => key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0);
  return out;
}

/** `items` cut into consecutive batches of `size` (the last one may be smaller). */
export function batches<T>(items: readonly T[], size: number): T[][] {
  if (!Number.isInteger(size) || size < 1) throw new RangeError(`batch size ${size}`);
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

export const RESTARTED_AT = "kubectl.kubernetes.io/restartedAt";

/** The strategic-merge patch `kubectl rollout restart` sends: a new pod-template annotation, so the pods roll. */
export function restartPatch(now: Date): string {
  const at = now.toISOString().replace(/\.\d+Z$/, "Z");
  return JSON.stringify({ spec: { template: { metadata: { annotations: { [RESTARTED_AT]: at } } } } });
}

export type Rollout = { state: "done" } | { state: "waiting"; why: string } | {
  state: "failed";
  why: string;
};

/** Whether a workload's rollout has finished, as `kubectl rollout status` decides it. */
export function rolloutState(kind: WorkloadKind, o: Json): Rollout {
  const s = o.status ?? {};
  const generation = o.metadata?.generation ?? 0;
  if (!s.observedGeneration || s.observedGeneration < generation) {
    return { state: "waiting", why: "the spec update is not observed yet" };
  }
  const want = o.spec?.replicas ?? 1;
  switch (kind) {
    case "Deployment": {
      const stuck = (s.conditions ?? []).find((c: Json) =>
        c.type === "Progressing" && c.reason === "ProgressDeadlineExceeded"
      );
      if (stuck) {
        return { state: "failed", why: `exceeded its progress deadline: ${stuck.message ?? ""}`.trim() };
      }
      const updated = s.updatedReplicas ?? 0;
      if (updated < want) return { state: "waiting", why: `${updated} of ${want} new replicas updated` };
      if ((s.replicas ?? 0) > updated) {
        return { state: "waiting", why: `${s.replicas - updated} old replicas pending termination` };
      }
      if ((s.availableReplicas ?? 0) < updated) {
        return {
          state: "waiting",
          why: `${s.availableReplicas ?? 0} of ${updated} updated replicas available`,
        };
      }
      return { state: "done" };
    }
    case "StatefulSet": {
      if ((s.readyReplicas ?? 0) < want) {
        return { state: "waiting", why: `${s.readyReplicas ?? 0} of ${want} pods ready` };
      }
      const partition = o.spec?.updateStrategy?.rollingUpdate?.partition ?? 0;
      if (partition > 0) {
        const target = Math.max(0, want - partition);
        return (s.updatedReplicas ?? 0) < target
          ? {
            state: "waiting",
            why: `${s.updatedReplicas ?? 0} of ${target} pods updated (partition ${partition})`,
          }
          : { state: "done" };
      }
      if (s.updateRevision !== s.currentRevision) {
        return { state: "waiting", why: `${s.updatedReplicas ?? 0} of ${want} pods updated` };
      }
      return { state: "done" };
    }
    case "DaemonSet": {
      const desired = s.desiredNumberScheduled ?? 0;
      if ((s.updatedNumberScheduled ?? 0) < desired) {
        return { state: "waiting", why: `${s.updatedNumberScheduled ?? 0} of ${desired} pods updated` };
      }
      if ((s.numberAvailable ?? 0) < desired) {
        return { state: "waiting", why: `${s.numberAvailable ?? 0} of ${desired} updated pods available` };
      }
      return { state: "done" };
    }
  }
}
