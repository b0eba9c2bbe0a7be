/**
 * `deno task deploy`: puts the control plane on the cluster of any kubeconfig, in order, and waits
 * until it serves. Idempotent: certificates that exist and are valid are kept, every object is
 * server-side applied, and a second run reports that nothing changed.
 *
 *   1. cluster   API server version (native sidecars from 1.29, as the injector decides)
 *   2. image     build localhost/weft:dev when its inputs changed; load it into the nodes
 *   3. namespace weft, excluded from every weft webhook
 *   4. CRDs      applied, then waited for until Established (Gateway API CRDs only when absent or ours)
 *   5. certs     trust anchor + issuer (created unless given or present), webhook CA + serving certs
 *   6. objects   RBAC, Services, PDBs, Deployments (control-plane proxies rendered by the injector's code)
 *   7. ready     every control-plane Deployment rolled out and available
 *   8. webhooks  the admission webhook configurations, with caBundle, last
 *   9. metrics   the embedded Prometheus rolled out and ready (or removed, with --prometheus=none or
 *                --prometheus-url), and ConfigMap weft-metrics saying which store the CLI queries
 */
import { decideCrdInstall, type LiveCrd } from "../control/policy/gateway_crds.ts";
import { supportsNativeSidecars } from "../control/injector/native_sidecar.ts";
import { TrustAnchors } from "../control/identity/issuer.ts";
import {
  certProblems,
  createIdentity,
  createWebhookCa,
  type IdentityMaterial,
  issueServingCert,
  type Pair,
  planIdentity,
  RENEW_BEFORE_MS,
  renewIssuer,
  serviceDnsNames,
} from "./certs.ts";
import { describe, type Manifest, objectPath, sortForApply } from "./kinds.ts";
import { type ApplyResult, Kube, KubeError } from "./kube.ts";
import type { Progress } from "./progress.ts";
import {
  CLUSTER_DOMAIN,
  identityObjects,
  ISSUER_SECRET,
  loadDir,
  NAMESPACE,
  type PullPolicy,
  renderControlPlane,
  TRUST_DOMAIN,
  TRUST_ROOTS_CONFIGMAP,
  TRUST_ROOTS_KEY,
  WEBHOOK_CA_SECRET,
  WEBHOOK_CERTS,
  webhookObjects,
} from "./render.ts";
import { chooseTarget, kindAvailable, loadImage, type TargetFlags } from "./target.ts";
import { applyHa, haPlan, schedulableNodes } from "./ha.ts";
import { releaseHaPlacement } from "./ha_release.ts";
import type { HaValues } from "./ha_values.ts";
import { PROMETHEUS_IMAGE } from "../images/build.ts";
import { renderStore } from "./metrics/render_store.ts";
import { waitForProxyTargets } from "./metrics/wait_targets.ts";
import { type MetricsStore, PROMETHEUS_DEPLOYMENT } from "./metrics/store.ts";
import {
  apiServerAuthentication,
  DASHBOARD_PORT,
  guardedPortObjects,
  podNetworks,
  TAP_PORT,
} from "./port_policy.ts";

const HERE = new URL(".", import.meta.url).pathname;
export const CONTROL_PLANE_DIR = `${HERE}control-plane`;
export const CRD_DIR = `${HERE}crds`;
const CRD_OWNER = { "app.kubernetes.io/managed-by": "weft", "app.kubernetes.io/part-of": "weft" };

export interface DeployOptions {
  kube: Kube;
  image: string;
  imagePullPolicy: PullPolicy;
  target: TargetFlags;
  /** Trust anchors + issuer to install instead of creating (or keeping) them. */
  given?: IdentityMaterial;
  /** Where a trust anchor deploy creates is saved (its key is needed to renew the issuer). */
  certsDir: string;
  timeoutMs: number;
  progress: Progress;
  /** The metrics store (default: the embedded Prometheus). */
  metrics?: MetricsStore;
  /** The cluster's pod networks (--pod-networks); default: every node's spec.podCIDRs. */
  podNetworks?: string[];
  /** Host addresses inside the pod networks the API server connects from (--api-server-sources). */
  apiServerSources?: string[];
  /** --ha: replicas, anti-affinity, spread, PDBs, resources (manifests/ha.ts, docs/ha.md). */
  ha?: boolean;
  /** --values=FILE, parsed and validated. */
  values?: HaValues;
  /** --multicluster-gateway-trust (issue 23): proxies injected from now on trust the multicluster gateway. */
  multiclusterGatewayTrust?: boolean;
}

export interface DeploySummary {
  /** `created`/`configured` objects, as `Kind ns/name`. */
  changes: { object: string; result: ApplyResult; changed?: string[] }[];
  unchanged: number;
  seconds: number;
  image: string;
  /** Manifest digest of the image the pods run (undefined for an image deploy did not build). */
  imageDigest?: string;
  nativeSidecars: boolean;
}

type SecretObject = Manifest & { type?: string; data?: Record<string, string> };
type ConfigMapObject = Manifest & { data?: Record<string, string> };

function unb64(s: string): string {
  const bin = atob(s);
  return new TextDecoder().decode(Uint8Array.from(bin, (c) => c.charCodeAt(0)));
}

function secretPair(s: SecretObject | undefined, crt: string, key: string): Pair | undefined {
  const c = s?.data?.[crt];
  const k = s?.data?.[key];
  return c && k ? { certPem: unb64(c), keyPem: unb64(k) } : undefined;
}

async function readFileOr(path: string): Promise<string | undefined> {
  try {
    return await Deno.readTextFile(path);
  } catch {
    return undefined;
  }
}

function sleep(ms: number) {
  return new Promise((r) => setTimeout(r, ms));
}

class Applier {
  readonly changes: { object: string; result: ApplyResult; changed?: string[] }[] = [];
  unchanged = 0;
  constructor(readonly kube: Kube) {}

  async apply(ms: Manifest[]): Promise<{ created: number; configured: number; unchanged: number }> {
    const n = { created: 0, configured: 0, unchanged: 0 };
    for (const m of sortForApply(ms)) {
      const { result, changed } = await this.kube.apply(m);
      n[result]++;
      if (result === "unchanged") this.unchanged++;
      else this.changes.push({ object: describe(m), result, ...(changed.length ? { changed } : {}) });
    }
    return n;
  }
}

const IDENTITY_DEPLOYMENT = "weft-identity";

function counts(n: { created: number; configured: number; unchanged: number }): string {
  return Object.entries(n).filter(([, v]) => v > 0).map(([k, v]) => `${v} ${k}`).join(", ") || "nothing";
}

/** The CRDs to apply: ours always; Gateway API CRDs only when absent or installed by us. */
async function crdsToApply(kube: Kube, progress: Progress): Promise<Manifest[]> {
  const out: Manifest[] = [];
  for (const crd of await loadDir(CRD_DIR)) {
    crd.metadata.labels = { ...crd.metadata.labels, ...CRD_OWNER };
    const spec = crd.spec as { group: string; versions: { name: string }[] };
    if (spec.group === "gateway.networking.k8s.io") {
      const live = await kube.get<LiveCrd>(objectPath(crd));
      const d = decideCrdInstall(crd.metadata.name, live, spec.versions.map((v) => v.name));
      if (d.action === "skip") {
        progress.note(`  ${d.reason}`);
        if (d.warning) progress.note(`  WARNING: ${d.warning}`);
        continue;
      }
    }
    out.push(crd);
  }
  return out;
}

async function waitEstablished(kube: Kube, crds: Manifest[], deadline: number, progress: Progress) {
  for (;;) {
    const pending: string[] = [];
    for (const c of crds) {
      const live = await kube.get<{ status?: { conditions?: { type: string; status: string }[] } }>(
        objectPath(c),
      );
      if (!live?.status?.conditions?.some((x) => x.type === "Established" && x.status === "True")) {
        pending.push(c.metadata.name);
      }
    }
    if (pending.length === 0) return;
    if (Date.now() > deadline) throw new Error(`CRDs not Established in time: ${pending.join(", ")}`);
    progress.status(`waiting for ${pending.length} CRD(s) to be Established`);
    await sleep(500);
  }
}

/** Trust anchors + issuer: kept, created, renewed, or the given ones. Returns objects to apply. */
export async function identityStep(
  o: DeployOptions,
): Promise<{ objects: Manifest[]; material: IdentityMaterial; detail: string }> {
  const { kube, certsDir } = o;
  const cm = await kube.get<ConfigMapObject>(
    `/api/v1/namespaces/${NAMESPACE}/configmaps/${TRUST_ROOTS_CONFIGMAP}`,
  );
  const sec = await kube.get<SecretObject>(`/api/v1/namespaces/${NAMESPACE}/secrets/${ISSUER_SECRET}`);
  const existing = {
    anchorsPem: cm?.data?.[TRUST_ROOTS_KEY],
    issuer: secretPair(sec, "crt.pem", "key.pem") ?? secretPair(sec, "tls.crt", "tls.key"),
  };
  const savedCa = await readFileOr(`${certsDir}/ca.crt`);
  const savedKey = await readFileOr(`${certsDir}/ca.key`);
  const anchorKeyPem = savedCa && savedKey && existing.anchorsPem?.includes(savedCa.trim())
    ? savedKey
    : undefined;
  const now = Date.now();
  // An issuer Secret deploy did not write (cert-manager's: kubernetes.io/tls, or annotated by it) is
  // left to its owner: deploy neither renews nor re-applies it (its type could not change anyway).
  const external = sec !== undefined &&
    (sec.type === "kubernetes.io/tls" ||
      sec.metadata.annotations?.["cert-manager.io/certificate-name"] !== undefined);
  if (external && o.given) {
    throw new Error(
      `secret ${NAMESPACE}/${ISSUER_SECRET} is managed outside deploy (type ${
        sec.type ?? "?"
      }, e.g. by cert-manager): ` +
        `rotate it there, not with --issuer-cert/--issuer-key (see docs/identity.md)`,
    );
  }
  if (external && !existing.anchorsPem) {
    throw new Error(
      `secret ${NAMESPACE}/${ISSUER_SECRET} is managed outside deploy (e.g. by cert-manager) but there is no ` +
        `configmap ${NAMESPACE}/${TRUST_ROOTS_CONFIGMAP}: create it with the anchor that signs that issuer ` +
        `(kubectl -n ${NAMESPACE} create configmap ${TRUST_ROOTS_CONFIGMAP} --from-file=${TRUST_ROOTS_KEY}=ca.crt)`,
    );
  }
  if (external && existing.anchorsPem && existing.issuer) {
    const objects = identityObjects({ anchorsPem: existing.anchorsPem, issuer: existing.issuer })
      .filter((m) => m.kind !== "Secret");
    const anchor = TrustAnchors.parse(existing.anchorsPem).certs[0];
    return {
      objects,
      material: { anchorsPem: existing.anchorsPem, issuer: existing.issuer },
      detail: `trust anchor kept; issuer Secret managed outside deploy (type ${sec!.type}), left as is; ` +
        `anchor until ${anchor.notAfter.toISOString().slice(0, 10)}`,
    };
  }
  const plan = await planIdentity({ existing, given: o.given, anchorKeyPem, now });
  const names = { namespace: NAMESPACE, trustDomain: TRUST_DOMAIN, now };
  let material: IdentityMaterial;
  let detail: string;
  switch (plan.action) {
    case "keep":
      material = plan.material;
      detail = "trust anchor and issuer kept";
      if (plan.note) o.progress.note(`  WARNING: ${plan.note}`);
      break;
    case "use-given":
      material = plan.material;
      detail = plan.replaces
        ? "trust anchor and issuer replaced by the given ones"
        : "the given trust anchor and issuer";
      break;
    case "renew-issuer":
      material = {
        anchorsPem: plan.anchorsPem,
        issuer: await renewIssuer({ certPem: savedCa!, keyPem: anchorKeyPem! }, names),
      };
      detail = `issuer renewed (${plan.reason})`;
      break;
    case "create": {
      const created = await createIdentity(names);
      material = created.material;
      await Deno.mkdir(certsDir, { recursive: true, mode: 0o700 });
      await Deno.writeTextFile(`${certsDir}/ca.crt`, created.anchor.certPem, { mode: 0o644 });
      await Deno.writeTextFile(`${certsDir}/ca.key`, created.anchor.keyPem, { mode: 0o600 });
      detail = `trust anchor and issuer created (anchor saved in ${certsDir})`;
      break;
    }
  }
  const anchor = TrustAnchors.parse(material.anchorsPem).certs[0];
  return {
    objects: identityObjects(material),
    material,
    detail: `${detail}; anchor until ${anchor.notAfter.toISOString().slice(0, 10)}`,
  };
}

/** The webhook CA and serving certificates: kept while valid and not due, else (re)issued. */
async function webhookStep(kube: Kube): Promise<{ objects: Manifest[]; caPem: string; detail: string }> {
  const now = Date.now();
  const get = (name: string) => kube.get<SecretObject>(`/api/v1/namespaces/${NAMESPACE}/secrets/${name}`);
  let ca = secretPair(await get(WEBHOOK_CA_SECRET), "tls.crt", "tls.key");
  const done: string[] = [];
  if (
    !ca ||
    (await certProblems({ pair: ca, what: "webhook CA", now, renewBeforeMs: RENEW_BEFORE_MS, ca: true }))
      .length
  ) {
    done.push(ca ? "CA renewed" : "CA created");
    ca = await createWebhookCa(NAMESPACE, now);
  }
  const serving: Record<string, Pair> = {};
  for (const w of WEBHOOK_CERTS) {
    const dnsNames = serviceDnsNames([...w.services], NAMESPACE, CLUSTER_DOMAIN);
    const have = secretPair(await get(w.secret), "tls.crt", "tls.key");
    const problems = have
      ? await certProblems({
        pair: have,
        what: w.secret,
        now,
        renewBeforeMs: RENEW_BEFORE_MS,
        caPem: ca.certPem,
        dnsNames,
      })
      : ["missing"];
    if (problems.length === 0) serving[w.secret] = have!;
    else {
      serving[w.secret] = await issueServingCert(ca, dnsNames, now);
      done.push(`${w.secret} issued${have ? ` (${problems[0]})` : ""}`);
    }
  }
  return {
    objects: webhookObjects(ca, serving),
    caPem: ca.certPem,
    detail: done.length ? done.join(", ") : "CA and serving certificates kept",
  };
}

interface DeploymentObject extends Manifest {
  metadata: Manifest["metadata"] & { generation?: number };
  spec?: { replicas?: number; selector?: { matchLabels?: Record<string, string> } };
  status?: {
    observedGeneration?: number;
    replicas?: number;
    updatedReplicas?: number;
    availableReplicas?: number;
    readyReplicas?: number;
  };
}

interface PodObject extends Manifest {
  status?: {
    phase?: string;
    containerStatuses?: ContainerStatus[];
    initContainerStatuses?: ContainerStatus[];
    conditions?: { type: string; status: string; message?: string }[];
  };
}
interface ContainerStatus {
  name: string;
  ready: boolean;
  restartCount?: number;
  state?: {
    waiting?: { reason?: string; message?: string };
    terminated?: { reason?: string; exitCode?: number };
  };
  lastState?: { terminated?: { reason?: string; exitCode?: number; message?: string } };
}

export function rolledOut(d: DeploymentObject): boolean {
  const want = d.spec?.replicas ?? 1;
  const s = d.status ?? {};
  return (s.observedGeneration ?? 0) >= (d.metadata.generation ?? 1) && (s.updatedReplicas ?? 0) === want &&
    (s.availableReplicas ?? 0) >= want && (s.replicas ?? 0) === want;
}

/** Why a pod is not ready, from its container states (for the timeout message). */
export function podTrouble(p: PodObject): string {
  const bad = [...(p.status?.initContainerStatuses ?? []), ...(p.status?.containerStatuses ?? [])]
    .filter((c) => !c.ready)
    .map((c) => {
      const w = c.state?.waiting;
      const t = c.lastState?.terminated ?? c.state?.terminated;
      const why = w?.reason ? `${w.reason}${w.message ? `: ${w.message.slice(0, 200)}` : ""}` : "not ready";
      return `${c.name} ${why}${t ? ` (last exit ${t.exitCode} ${t.reason ?? ""})` : ""}${
        c.restartCount ? `, ${c.restartCount} restarts` : ""
      }`;
    });
  return `${p.metadata.name} ${p.status?.phase ?? "?"}: ${bad.join("; ") || "containers ready, pod not yet"}`;
}

async function waitReady(kube: Kube, names: string[], deadline: number, progress: Progress) {
  for (;;) {
    const ds = await Promise.all(
      names.map((n) => kube.get<DeploymentObject>(`/apis/apps/v1/namespaces/${NAMESPACE}/deployments/${n}`)),
    );
    const pending = ds.filter((d) => !d || !rolledOut(d));
    if (pending.length === 0) return;
    progress.status(
      `control plane: ${
        ds.map((d, i) => `${names[i]} ${d?.status?.availableReplicas ?? 0}/${d?.spec?.replicas ?? 1}`).join(
          ", ",
        )
      }`,
    );
    if (Date.now() > deadline) {
      const pods = await kube.list<PodObject>(`/api/v1/namespaces/${NAMESPACE}/pods`);
      const trouble = pods.filter((p) =>
        !p.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True")
      );
      throw new Error(
        `the control plane is not ready in time: ${pending.map((d) => d?.metadata.name).join(", ")}\n  ` +
          (trouble.map(podTrouble).join("\n  ") || "(no unready pods: the rollout is still in progress)") +
          `\n  see: kubectl -n ${NAMESPACE} logs <pod> -c <container>`,
      );
    }
    await sleep(1000);
  }
}

export async function deploy(o: DeployOptions): Promise<DeploySummary> {
  const t0 = Date.now();
  const { kube, progress } = o;
  const deadline = t0 + o.timeoutMs;
  const applier = new Applier(kube);

  progress.begin();
  const version = await kube.version().catch((e) => {
    throw new Error(
      `cannot reach the API server ${kube.server} (context ${kube.context}): ${(e as Error).message}`,
    );
  });
  const nativeSidecars = supportsNativeSidecars(version);
  progress.done(
    "cluster",
    `${kube.server} (context ${kube.context}), Kubernetes ${version.gitVersion}, ${
      nativeSidecars ? "native sidecars" : "classic sidecars"
    }`,
  );

  const cluster = kube.kc.getCurrentCluster()!;
  const target = await chooseTarget(o.target, {
    server: kube.server,
    clusterName: cluster.name,
    exists: (p) => {
      try {
        Deno.statSync(p);
        return true;
      } catch {
        return false;
      }
    },
    kindAvailable,
  });
  const metrics = o.metrics ?? { mode: "embedded" };
  const image = await loadImage(
    target,
    o.image,
    (s) => progress.status(s),
    metrics.mode === "embedded" ? ["prometheus"] : [],
  );
  progress.done("image", `${image.name} ${image.digest?.slice(7, 19) ?? ""} ${image.detail}`);

  const docs = await loadDir(CONTROL_PLANE_DIR);
  const nsDocs = docs.filter((d) => d.kind === "Namespace");
  progress.done("namespace", counts(await applier.apply(nsDocs)));

  const crds = await crdsToApply(kube, progress);
  const crdCounts = await applier.apply(crds);
  await waitEstablished(kube, crds, deadline, progress);
  progress.done("CRDs", `${crds.length} applied (${counts(crdCounts)}), Established`);

  const id = await identityStep(o);
  const idCounts = await applier.apply(id.objects);
  progress.done("identity certificates", `${id.detail} (${counts(idCounts)})`);
  const wh = await webhookStep(kube);
  const whCounts = await applier.apply(wh.objects);
  progress.done("webhook certificates", `${wh.detail} (${counts(whCounts)})`);

  // Who may call weft-tap's 8089 and weft-prometheus' 9090: the API server, told apart from pods by address.
  const nets = podNetworks(
    o.podNetworks ? [] : await kube.list<{ spec?: { podCIDRs?: string[] } }>("/api/v1/nodes"),
    o.podNetworks,
    o.apiServerSources,
  );
  progress.done(
    "pod networks",
    `${nets.networks.join(", ")}${o.podNetworks ? " (--pod-networks)" : " (nodes' podCIDRs)"}; API server ` +
      `admitted from outside them${
        nets.hostSources.length ? ` and from ${nets.hostSources.join(", ")}` : ""
      }`,
  );
  const portPolicy = [
    apiServerAuthentication(NAMESPACE, nets),
    ...guardedPortObjects(NAMESPACE, TAP_PORT),
    ...guardedPortObjects(NAMESPACE, DASHBOARD_PORT),
  ];
  // HA: required anti-affinity only when every replica can have a node of its own.
  const wantsHa = o.ha || o.values !== undefined;
  const nodes = wantsHa ? schedulableNodes(await kube.list("/api/v1/nodes")) : 0;
  const plan = haPlan({ flag: o.ha ?? false, values: o.values, nodes });
  if (plan?.ha) {
    progress.done(
      "high availability",
      `${Object.entries(plan.replicas).map(([c, n]) => `${c} ×${n}`).join(", ")}; anti-affinity ${
        plan.antiAffinity ?? "none"
      } (${nodes} schedulable node${nodes === 1 ? "" : "s"})`,
    );
  }
  const haDocs = applyHa(docs.filter((d) => d.kind !== "Namespace"), plan);
  const rendered = await renderControlPlane([...haDocs, ...portPolicy], {
    image: image.name,
    imagePullPolicy: o.imagePullPolicy,
    imageDigest: image.digest,
    trustAnchorsPem: id.material.anchorsPem,
    nativeSidecars,
    webhookCaPem: wh.caPem,
    multiclusterGatewayTrust: o.multiclusterGatewayTrust ?? false,
  });
  // identity rolls out first, on its own: every other control-plane proxy needs a certificate before
  // its pod can start, and a proxy that finds no identity endpoint backs off for longer and longer.
  const isWebhook = (m: Manifest) => m.kind.endsWith("WebhookConfiguration");
  const isDeployment = (m: Manifest) => m.kind === "Deployment";
  const objCounts = await applier.apply(rendered.filter((m) => !isWebhook(m) && !isDeployment(m)));
  progress.done("control plane objects", counts(objCounts));
  // Out of HA with one replica per node required: shrink first so the new pods find free nodes.
  const released = await releaseHaPlacement(kube, NAMESPACE, rendered, deadline, (m) => progress.status(m));
  if (released.length) {
    progress.done("leaving HA", `${released.join(", ")} scaled down before the new template`);
  }
  const identity = rendered.filter((m) => isDeployment(m) && m.metadata.name === IDENTITY_DEPLOYMENT);
  const idDeployCounts = await applier.apply(identity);
  await waitReady(kube, [IDENTITY_DEPLOYMENT], deadline, progress);
  progress.done("identity ready", `${IDENTITY_DEPLOYMENT} (${counts(idDeployCounts)})`);
  const others = rendered.filter((m) => isDeployment(m) && m.metadata.name !== IDENTITY_DEPLOYMENT);
  const deployCounts = await applier.apply(others);
  const deployments = others.map((m) => m.metadata.name);
  await waitReady(kube, deployments, deadline, progress);
  progress.done("control plane ready", `${deployments.join(", ")} (${counts(deployCounts)})`);

  const webhookCounts = await applier.apply(rendered.filter(isWebhook));
  progress.done("webhooks", counts(webhookCounts));

  const prom = image.others.prometheus;
  const store = await renderStore(metrics, {
    image: image.name,
    imagePullPolicy: o.imagePullPolicy,
    imageDigest: image.digest,
    trustAnchorsPem: id.material.anchorsPem,
    nativeSidecars,
    webhookCaPem: wh.caPem,
    // Not loaded (--no-image-load): the nodes must find the image under its own name.
    prometheusImage: prom?.name ?? PROMETHEUS_IMAGE,
    prometheusImageDigest: prom?.digest,
  });
  const storeCounts = await applier.apply(store.apply);
  let removed = 0;
  for (const m of store.remove) if (await kube.delete(objectPath(m))) removed++;
  if (metrics.mode === "embedded") {
    await waitReady(kube, [PROMETHEUS_DEPLOYMENT], deadline, progress);
    const scraped = await waitForProxyTargets(kube, deadline, progress);
    progress.done(
      "metrics store",
      `embedded Prometheus ${PROMETHEUS_DEPLOYMENT} ready, ${scraped} (${counts(storeCounts)})`,
    );
  } else {
    progress.done(
      "metrics store",
      `${metrics.mode === "none" ? "none" : `external ${metrics.url}`}${
        removed ? `; embedded Prometheus removed (${removed} objects)` : ""
      }`,
    );
  }

  const seconds = (Date.now() - t0) / 1000;
  progress.note(
    applier.changes.length === 0
      ? `deployed in ${seconds.toFixed(1)}s: no changes (${applier.unchanged} objects unchanged)`
      : `deployed in ${
        seconds.toFixed(1)
      }s: ${applier.changes.length} changed, ${applier.unchanged} unchanged`,
  );
  return {
    changes: applier.changes,
    unchanged: applier.unchanged,
    seconds,
    image: image.name,
    nativeSidecars,
  };
}

export { KubeError };
