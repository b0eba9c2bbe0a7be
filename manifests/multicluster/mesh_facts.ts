/**
 * What multicluster install and link read about a cluster's mesh: where the control plane runs, its trust and
 * cluster domains and the image it injects (the injector's flags, which say what every meshed pod gets), and
 * its trust anchors. Read from the live objects so a cluster deployed with other flags is described as it is.
 */
import { supportsNativeSidecars } from "../../control/injector/native_sidecar.ts";
import type { Kube } from "../kube.ts";
import {
  CLUSTER_DOMAIN,
  IMAGE_DIGEST_ANNOTATION,
  NAMESPACE,
  type PullPolicy,
  TRUST_DOMAIN,
  TRUST_ROOTS_CONFIGMAP,
  TRUST_ROOTS_KEY,
} from "../render.ts";

export interface MeshFacts {
  controlPlaneNamespace: string;
  trustDomain: string;
  clusterDomain: string;
  image: string;
  imagePullPolicy: PullPolicy;
  imageDigest?: string;
  nativeSidecars: boolean;
  anchorsPem: string;
  /** The injector's --trusted-gateway-identities: whom injected proxies let forward a caller's identity. */
  trustedGatewayIdentities: string[];
}

export const INJECTOR_DEPLOYMENT = "weft-proxy-injector";

interface DeploymentLike {
  spec?: {
    template?: {
      metadata?: { annotations?: Record<string, string> };
      spec?: { containers?: { name: string; image?: string; command?: string[]; args?: string[] }[] };
    };
  };
}

/** The injector's `--name=value` flags from its Deployment (pure, for tests). */
export function injectorFlags(d: DeploymentLike): Map<string, string> {
  const out = new Map<string, string>();
  for (const c of d.spec?.template?.spec?.containers ?? []) {
    for (const w of [...(c.command ?? []), ...(c.args ?? [])]) {
      const m = /^--([a-z-]+)=(.*)$/s.exec(w);
      if (m) out.set(m[1], m[2]);
    }
  }
  return out;
}

export function factsFromInjector(d: DeploymentLike): Omit<MeshFacts, "nativeSidecars" | "anchorsPem"> {
  const f = injectorFlags(d);
  const image = f.get("proxy-image");
  if (!image) throw new Error(`the ${INJECTOR_DEPLOYMENT} Deployment has no --proxy-image flag`);
  const pull = f.get("image-pull-policy") ?? "IfNotPresent";
  const digest = d.spec?.template?.metadata?.annotations?.[IMAGE_DIGEST_ANNOTATION];
  return {
    controlPlaneNamespace: f.get("controller-namespace") ?? NAMESPACE,
    trustDomain: f.get("identity-trust-domain") ?? TRUST_DOMAIN,
    clusterDomain: f.get("cluster-domain") ?? CLUSTER_DOMAIN,
    image,
    imagePullPolicy: pull as PullPolicy,
    ...(digest ? { imageDigest: digest } : {}),
    trustedGatewayIdentities: (f.get("trusted-gateway-identities") ?? "").split(",").map((s) => s.trim())
      .filter((s) => s !== ""),
  };
}

/** The trust anchors bundle of a cluster, or an error saying the mesh is not deployed there. */
export async function readAnchors(kube: Kube, controlPlaneNamespace = NAMESPACE): Promise<string> {
  const cm = await kube.get<{ data?: Record<string, string> }>(
    `/api/v1/namespaces/${controlPlaneNamespace}/configmaps/${TRUST_ROOTS_CONFIGMAP}`,
  );
  const pem = cm?.data?.[TRUST_ROOTS_KEY];
  if (!pem) {
    throw new Error(
      `${kube.server}: no trust anchors in ConfigMap ${controlPlaneNamespace}/${TRUST_ROOTS_CONFIGMAP} ` +
        "(is weft deployed there? deno task deploy)",
    );
  }
  return pem;
}

export async function readMeshFacts(kube: Kube, controlPlaneNamespace = NAMESPACE): Promise<MeshFacts> {
  const d = await kube.get<DeploymentLike>(
    `/apis/apps/v1/namespaces/${controlPlaneNamespace}/deployments/${INJECTOR_DEPLOYMENT}`,
  );
  if (!d) {
    throw new Error(
      `${kube.server}: no Deployment ${controlPlaneNamespace}/${INJECTOR_DEPLOYMENT} (is weft deployed there? ` +
        "deno task deploy)",
    );
  }
  const [version, anchorsPem] = await Promise.all([kube.version(), readAnchors(kube, controlPlaneNamespace)]);
  return { ...factsFromInjector(d), nativeSidecars: supportsNativeSidecars(version), anchorsPem };
}
