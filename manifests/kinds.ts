/**
 * The object kinds deploy applies, with their REST paths. A fixed table rather than API discovery:
 * deploy only ever writes these, and an unknown kind in a manifest is a mistake to report early.
 */

export interface Manifest {
  apiVersion: string;
  kind: string;
  metadata: {
    name: string;
    namespace?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    [k: string]: unknown;
  };
  [k: string]: unknown;
}

interface KindInfo {
  plural: string;
  namespaced: boolean;
}

const KINDS: Record<string, KindInfo> = {
  "v1/Namespace": { plural: "namespaces", namespaced: false },
  "v1/ServiceAccount": { plural: "serviceaccounts", namespaced: true },
  "v1/ConfigMap": { plural: "configmaps", namespaced: true },
  "v1/Secret": { plural: "secrets", namespaced: true },
  "v1/Service": { plural: "services", namespaced: true },
  "v1/Pod": { plural: "pods", namespaced: true },
  "apps/v1/Deployment": { plural: "deployments", namespaced: true },
  "policy/v1/PodDisruptionBudget": { plural: "poddisruptionbudgets", namespaced: true },
  "rbac.authorization.k8s.io/v1/ClusterRole": { plural: "clusterroles", namespaced: false },
  "rbac.authorization.k8s.io/v1/ClusterRoleBinding": { plural: "clusterrolebindings", namespaced: false },
  "rbac.authorization.k8s.io/v1/Role": { plural: "roles", namespaced: true },
  "rbac.authorization.k8s.io/v1/RoleBinding": { plural: "rolebindings", namespaced: true },
  "admissionregistration.k8s.io/v1/MutatingWebhookConfiguration": {
    plural: "mutatingwebhookconfigurations",
    namespaced: false,
  },
  "admissionregistration.k8s.io/v1/ValidatingWebhookConfiguration": {
    plural: "validatingwebhookconfigurations",
    namespaced: false,
  },
  "apiextensions.k8s.io/v1/CustomResourceDefinition": {
    plural: "customresourcedefinitions",
    namespaced: false,
  },
  "linkerd.io/v1alpha2/ServiceProfile": { plural: "serviceprofiles", namespaced: true },
  "policy.linkerd.io/v1beta3/Server": { plural: "servers", namespaced: true },
  "policy.linkerd.io/v1alpha1/AuthorizationPolicy": { plural: "authorizationpolicies", namespaced: true },
  "policy.linkerd.io/v1alpha1/MeshTLSAuthentication": { plural: "meshtlsauthentications", namespaced: true },
  "policy.linkerd.io/v1alpha1/NetworkAuthentication": { plural: "networkauthentications", namespaced: true },
  // weft multicluster (issue 23).
  "multicluster.linkerd.io/v1alpha2/Link": { plural: "links", namespaced: true },
};

/** Apply order: what others refer to comes first (webhook configurations are applied separately, last). */
export const APPLY_ORDER = [
  "Namespace",
  "CustomResourceDefinition",
  "ServiceAccount",
  "ClusterRole",
  "ClusterRoleBinding",
  "Role",
  "RoleBinding",
  "ConfigMap",
  "Secret",
  "Service",
  "PodDisruptionBudget",
  // Port policy before the pods it guards; the policies before their Server, which denies all until they exist.
  "NetworkAuthentication",
  "MeshTLSAuthentication",
  "AuthorizationPolicy",
  "Server",
  "Link",
  "Deployment",
  "MutatingWebhookConfiguration",
  "ValidatingWebhookConfiguration",
];

export class ManifestError extends Error {
  override name = "ManifestError";
}

function info(m: Pick<Manifest, "apiVersion" | "kind">): KindInfo {
  const k = KINDS[`${m.apiVersion}/${m.kind}`];
  if (!k) {
    throw new ManifestError(
      `kind ${m.apiVersion}/${m.kind} is not one deploy knows (${Object.keys(KINDS).join(", ")})`,
    );
  }
  return k;
}

/** `kind/name` or `kind/namespace/name`, for messages. */
export function describe(m: Manifest): string {
  return m.metadata.namespace
    ? `${m.kind} ${m.metadata.namespace}/${m.metadata.name}`
    : `${m.kind} ${m.metadata.name}`;
}

/** The collection path of a kind (in `namespace` for namespaced kinds). */
export function collectionPath(
  m: Pick<Manifest, "apiVersion" | "kind">,
  namespace?: string,
): string {
  const k = info(m);
  const base = m.apiVersion.includes("/") ? `/apis/${m.apiVersion}` : `/api/${m.apiVersion}`;
  if (!k.namespaced) return `${base}/${k.plural}`;
  if (!namespace) throw new ManifestError(`${m.kind} is namespaced: a namespace is needed`);
  return `${base}/namespaces/${namespace}/${k.plural}`;
}

/** The path of one object. */
export function objectPath(m: Manifest): string {
  const k = info(m);
  if (k.namespaced && !m.metadata.namespace) throw new ManifestError(`${describe(m)} has no namespace`);
  if (!k.namespaced && m.metadata.namespace) {
    throw new ManifestError(`${describe(m)}: ${m.kind} is cluster-scoped and has no namespace`);
  }
  return `${collectionPath(m, m.metadata.namespace)}/${encodeURIComponent(m.metadata.name)}`;
}

/** Sorts manifests into apply order (stable within a kind). */
export function sortForApply(ms: Manifest[]): Manifest[] {
  const rank = (m: Manifest) => {
    const i = APPLY_ORDER.indexOf(m.kind);
    return i < 0 ? APPLY_ORDER.length : i;
  };
  return ms.map((m, i) => ({ m, i })).sort((a, b) => rank(a.m) - rank(b.m) || a.i - b.i).map((x) => x.m);
}
