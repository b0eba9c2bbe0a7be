/**
 * `deno task mesh:check`, in the spirit of `linkerd check`: one line per check, `✓` passed, `!` a
 * warning (exit 0, as Linkerd's warnings), `✗` failed (exit 1). Everything goes through the API
 * server (pod ports through its pod proxy), so it works wherever the kubeconfig works. Each check is
 * one function in `manifests/check/`; this module runs them in order:
 *
 *   cluster        API reachable; namespace present and excluded from the webhooks; CRDs Established
 *   control plane  Deployments rolled out; every pod Ready with its proxy; each proxy certified
 *                  (admin /ready, and the certificate expiry it reports)
 *   certificates   trust anchors + issuer (chain, key, expiry), webhook CA + serving certificates
 *                  (chain, names, key, expiry) and the caBundles: nothing expiring within --threshold
 *   webhooks       a server-side dry run of a Pod comes back with a proxy; an invalid ServiceProfile
 *                  and an invalid Server are refused by the validators themselves
 *   data plane     every proxy of an injected pod is ready; pods in injected namespaces without one
 *                  (created while the injector was down) are a warning, and so are pods stuck
 *                  Terminating past their grace period (with the latest Warning event as the reason);
 *                  a proxy on another version or build than the control plane is a warning, more than
 *                  one minor version away a failure (check/version_skew.ts)
 *   rotation       anchors and issuer against their thresholds; per meshed pod, the anchors its proxy
 *                  trusts and the issuer of its leaf, a warning when behind the trust-roots ConfigMap
 *   metrics store  (when deploy recorded one) the embedded Prometheus rolled out, every target it scrapes
 *                  up; or the external store's URL, or none
 *   multicluster   (when the cluster has Links) per link: the target's API with the stored credentials, their
 *                  authorization, shared trust anchors, the service mirror, the gateway, mirrored services
 */
import { CONTROL_PLANE_DIR } from "./deploy.ts";
import type { Kube } from "./kube.ts";
import { loadDir, NAMESPACE } from "./render.ts";
import { checkIdentityIssuer, checkWebhookCertificates } from "./check/certificates.ts";
import { checkApiServer, checkCrds, checkNamespace } from "./check/cluster.ts";
import { checkControlPlanePod, checkDeployment, livePods, podCheckName } from "./check/control_plane.ts";
import {
  checkInjectedNamespaces,
  checkProxies,
  checkTerminatingPods,
  injectedNamespaces,
} from "./check/data_plane.ts";
import type { Obj } from "./check/objects.ts";
import { type CheckContext, type CheckResult, guarded } from "./check/result.ts";
import { checkRotation } from "./check/rotation.ts";
import { checkMetricsStore } from "./check/metrics_store.ts";
import { checkInjector, checkPolicyValidator, checkServiceProfileValidator } from "./check/webhooks.ts";
import { checkVersionSkew } from "./check/version_skew.ts";
import { checkMulticluster } from "./check/multicluster.ts";

export interface CheckOptions {
  kube: Kube;
  thresholdMs: number;
  anchorThresholdMs?: number;
  issuerThresholdMs?: number;
  /** Called with each result as it is known. */
  onResult?: (r: CheckResult) => void;
}

export async function runChecks(o: CheckOptions): Promise<CheckResult[]> {
  const ctx: CheckContext = {
    kube: o.kube,
    thresholdMs: o.thresholdMs,
    // Unset (programmatic callers): one threshold for every certificate, as before issue 21.
    anchorThresholdMs: o.anchorThresholdMs ?? o.thresholdMs,
    issuerThresholdMs: o.issuerThresholdMs ?? o.thresholdMs,
    now: Date.now(),
  };
  const results: CheckResult[] = [];
  const add = (r: CheckResult) => {
    results.push(r);
    o.onResult?.(r);
  };

  const api = await guarded("cluster", "API server", () => checkApiServer(ctx));
  add(api);
  if (api.outcome !== "ok") return results;
  const ns = await checkNamespace(ctx);
  add(ns.result);
  if (!ns.present) return results;
  add(await guarded("cluster", "CRDs", () => checkCrds(ctx)));

  const controlPlane = await loadDir(CONTROL_PLANE_DIR);
  for (const d of controlPlane.filter((x) => x.kind === "Deployment")) {
    add(await guarded("control plane", d.metadata.name, () => checkDeployment(ctx, d)));
  }
  for (const p of livePods(await o.kube.list<Obj>(`/api/v1/namespaces/${NAMESPACE}/pods`))) {
    add(await guarded("control plane", podCheckName(p), () => checkControlPlanePod(ctx, p)));
  }

  add(await guarded("certificates", "trust anchors + issuer", () => checkIdentityIssuer(ctx)));
  add(
    await guarded("certificates", "webhook certificates", () => checkWebhookCertificates(ctx, controlPlane)),
  );

  const injected = injectedNamespaces(await o.kube.list<Obj>("/api/v1/namespaces"));
  const probeNs = injected[0]?.metadata.name ?? "default";
  add(await guarded("webhooks", "proxy injector", () => checkInjector(ctx, probeNs)));
  add(
    await guarded("webhooks", "ServiceProfile validator", () => checkServiceProfileValidator(ctx, probeNs)),
  );
  add(await guarded("webhooks", "policy validator", () => checkPolicyValidator(ctx, probeNs)));

  add(await guarded("data plane", "proxies", () => checkProxies(ctx)));
  add(await guarded("data plane", "version skew", () => checkVersionSkew(ctx)));
  add(await guarded("data plane", "terminating pods", () => checkTerminatingPods(ctx)));
  add(await guarded("data plane", "injected namespaces", () => checkInjectedNamespaces(ctx, injected)));

  try {
    for (
      const r of await checkRotation(ctx, {
        anchorMs: ctx.anchorThresholdMs!,
        issuerMs: ctx.issuerThresholdMs!,
      })
    ) add(r);
  } catch (e) {
    add({ group: "rotation", name: "state", outcome: "fail", detail: (e as Error).message });
  }
  try {
    const m = await checkMetricsStore(ctx);
    if (m) add(m);
  } catch (e) {
    add({ group: "metrics store", name: "store", outcome: "fail", detail: (e as Error).message });
  }
  try {
    for (const r of await checkMulticluster(ctx)) add(r);
  } catch (e) {
    add({ group: "multicluster", name: "links", outcome: "fail", detail: (e as Error).message });
  }
  return results;
}
