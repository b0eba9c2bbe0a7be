/**
 * The multicluster contract (issue 23) in one place: the names of the objects the CLI writes, the service mirror
 * keeps, destination reads and the injector points proxies at. Spellings are Linkerd's multicluster extension's
 * (compatibility), with `weft` where Linkerd says `linkerd`.
 */
import { formatWorkloadIdentity } from "./identity_name.ts";

/** Where Links, service mirrors and the gateway live, in every cluster. */
export const MULTICLUSTER_NAMESPACE = "weft-multicluster";
/** The gateway's Deployment, Service and ServiceAccount. */
export const GATEWAY_NAME = "weft-gateway";

export const LINK_GROUP = "multicluster.linkerd.io";
export const LINK_VERSION = "v1alpha2";

/** Secrets holding a linked cluster's kubeconfig (one in MULTICLUSTER_NAMESPACE, one in the control plane's). */
export const Credentials = {
  secretType: "mirror.linkerd.io/remote-kubeconfig",
  kubeconfigKey: "kubeconfig",
  clusterNameLabel: "multicluster.linkerd.io/cluster-name",
  clusterDomainAnnotation: "multicluster.linkerd.io/cluster-domain",
  trustDomainAnnotation: "multicluster.linkerd.io/trust-domain",
} as const;

/** Labels on exported Services (target cluster) and on mirrors (source cluster). */
export const McLabels = {
  /** `"true"`: gateway mode; `"remote-discovery"`: flat mode. */
  exported: "mirror.linkerd.io/exported",
  /** `member`: joins `<svc>-federated`. */
  federated: "mirror.linkerd.io/federated",
  mirroredService: "mirror.linkerd.io/mirrored-service",
  /** On mirrors: the link (target cluster) they belong to. */
  clusterName: "mirror.linkerd.io/cluster-name",
  /** On a flat-mode mirror Service: the cluster whose discovery serves it. */
  remoteDiscovery: "multicluster.linkerd.io/remote-discovery",
  /** On a flat-mode mirror Service: the Service's name in that cluster. */
  remoteService: "multicluster.linkerd.io/remote-service",
  /** Labels of a remote Service with this prefix are not copied onto mirrors (they select exports). */
  mirrorPrefix: "mirror.linkerd.io/",
} as const;

export const McAnnotations = {
  remoteSvcFqName: "mirror.linkerd.io/remote-svc-fq-name",
  remoteResourceVersion: "mirror.linkerd.io/remote-resource-version",
  /** On gateway-mode mirror Endpoints (copied to their EndpointSlice) or Service. */
  remoteGatewayIdentity: "mirror.linkerd.io/remote-gateway-identity",
  /** On a federated Service: `<svc>@<cluster>[,<svc>@<cluster>...]`. */
  remoteDiscovery: "multicluster.linkerd.io/remote-discovery",
  /** On a federated Service: the local Service that is also a member. */
  localDiscovery: "multicluster.linkerd.io/local-discovery",
} as const;

/** The mesh identity of the gateway `weft multicluster install` deploys: the one proxies let forward callers. */
export function multiclusterGatewayIdentity(controlPlaneNamespace: string, trustDomain: string): string {
  return formatWorkloadIdentity({
    serviceAccount: GATEWAY_NAME,
    namespace: MULTICLUSTER_NAMESPACE,
    controlPlaneNamespace,
    trustDomain,
  });
}
