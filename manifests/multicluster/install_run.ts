/**
 * `weft multicluster install` against a cluster: reads the mesh it runs (manifests/multicluster/mesh_facts.ts),
 * renders the gateway's proxy in as deploy renders the control plane's, and server-side applies everything (so
 * running it again changes nothing, and a changed flag updates in place). Then waits for the gateway.
 */
import { TRUST_ROOTS_COPY_CONFIGMAP, TRUST_ROOTS_COPY_LABEL } from "../../proto/trust_roots.ts";
import { COPIED_FROM_ANNOTATION } from "../../control/injector/trust_roots_copy_client.ts";
import { CRD_DIR } from "../deploy.ts";
import { describe, type Manifest, sortForApply } from "../kinds.ts";
import type { ApplyResult, Kube } from "../kube.ts";
import { loadDir, renderControlPlane, TRUST_ROOTS_CONFIGMAP, TRUST_ROOTS_KEY } from "../render.ts";
import { GATEWAY_NAME, installObjects, MC_NAMESPACE } from "./install.ts";
import { gatewayTrustWarning } from "./gateway_trust.ts";
import { type MeshFacts, readMeshFacts } from "./mesh_facts.ts";
import { waitRolledOut } from "./rollout.ts";

export const LINK_CRD_DIR = `${CRD_DIR}/multicluster`;

export interface InstallOptions {
  gateway: boolean;
  allowedIdentities: string[];
  timeoutMs: number;
  /** Wait for the gateway to roll out (default true). */
  wait?: boolean;
  log?: (line: string) => void;
  status?: (text: string) => void;
}

export interface InstallSummary {
  applied: { object: string; result: ApplyResult }[];
  facts: MeshFacts;
  /** Things the installer should know, e.g. that this cluster's proxies do not trust the gateway. */
  warnings: string[];
  ms: number;
}

/** The objects of an install with the gateway's proxy rendered in (pure but for reading the CRD files). */
export async function renderInstall(
  facts: MeshFacts,
  o: Pick<InstallOptions, "gateway" | "allowedIdentities">,
) {
  const base = installObjects({
    gateway: o.gateway,
    allowedIdentities: o.allowedIdentities,
    controlPlaneNamespace: facts.controlPlaneNamespace,
    trustDomain: facts.trustDomain,
  }, TRUST_ROOTS_CONFIGMAP);
  const rendered = await renderControlPlane(base, {
    image: facts.image,
    imagePullPolicy: facts.imagePullPolicy,
    ...(facts.imageDigest ? { imageDigest: facts.imageDigest } : {}),
    trustAnchorsPem: facts.anchorsPem,
    nativeSidecars: facts.nativeSidecars,
    webhookCaPem: "",
  });
  let crds: Manifest[] = [];
  try {
    crds = await loadDir(LINK_CRD_DIR);
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
  }
  return sortForApply([...crds, ...rendered]);
}

/**
 * The trust-roots copy the gateway's proxy mounts: the injector creates it when it injects a pod of a namespace,
 * but it skips the gateway (its proxy is already there), so install creates it as the injector would, and the
 * injector's copier keeps it equal to the source from then on.
 */
async function ensureTrustRootsCopy(kube: Kube, facts: MeshFacts): Promise<ApplyResult> {
  const path = `/api/v1/namespaces/${MC_NAMESPACE}/configmaps/${TRUST_ROOTS_COPY_CONFIGMAP}`;
  if (await kube.get(path)) return "unchanged";
  const source = await kube.get<{ data?: Record<string, string> }>(
    `/api/v1/namespaces/${facts.controlPlaneNamespace}/configmaps/${TRUST_ROOTS_CONFIGMAP}`,
  );
  const r = await kube.request("POST", `/api/v1/namespaces/${MC_NAMESPACE}/configmaps`, {
    body: JSON.stringify({
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: {
        name: TRUST_ROOTS_COPY_CONFIGMAP,
        namespace: MC_NAMESPACE,
        labels: { [TRUST_ROOTS_COPY_LABEL]: "true" },
        annotations: { [COPIED_FROM_ANNOTATION]: `${facts.controlPlaneNamespace}/${TRUST_ROOTS_CONFIGMAP}` },
      },
      data: source?.data ?? { [TRUST_ROOTS_KEY]: facts.anchorsPem },
    }),
  });
  if (r.status === 409) return "unchanged";
  if (r.status >= 300) {
    throw new Error(`create ConfigMap ${MC_NAMESPACE}/${TRUST_ROOTS_COPY_CONFIGMAP}: ${r.text}`);
  }
  return "created";
}

export async function install(kube: Kube, o: InstallOptions): Promise<InstallSummary> {
  const t0 = Date.now();
  const facts = await readMeshFacts(kube);
  const objects = await renderInstall(facts, o);
  const applied: InstallSummary["applied"] = [];
  for (const m of objects) {
    // The copy goes in before the gateway's pod needs it (after the namespace).
    if (m.kind === "Deployment" && m.metadata.name === GATEWAY_NAME) {
      const result = await ensureTrustRootsCopy(kube, facts);
      applied.push({ object: `ConfigMap ${MC_NAMESPACE}/${TRUST_ROOTS_COPY_CONFIGMAP}`, result });
    }
    const { result } = await kube.apply(m);
    applied.push({ object: describe(m), result });
    o.log?.(`${describe(m)} ${result}`);
    if (m.kind === "CustomResourceDefinition") await waitEstablished(kube, m, o.timeoutMs);
  }
  if (o.gateway && o.wait !== false) {
    await waitRolledOut(kube, MC_NAMESPACE, GATEWAY_NAME, o.timeoutMs, o.status);
  }
  const trust = gatewayTrustWarning(facts, o.gateway);
  return { applied, facts, warnings: trust ? [trust] : [], ms: Date.now() - t0 };
}

async function waitEstablished(kube: Kube, crd: Manifest, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const live = await kube.get<{ status?: { conditions?: { type: string; status: string }[] } }>(
      `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${crd.metadata.name}`,
    );
    if (live?.status?.conditions?.some((c) => c.type === "Established" && c.status === "True")) return;
    if (Date.now() > deadline) throw new Error(`CRD ${crd.metadata.name} not Established in time`);
    await new Promise((r) => setTimeout(r, 300));
  }
}
