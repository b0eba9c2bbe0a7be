/** Contract-level defaults of the control plane that every component and the manifests share. */

/** Namespace the control plane runs in; part of every workload identity name. */
export const DEFAULT_CONTROL_PLANE_NAMESPACE = "weft";
export const DEFAULT_CLUSTER_DOMAIN = "cluster.local";
/** The trust domain defaults to the cluster domain, as in Linkerd. */
export const DEFAULT_TRUST_DOMAIN = DEFAULT_CLUSTER_DOMAIN;
