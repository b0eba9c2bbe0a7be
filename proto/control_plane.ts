/** Contract-level defaults of the control plane that every component and the manifests share. */

/** Namespace the control plane runs in; part of every workload identity name. */
export const DEFAULT_CONTROL_PLANE_NAMESPACE = "weft";
export const DEFAULT_CLUSTER_DOMAIN = "cluster.local";
/** The trust domain defaults to the cluster domain, as in Linkerd. */
export const DEFAULT_TRUST_DOMAIN = DEFAULT_CLUSTER_DOMAIN;

/**
 * Leader-election Leases (coordination.k8s.io/v1) in the control-plane namespace: of a component's
 * replicas only the holder writes back to the API (docs/ha.md). The manifests' Roles name them.
 */
export const LeaderLeases = {
  /** policy: route, EgressNetwork and rate-limit policy status. */
  policyStatus: "weft-policy-status",
  /** identity: weft-issuers.crt and weft-renew-before in the trust-roots ConfigMap. */
  identityTrustRoots: "weft-identity-trust-roots",
  /** proxy-injector: keeping the namespaces' trust-roots copies equal to the source. */
  injectorTrustRootsCopier: "weft-injector-trust-roots-copier",
} as const;
