/**
 * The Kubernetes objects diagnostics work on: `pod/NAME`, `deploy/NAME` (one of its ready pods),
 * `svc/NAME`, as kubectl and Linkerd's CLI spell them. Reading goes through `KubeReader` so the
 * choice of a pod is tested without a cluster.
 */
import { AppsV1Api, CoreV1Api, type KubeConfig, type V1Pod, type V1Service } from "@kubernetes/client-node";
import { UsageError } from "../context.ts";

export type ResourceKind = "pod" | "deployment" | "service";
export interface ResourceRef {
  kind: ResourceKind;
  name: string;
}

const KINDS: Record<string, ResourceKind> = {
  po: "pod",
  pod: "pod",
  pods: "pod",
  deploy: "deployment",
  deployment: "deployment",
  deployments: "deployment",
  svc: "service",
  service: "service",
  services: "service",
};

/** `KIND/NAME`, or a bare NAME taken as `defaultKind`. */
export function parseResource(text: string, defaultKind: ResourceKind = "pod"): ResourceRef {
  const slash = text.indexOf("/");
  const kindText = slash < 0 ? undefined : text.slice(0, slash).toLowerCase();
  const name = slash < 0 ? text : text.slice(slash + 1);
  const kind = kindText === undefined ? defaultKind : KINDS[kindText];
  if (!kind) {
    throw new UsageError(
      `unknown resource kind "${kindText}" in "${text}": use pod/NAME, deploy/NAME or svc/NAME`,
    );
  }
  if (!/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/.test(name)) {
    throw new UsageError(`"${name}" in "${text}" is not a Kubernetes object name`);
  }
  return { kind, name };
}

/** The Service a cluster name stands for: `NAME.NS.svc` or `NAME.NS.svc.<cluster domain>`. */
export function serviceOfHost(host: string): { name: string; namespace: string } | undefined {
  const m = host.replace(/\.$/, "").match(
    /^([a-z0-9]([-a-z0-9]*[a-z0-9])?)\.([a-z0-9]([-a-z0-9]*[a-z0-9])?)\.svc(\..+)?$/,
  );
  return m ? { name: m[1], namespace: m[3] } : undefined;
}

export interface KubeReader {
  pod(ns: string, name: string): Promise<V1Pod>;
  pods(ns: string, labelSelector: string): Promise<V1Pod[]>;
  deploymentSelector(ns: string, name: string): Promise<Record<string, string>>;
  service(ns: string, name: string): Promise<V1Service>;
}

export function kubeReader(kc: KubeConfig): KubeReader {
  const core = kc.makeApiClient(CoreV1Api);
  const apps = kc.makeApiClient(AppsV1Api);
  return {
    pod: (namespace, name) => core.readNamespacedPod({ namespace, name }),
    pods: async (namespace, labelSelector) =>
      (await core.listNamespacedPod({ namespace, labelSelector })).items,
    deploymentSelector: async (namespace, name) => {
      const d = await apps.readNamespacedDeployment({ namespace, name });
      const sel = d.spec?.selector;
      if (sel?.matchExpressions?.length) {
        throw new Error(
          `deployment ${namespace}/${name} selects pods with matchExpressions; name a pod instead`,
        );
      }
      return sel?.matchLabels ?? {};
    },
    service: (namespace, name) => core.readNamespacedService({ namespace, name }),
  };
}

export function labelSelector(labels: Record<string, string>): string {
  return Object.entries(labels).map(([k, v]) => `${k}=${v}`).join(",");
}

function isReady(p: V1Pod): boolean {
  return p.status?.phase === "Running" &&
    (p.status?.conditions ?? []).some((c) => c.type === "Ready" && c.status === "True") &&
    !p.metadata?.deletionTimestamp;
}

/** The first ready pod by name (a stable choice across runs); an error says why there is none. */
export function pickReadyPod(pods: V1Pod[], what: string): V1Pod {
  const ready = pods.filter(isReady).sort((a, b) =>
    (a.metadata?.name ?? "").localeCompare(b.metadata?.name ?? "")
  );
  if (ready.length === 0) {
    throw new Error(
      pods.length === 0 ? `${what} has no pods` : `${what} has no ready pod (${pods.length} not ready)`,
    );
  }
  return ready[0];
}

/** Every ready pod a deployment runs, or the one pod named. */
export async function resolvePods(k: KubeReader, ns: string, ref: ResourceRef): Promise<V1Pod[]> {
  if (ref.kind !== "deployment") return [await resolvePod(k, ns, ref)];
  const sel = await k.deploymentSelector(ns, ref.name).catch((e) => {
    throw new Error(`cannot read deployment ${ns}/${ref.name}: ${apiMessage(e)}`);
  });
  const pods = await k.pods(ns, labelSelector(sel));
  pickReadyPod(pods, `deployment ${ns}/${ref.name}`);
  return pods.filter(isReady).sort((a, b) => (a.metadata?.name ?? "").localeCompare(b.metadata?.name ?? ""));
}

/** The pod a pod or deployment reference stands for. */
export async function resolvePod(k: KubeReader, ns: string, ref: ResourceRef): Promise<V1Pod> {
  switch (ref.kind) {
    case "pod": {
      const p = await k.pod(ns, ref.name).catch((e) => {
        throw new Error(`cannot read pod ${ns}/${ref.name}: ${apiMessage(e)}`);
      });
      return p;
    }
    case "deployment": {
      const sel = await k.deploymentSelector(ns, ref.name).catch((e) => {
        throw new Error(`cannot read deployment ${ns}/${ref.name}: ${apiMessage(e)}`);
      });
      return pickReadyPod(await k.pods(ns, labelSelector(sel)), `deployment ${ns}/${ref.name}`);
    }
    case "service":
      throw new Error(`${ref.kind}/${ref.name} does not run a proxy: name a pod or a deployment`);
  }
}

/** The API server's own message for a failed call (client-node wraps it in its body). */
export function apiMessage(e: unknown): string {
  const err = e as { code?: number; body?: unknown; message?: string };
  if (typeof err?.body === "string") {
    try {
      const b = JSON.parse(err.body);
      if (typeof b?.message === "string") return b.message;
    } catch { /* not JSON: fall through to the error's own message */ }
  }
  return err?.message ?? String(e);
}
