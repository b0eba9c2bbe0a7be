/**
 * Turns the YAML in manifests/control-plane into the objects deploy applies. The YAML stays what a
 * platform engineer reads and reviews; rendering changes only what cannot be known when it is
 * written, each by structure (never by text templating):
 *
 *   - the image: every container image `localhost/weft:dev` (and the injector's `--proxy-image=` and
 *     `--image-pull-policy=` flags) becomes the image deploy loaded, with its pull policy;
 *   - the control plane's proxies: a pod template annotated `linkerd.io/inject: enabled` gets the init
 *     container and proxy that the injector's own patch code (control/injector/patch.ts) builds for it,
 *     with the `config.linkerd.io/*` annotations it carries; a `linkerd-proxy` entry in its containers
 *     is not a container but env values that replace the injected ones (loopback control-plane
 *     addresses, trust anchors from the ConfigMap);
 *   - `weft.io/image-digest` on every pod template, so a new build of the same tag rolls the pods;
 *   - every webhook's `clientConfig.caBundle`.
 *
 * The trust anchors ConfigMap and the Secrets (issuer, webhook CA, serving certificates) are built
 * here from material deploy created or kept; they never live in a file.
 */
import { parseAllDocuments } from "yaml";
import type { V1Container, V1Pod } from "@kubernetes/client-node";
import { buildPatch } from "../control/injector/patch.ts";
import { defaultInjectorConfig, type InjectorConfig } from "../control/injector/config.ts";
import { PROXY_CONTAINER } from "../control/injector/decision.ts";
import { imageTag } from "../control/injector/image_tag.ts";
import { Annotations } from "../proto/annotations.ts";
import { multiclusterGatewayIdentity } from "../proto/multicluster.ts";
import { applyJsonPatch } from "./json_patch.ts";
import { describe, type Manifest, ManifestError } from "./kinds.ts";
import type { IdentityMaterial, Pair } from "./certs.ts";

/** The image reference the YAML files name; deploy substitutes the one it loaded. */
export const MANIFEST_IMAGE = "localhost/weft:dev";
export const NAMESPACE = "weft";
export const CLUSTER_DOMAIN = "cluster.local";
export const TRUST_DOMAIN = "cluster.local";

export const TRUST_ROOTS_CONFIGMAP = "linkerd-identity-trust-roots";
export const TRUST_ROOTS_KEY = "ca-bundle.crt";
export const ISSUER_SECRET = "linkerd-identity-issuer";
export const WEBHOOK_CA_SECRET = "weft-webhook-ca";
/** Serving certificate Secrets and the Services each must name. */
export const WEBHOOK_CERTS = [
  { secret: "weft-proxy-injector-k8s-tls", services: ["weft-proxy-injector"] },
  { secret: "weft-validator-k8s-tls", services: ["weft-sp-validator", "weft-policy-validator"] },
] as const;
export const IMAGE_DIGEST_ANNOTATION = "weft.io/image-digest";
const PART_OF = { "app.kubernetes.io/part-of": "weft" };

export type PullPolicy = "Always" | "IfNotPresent" | "Never";

export interface RenderParams {
  image: string;
  imagePullPolicy: PullPolicy;
  /** Manifest digest of the image, recorded on pod templates; undefined when not known (registry images). */
  imageDigest?: string;
  trustAnchorsPem: string;
  /** Native sidecars (Kubernetes >= 1.29), as the injector decides for every other pod. */
  nativeSidecars: boolean;
  /** PEM of the CA that signed the webhook serving certificates. */
  webhookCaPem: string;
  /**
   * deploy's --multicluster-gateway-trust (issue 23): the injector gives every proxy it injects the
   * multicluster gateway's identity as one that may forward callers' identities. Off, no proxy trusts it.
   */
  multiclusterGatewayTrust?: boolean;
}

/** Parses multi-document YAML; empty documents (comments only) are skipped. */
export function parseManifests(text: string, origin: string): Manifest[] {
  const out: Manifest[] = [];
  for (const doc of parseAllDocuments(text)) {
    if (doc.errors.length) throw new ManifestError(`${origin}: ${doc.errors[0].message}`);
    const m = doc.toJS() as Manifest | null;
    if (m === null || m === undefined) continue;
    if (typeof m !== "object" || !m.apiVersion || !m.kind || !m.metadata?.name) {
      throw new ManifestError(`${origin}: a document without apiVersion, kind or metadata.name`);
    }
    out.push(m);
  }
  return out;
}

/** Every `*.yaml` file of a directory (sorted, recursively), parsed. */
export async function loadDir(dir: string): Promise<Manifest[]> {
  const files: string[] = [];
  const walk = async (d: string) => {
    for await (const e of Deno.readDir(d)) {
      const p = `${d}/${e.name}`;
      if (e.isDirectory) await walk(p);
      else if (e.name.endsWith(".yaml")) files.push(p);
    }
  };
  await walk(dir);
  const out: Manifest[] = [];
  for (const f of files.sort()) out.push(...parseManifests(await Deno.readTextFile(f), f));
  return out;
}

const shipped = new Map<string, Promise<readonly Manifest[]>>();

/**
 * loadDir for the manifests shipped with weft (CRDs, the control plane), parsed once per process and frozen:
 * they do not change while it runs, and a long-running reader (the dashboard's overview) would otherwise parse
 * megabytes of YAML on every request. A failed load is not kept.
 */
export function loadShippedDir(dir: string): Promise<readonly Manifest[]> {
  let p = shipped.get(dir);
  if (!p) {
    p = loadDir(dir).then((ms) => deepFreeze(ms));
    shipped.set(dir, p);
    p.catch(() => shipped.delete(dir));
  }
  return p;
}

function deepFreeze<T>(v: T): T {
  if (v && typeof v === "object" && !Object.isFrozen(v)) {
    Object.freeze(v);
    for (const x of Object.values(v)) deepFreeze(x);
  }
  return v;
}

function b64(text: string): string {
  const bytes = new TextEncoder().encode(text);
  let bin = "";
  for (const b of bytes) bin += String.fromCharCode(b);
  return btoa(bin);
}

interface PodTemplate {
  metadata?: { labels?: Record<string, string>; annotations?: Record<string, string> };
  spec: { containers: V1Container[]; initContainers?: V1Container[]; [k: string]: unknown };
}

function allContainers(spec: PodTemplate["spec"]): V1Container[] {
  return [...(spec.initContainers ?? []), ...spec.containers];
}

function substituteImage(c: V1Container, p: RenderParams): void {
  if (c.image === MANIFEST_IMAGE) {
    c.image = p.image;
    c.imagePullPolicy = p.imagePullPolicy;
  }
  const sub = (words: string[] | undefined) =>
    words?.map((w) =>
      w === `--proxy-image=${MANIFEST_IMAGE}`
        ? `--proxy-image=${p.image}`
        : w.startsWith("--image-pull-policy=")
        ? `--image-pull-policy=${p.imagePullPolicy}`
        : w
    );
  if (c.command) c.command = sub(c.command);
  if (c.args) c.args = sub(c.args);
}

/** The injector's config for the control plane's own proxies: its defaults, with this deploy's image. */
export function controlPlaneInjectorConfig(p: RenderParams): InjectorConfig {
  const defaults = defaultInjectorConfig(p.trustAnchorsPem);
  return {
    ...defaults,
    controlPlaneNamespace: NAMESPACE,
    clusterDomain: CLUSTER_DOMAIN,
    trustDomain: TRUST_DOMAIN,
    image: p.image,
    // As the injector's flags: the proxy's version is its image's tag (check compares the two).
    version: imageTag(p.image) ?? defaults.version,
    imagePullPolicy: p.imagePullPolicy,
    nativeSidecars: p.nativeSidecars,
  };
}

/** Injects the proxy into a workload's pod template with the injector's patch code. */
async function injectTemplate(m: Manifest, p: RenderParams): Promise<void> {
  const spec = m.spec as { template?: PodTemplate } | undefined;
  const tpl = spec?.template;
  if (!tpl || tpl.metadata?.annotations?.[Annotations.inject] !== "enabled") return;
  const i = tpl.spec.containers.findIndex((c) => c.name === PROXY_CONTAINER);
  const overrides = i >= 0 ? tpl.spec.containers.splice(i, 1)[0] : undefined;
  const extra = overrides && Object.keys(overrides).filter((k) => k !== "name" && k !== "env");
  if (extra?.length) {
    throw new ManifestError(
      `${describe(m)}: the ${PROXY_CONTAINER} entry may only set env, not ${extra.join(", ")}`,
    );
  }
  const pod: V1Pod = {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { ...tpl.metadata, namespace: m.metadata.namespace },
    spec: tpl.spec as V1Pod["spec"],
  };
  const res = await buildPatch(
    pod,
    { metadata: { name: m.metadata.namespace } },
    controlPlaneInjectorConfig(p),
  );
  if (!res.ok) throw new ManifestError(`${describe(m)}: ${res.problems.map((x) => x.message).join("; ")}`);
  const out = applyJsonPatch(pod, res.patch);
  const proxy = allContainers(out.spec as PodTemplate["spec"]).find((c) => c.name === PROXY_CONTAINER)!;
  for (const e of overrides?.env ?? []) {
    const j = proxy.env?.findIndex((x) => x.name === e.name) ?? -1;
    if (j >= 0) proxy.env![j] = e;
    else (proxy.env ??= []).push(e);
  }
  const { namespace: _ns, ...metadata } = out.metadata!;
  tpl.metadata = metadata as PodTemplate["metadata"];
  tpl.spec = out.spec as PodTemplate["spec"];
}

/** The injector's flag that makes proxies trust the multicluster gateway, as deploy renders it. */
export function gatewayTrustFlag(): string {
  return `--trusted-gateway-identities=${multiclusterGatewayIdentity(NAMESPACE, TRUST_DOMAIN)}`;
}

/** The injector's command gets the gateway trust flag only when asked (the shipped manifest has none). */
function addGatewayTrust(c: V1Container, p: RenderParams): void {
  if (!p.multiclusterGatewayTrust || c.command?.[0] !== "weft-control" || c.command[1] !== "injector") return;
  c.command = [...c.command, gatewayTrustFlag()];
}

/** Renders the control plane's YAML for this cluster (inputs are not modified). */
export async function renderControlPlane(docs: Manifest[], p: RenderParams): Promise<Manifest[]> {
  const out = structuredClone(docs);
  for (const m of out) {
    if (m.kind === "Deployment") {
      await injectTemplate(m, p);
      const tpl = (m.spec as { template: PodTemplate }).template;
      for (const c of allContainers(tpl.spec)) {
        substituteImage(c, p);
        addGatewayTrust(c, p);
      }
      if (p.imageDigest) {
        tpl.metadata ??= {};
        tpl.metadata.annotations = { ...tpl.metadata.annotations, [IMAGE_DIGEST_ANNOTATION]: p.imageDigest };
      }
    }
    if (m.kind === "MutatingWebhookConfiguration" || m.kind === "ValidatingWebhookConfiguration") {
      for (const w of (m.webhooks as { clientConfig: { caBundle?: string } }[]) ?? []) {
        w.clientConfig.caBundle = b64(p.webhookCaPem);
      }
    }
  }
  return out;
}

function secret(name: string, type: string, data: Record<string, string>, component: string): Manifest {
  return {
    apiVersion: "v1",
    kind: "Secret",
    metadata: {
      name,
      namespace: NAMESPACE,
      labels: { ...PART_OF, "linkerd.io/control-plane-component": component },
    },
    type,
    data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, b64(v)])),
  };
}

/** The trust roots ConfigMap, the issuer Secret (Linkerd's `linkerd.io/tls` scheme: crt.pem, key.pem). */
export function identityObjects(m: IdentityMaterial): Manifest[] {
  return [
    {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: {
        name: TRUST_ROOTS_CONFIGMAP,
        namespace: NAMESPACE,
        labels: { ...PART_OF, "linkerd.io/control-plane-component": "identity" },
      },
      data: { [TRUST_ROOTS_KEY]: m.anchorsPem },
    },
    secret(ISSUER_SECRET, "Opaque", { "crt.pem": m.issuer.certPem, "key.pem": m.issuer.keyPem }, "identity"),
  ];
}

/** The webhook CA Secret and the serving certificate Secrets (`kubernetes.io/tls`, with ca.crt). */
export function webhookObjects(ca: Pair, serving: Record<string, Pair>): Manifest[] {
  const out = [
    secret(
      WEBHOOK_CA_SECRET,
      "kubernetes.io/tls",
      { "tls.crt": ca.certPem, "tls.key": ca.keyPem },
      "webhooks",
    ),
  ];
  for (const w of WEBHOOK_CERTS) {
    const pair = serving[w.secret];
    if (!pair) throw new Error(`no serving certificate for ${w.secret}`);
    out.push(secret(w.secret, "kubernetes.io/tls", {
      "tls.crt": pair.certPem,
      "tls.key": pair.keyPem,
      "ca.crt": ca.certPem,
    }, "webhooks"));
  }
  return out;
}
