/** Resources the control plane watches, as `ResourceRef`s for `KubeApiSource`. */
import type { ResourceRef } from "./api_source.ts";

export const Resources = {
  services: { group: "", version: "v1", plural: "services" },
  pods: { group: "", version: "v1", plural: "pods" },
  namespaces: { group: "", version: "v1", plural: "namespaces" },
  nodes: { group: "", version: "v1", plural: "nodes" },
  secrets: { group: "", version: "v1", plural: "secrets" },
  endpointSlices: { group: "discovery.k8s.io", version: "v1", plural: "endpointslices" },
  replicaSets: { group: "apps", version: "v1", plural: "replicasets" },
  jobs: { group: "batch", version: "v1", plural: "jobs" },
  serviceProfiles: { group: "linkerd.io", version: "v1alpha2", plural: "serviceprofiles" },
  servers: { group: "policy.linkerd.io", version: "v1beta3", plural: "servers" },
  serverAuthorizations: { group: "policy.linkerd.io", version: "v1beta1", plural: "serverauthorizations" },
  authorizationPolicies: { group: "policy.linkerd.io", version: "v1alpha1", plural: "authorizationpolicies" },
  meshTlsAuthentications: {
    group: "policy.linkerd.io",
    version: "v1alpha1",
    plural: "meshtlsauthentications",
  },
  networkAuthentications: {
    group: "policy.linkerd.io",
    version: "v1alpha1",
    plural: "networkauthentications",
  },
  policyHttpRoutes: { group: "policy.linkerd.io", version: "v1beta3", plural: "httproutes" },
  gatewayHttpRoutes: { group: "gateway.networking.k8s.io", version: "v1", plural: "httproutes" },
  gatewayGrpcRoutes: { group: "gateway.networking.k8s.io", version: "v1", plural: "grpcroutes" },
  egressNetworks: { group: "policy.linkerd.io", version: "v1alpha1", plural: "egressnetworks" },
  gatewayTlsRoutes: { group: "gateway.networking.k8s.io", version: "v1alpha2", plural: "tlsroutes" },
  gatewayTcpRoutes: { group: "gateway.networking.k8s.io", version: "v1alpha2", plural: "tcproutes" },
  httpLocalRateLimitPolicies: {
    group: "policy.linkerd.io",
    version: "v1alpha1",
    plural: "httplocalratelimitpolicies",
  },
} as const satisfies Record<string, ResourceRef>;

/** The same resource with metadata only (`PartialObjectMetadata`). */
export function metadataOnly(ref: ResourceRef): ResourceRef {
  return { ...ref, metadataOnly: true };
}
