/**
 * Names of the multicluster objects destination reads (Linkerd's multicluster extension spellings,
 * which weft keeps for compatibility; defined once in proto/multicluster.ts).
 */
import { Credentials, McAnnotations, McLabels } from "../../proto/multicluster.ts";

export const Multicluster = {
  /** Secret type of a linked cluster's credentials. */
  credentialsSecretType: Credentials.secretType,
  /** Secret data key holding the kubeconfig. */
  kubeconfigKey: Credentials.kubeconfigKey,
  clusterNameLabel: Credentials.clusterNameLabel,
  clusterDomainAnnotation: Credentials.clusterDomainAnnotation,
  trustDomainAnnotation: Credentials.trustDomainAnnotation,
  remoteDiscoveryLabel: McLabels.remoteDiscovery,
  remoteServiceLabel: McLabels.remoteService,
  remoteDiscoveryAnnotation: McAnnotations.remoteDiscovery,
  localDiscoveryAnnotation: McAnnotations.localDiscovery,
  remoteGatewayIdentityAnnotation: McAnnotations.remoteGatewayIdentity,
  remoteSvcFqNameAnnotation: McAnnotations.remoteSvcFqName,
} as const;
