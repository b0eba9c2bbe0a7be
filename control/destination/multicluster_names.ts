/**
 * Names of the multicluster objects destination reads (Linkerd's multicluster extension spellings,
 * which weft keeps for compatibility; see /tmp/weft/mc_contract.md and issue 23).
 */
export const Multicluster = {
  /** Secret type of a linked cluster's credentials. */
  credentialsSecretType: "mirror.linkerd.io/remote-kubeconfig",
  /** Secret data key holding the kubeconfig. */
  kubeconfigKey: "kubeconfig",
  clusterNameLabel: "multicluster.linkerd.io/cluster-name",
  clusterDomainAnnotation: "multicluster.linkerd.io/cluster-domain",
  trustDomainAnnotation: "multicluster.linkerd.io/trust-domain",
  /** On a flat-mode mirror Service: the cluster whose discovery serves it. */
  remoteDiscoveryLabel: "multicluster.linkerd.io/remote-discovery",
  /** On a flat-mode mirror Service: the Service's name in that cluster. */
  remoteServiceLabel: "multicluster.linkerd.io/remote-service",
  /** On a federated Service: `<svc>@<cluster>[,<svc>@<cluster>...]`. */
  remoteDiscoveryAnnotation: "multicluster.linkerd.io/remote-discovery",
  /** On a federated Service: the local Service that is also a member. */
  localDiscoveryAnnotation: "multicluster.linkerd.io/local-discovery",
  /** On gateway-mode mirror Endpoints (mirrored to their EndpointSlice) or Service. */
  remoteGatewayIdentityAnnotation: "mirror.linkerd.io/remote-gateway-identity",
  remoteSvcFqNameAnnotation: "mirror.linkerd.io/remote-svc-fq-name",
} as const;
