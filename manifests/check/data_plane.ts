/**
 * The `data plane` checks: every meshed pod's proxy is ready; pods in injected namespaces without a
 * proxy (created while the injector was down) and pods stuck Terminating are warnings.
 */
import { PROXY_CONTAINER } from "../../control/injector/decision.ts";
import { Annotations } from "../../proto/annotations.ts";
import { NAMESPACE } from "../render.ts";
import { formatStuck, stuckTerminating } from "../stuck_terminating.ts";
import { type Obj, podContainers } from "./objects.ts";
import { type CheckContext, type CheckResult, result } from "./result.ts";

const GROUP = "data plane";

/** Namespaces whose new pods the injector meshes (the control plane's own is not one of them). */
export function injectedNamespaces(namespaces: Obj[]): Obj[] {
  return namespaces.filter((n) =>
    n.metadata.annotations?.[Annotations.inject] === "enabled" && n.metadata.name !== NAMESPACE &&
    n.metadata.labels?.[Annotations.admissionWebhooks] !== "disabled" && !n.metadata.deletionTimestamp
  );
}

/** Running meshed pods outside the control plane: those whose proxy is not ready, and how many there are. */
export function unreadyProxies(meshed: Obj[]): { running: number; unready: Obj[] } {
  const running = meshed.filter((p) =>
    p.metadata.namespace !== NAMESPACE && p.status?.phase === "Running" && !p.metadata.deletionTimestamp
  );
  const unready = running.filter((p) => {
    const s = podContainers(p).status.find((c: Obj) => c.name === PROXY_CONTAINER);
    return !s?.ready;
  });
  return { running: running.length, unready };
}

/** Running pods that should have a proxy and have none (host-network and opted-out pods are fine). */
export function unmeshedPods(pods: Obj[]): Obj[] {
  return pods.filter((p) =>
    p.status?.phase === "Running" && !p.spec?.hostNetwork &&
    p.metadata.annotations?.[Annotations.inject] !== "disabled" &&
    !podContainers(p).spec.some((c: Obj) => c.name === PROXY_CONTAINER)
  );
}

const podName = (p: Obj) => `${p.metadata.namespace}/${p.metadata.name}`;

export async function checkProxies(ctx: CheckContext): Promise<CheckResult> {
  const meshed = await ctx.kube.list<Obj>("/api/v1/pods", {
    labelSelector: `linkerd.io/control-plane-ns=${NAMESPACE}`,
  });
  const { running, unready } = unreadyProxies(meshed);
  return result(
    GROUP,
    "proxies",
    unready.length ? "fail" : "ok",
    unready.length
      ? `proxy not ready in ${unready.map(podName).join(", ")}`
      : `${running} meshed pods outside ${NAMESPACE}, every proxy ready`,
  );
}

export async function checkTerminatingPods(ctx: CheckContext): Promise<CheckResult> {
  // Cluster-wide: a pod that cannot finish terminating anywhere (e.g. a network namespace the runtime cannot
  // remove) holds its workload's rollout, its namespace's deletion, and the node's resources.
  const stuck = stuckTerminating(
    await ctx.kube.list<Obj>("/api/v1/pods"),
    await ctx.kube.list<Obj>("/api/v1/events", { fieldSelector: "involvedObject.kind=Pod,type=Warning" }),
    ctx.now,
  );
  return result(
    GROUP,
    "terminating pods",
    stuck.length ? "warn" : "ok",
    stuck.length
      ? `stuck Terminating past their grace period: ${stuck.map(formatStuck).join("; ")}`
      : "no pod Terminating past its grace period",
  );
}

/** `injected`: the namespaces from `injectedNamespaces`. */
export async function checkInjectedNamespaces(ctx: CheckContext, injected: Obj[]): Promise<CheckResult> {
  const missing: string[] = [];
  for (const n of injected) {
    const pods = await ctx.kube.list<Obj>(`/api/v1/namespaces/${n.metadata.name}/pods`);
    missing.push(...unmeshedPods(pods).map((p) => `${n.metadata.name}/${p.metadata.name}`));
  }
  return result(
    GROUP,
    "injected namespaces",
    missing.length ? "warn" : "ok",
    missing.length
      ? `running without a proxy (created while the injector was unreachable? restart them): ${
        missing.join(", ")
      }`
      : `${injected.length} namespaces annotated ${Annotations.inject}=enabled, every running pod meshed`,
  );
}
