/**
 * The Overview's data: `mesh:check`'s checks that a read-only ServiceAccount can run (the same functions,
 * from manifests/check/), the ones it cannot and why, the control-plane pods, the trust anchors' and the
 * issuer's expiry, and meshed vs unmeshed pods per namespace.
 *
 * The certificates come from the trust-roots ConfigMap (the anchors, and the issuers identity publishes
 * there), never from the issuer's Secret: reading that would hand every viewer the issuer's private key.
 */
import { podInfo } from "../../cli/kube_objects.ts";
import { certInfos } from "../identity/cert_info.ts";
import { ISSUERS_KEY, TRUST_ANCHORS_KEY } from "../identity/trust_roots.ts";
import { CONTROL_PLANE_DIR } from "../../manifests/deploy.ts";
import type { Kube } from "../../manifests/kube.ts";
import { loadShippedDir, NAMESPACE, TRUST_ROOTS_CONFIGMAP } from "../../manifests/render.ts";
import { checkApiServer, checkCrds, checkNamespace } from "../../manifests/check/cluster.ts";
import { checkDeployment, livePods } from "../../manifests/check/control_plane.ts";
import {
  checkInjectedNamespaces,
  checkProxies,
  checkTerminatingPods,
  injectedNamespaces,
} from "../../manifests/check/data_plane.ts";
import { checkMetricsStore } from "../../manifests/check/metrics_store.ts";
import { isPodReady, type Obj } from "../../manifests/check/objects.ts";
import { type CheckContext, type CheckResult, guarded } from "../../manifests/check/result.ts";

/** `mesh:check`'s checks the dashboard leaves out, and the permission each would need. */
export const SKIPPED_CHECKS: readonly { group: string; name: string; why: string }[] = [
  {
    group: "control plane",
    name: "each pod's proxy (/ready, certificate)",
    why: "reads the proxies' admin port through pods/proxy, which the dashboard is not granted",
  },
  {
    group: "certificates",
    name: "trust anchors + issuer (chain, key), webhook certificates",
    why: "reads Secrets holding private keys; the expiry below comes from the trust-roots ConfigMap instead",
  },
  {
    group: "webhooks",
    name: "proxy injector, ServiceProfile and policy validators",
    why: "server-side dry runs need create on pods, serviceprofiles and servers",
  },
  {
    group: "rotation",
    name: "anchors and issuer each proxy uses",
    why: "reads the issuer Secret and every proxy's metrics through pods/proxy",
  },
];

export interface CertExpiry {
  role: "anchor" | "issuer";
  subject: string;
  fingerprint: string;
  notAfter: string;
  daysLeft: number;
}

export interface ControlPlanePod {
  name: string;
  component: string;
  ready: boolean;
  restarts: number;
}

export interface NamespaceMeshing {
  name: string;
  injected: boolean;
  meshed: number;
  unmeshed: number;
}

export interface Overview {
  checks: CheckResult[];
  skipped: typeof SKIPPED_CHECKS;
  controlPlanePods: ControlPlanePod[];
  certificates: CertExpiry[];
  certificateProblems: string[];
  namespaces: NamespaceMeshing[];
}

export function daysLeft(notAfter: Date, nowMs: number): number {
  return Math.floor(((notAfter.getTime() - nowMs) / 86_400_000) * 10) / 10;
}

/** Per namespace, live pods with and without a proxy (Succeeded/Failed pods are not counted, as Linkerd). */
export function meshingByNamespace(namespaces: readonly Obj[], pods: readonly Obj[]): NamespaceMeshing[] {
  const live = pods.map(podInfo).filter((p) => p.phase !== "Succeeded" && p.phase !== "Failed");
  return namespaces.map((n) => {
    const inNs = live.filter((p) => p.namespace === n.metadata.name);
    const meshed = inNs.filter((p) => p.meshed).length;
    return {
      name: n.metadata.name as string,
      injected: n.metadata.annotations?.["linkerd.io/inject"] === "enabled",
      meshed,
      unmeshed: inNs.length - meshed,
    };
  }).sort((a, b) => a.name.localeCompare(b.name));
}

export async function certificateExpiry(
  data: Record<string, string> | undefined,
  nowMs: number,
): Promise<{ certificates: CertExpiry[]; problems: string[] }> {
  const certificates: CertExpiry[] = [];
  const problems: string[] = [];
  const add = async (key: string, role: CertExpiry["role"], onlyFirst: boolean) => {
    const pem = data?.[key];
    if (!pem?.trim()) {
      problems.push(`ConfigMap ${NAMESPACE}/${TRUST_ROOTS_CONFIGMAP} has no ${key}`);
      return;
    }
    try {
      const infos = await certInfos(pem, key);
      for (const c of onlyFirst ? infos.slice(0, 1) : infos) {
        certificates.push({
          role,
          subject: c.subject,
          fingerprint: c.fingerprint,
          notAfter: c.notAfter.toISOString(),
          daysLeft: daysLeft(c.notAfter, nowMs),
        });
      }
    } catch (e) {
      problems.push(`${key}: ${(e as Error).message}`);
    }
  };
  await add(TRUST_ANCHORS_KEY, "anchor", false);
  // Identity publishes its current issuer first; the others are ones it still accepts after a rotation.
  await add(ISSUERS_KEY, "issuer", true);
  return { certificates, problems };
}

export async function readOverview(kube: Kube, nowMs: number, _signal: AbortSignal): Promise<Overview> {
  const ctx: CheckContext = { kube, thresholdMs: 0, now: nowMs };
  const checks: CheckResult[] = [];
  const api = await guarded("cluster", "API server", () => checkApiServer(ctx));
  checks.push(api);
  const [namespaces, pods, cm] = api.outcome === "ok"
    ? await Promise.all([
      kube.list<Obj>("/api/v1/namespaces"),
      kube.list<Obj>("/api/v1/pods"),
      kube.get<Obj>(`/api/v1/namespaces/${NAMESPACE}/configmaps/${TRUST_ROOTS_CONFIGMAP}`),
    ])
    : [[], [], undefined];
  if (api.outcome === "ok") {
    const ns = await guarded("cluster", "namespace", async () => (await checkNamespace(ctx)).result);
    checks.push(ns);
    const controlPlane = (await loadShippedDir(CONTROL_PLANE_DIR)).filter((x) => x.kind === "Deployment");
    const injected = injectedNamespaces(namespaces);
    const rest = await Promise.all([
      guarded("cluster", "CRDs", () => checkCrds(ctx)),
      ...controlPlane.map((d) => guarded("control plane", d.metadata.name, () => checkDeployment(ctx, d))),
      guarded("data plane", "proxies", () => checkProxies(ctx)),
      guarded("data plane", "terminating pods", () => checkTerminatingPods(ctx)),
      guarded("data plane", "injected namespaces", () => checkInjectedNamespaces(ctx, injected)),
      guarded("metrics store", "store", async () =>
        await checkMetricsStore(ctx) ??
          {
            group: "metrics store",
            name: "store",
            outcome: "warn",
            detail: "deploy recorded no metrics store",
          }),
    ]);
    checks.push(...rest);
  }
  const controlPlanePods = livePods(pods.filter((p: Obj) => p.metadata.namespace === NAMESPACE)).map((
    p: Obj,
  ) => ({
    name: p.metadata.name,
    component: p.metadata.labels?.["linkerd.io/control-plane-component"] ?? p.metadata.labels?.app ?? "",
    ready: isPodReady(p),
    restarts: (p.status?.containerStatuses ?? []).reduce((n: number, c: Obj) => n + (c.restartCount ?? 0), 0),
  }));
  const certs = await certificateExpiry(cm?.data, nowMs);
  return {
    checks,
    skipped: SKIPPED_CHECKS,
    controlPlanePods,
    certificates: certs.certificates,
    certificateProblems: certs.problems,
    namespaces: meshingByNamespace(namespaces, pods),
  };
}
