/** The resolved configuration of the policy controller; only main.ts builds it from the environment. */
import { DEFAULT_CONTROL_PLANE_NAMESPACE } from "../../proto/control_plane.ts";
import {
  DEFAULT_CLUSTER_NETWORKS,
  DEFAULT_INBOUND_POLICIES,
  type DefaultInboundPolicy,
} from "../../proto/env.ts";

export interface PolicyConfig {
  /** Cluster DNS domain, e.g. `cluster.local`. */
  clusterDomain: string;
  /** Namespace of the control plane; part of every workload identity name. */
  controlPlaneNamespace: string;
  /** Trust domain of workload identities, e.g. `cluster.local`. */
  identityTrustDomain: string;
  clusterNetworks: string[];
  defaultPolicy: DefaultInboundPolicy;
  /** Networks kubelet probes come from; empty disables probe authorization. */
  probeNetworks: string[];
  /** Inbound protocol detection timeout, in ms. */
  detectTimeoutMs: number;
  /** Outbound: queue of each backend. */
  backendQueueCapacity: number;
  backendFailfastMs: number;
  /** Whether routes may honour `l5d-*` request headers that override retries and timeouts. */
  allowL5dRequestHeaders: boolean;
  /** Written into route status `controllerName`. */
  controllerName: string;
  /** EgressNetworks here apply to clients of every namespace that has none of its own. */
  globalEgressNetworkNamespace: string;
}

export const CONTROLLER_NAME = "linkerd.io/policy-controller";

export function defaultPolicyConfig(overrides: Partial<PolicyConfig> = {}): PolicyConfig {
  return {
    clusterDomain: "cluster.local",
    controlPlaneNamespace: DEFAULT_CONTROL_PLANE_NAMESPACE,
    identityTrustDomain: "cluster.local",
    clusterNetworks: [...DEFAULT_CLUSTER_NETWORKS],
    defaultPolicy: "all-unauthenticated",
    probeNetworks: ["0.0.0.0/0", "::/0"],
    detectTimeoutMs: 10_000,
    backendQueueCapacity: 100,
    backendFailfastMs: 3_000,
    allowL5dRequestHeaders: false,
    controllerName: CONTROLLER_NAME,
    globalEgressNetworkNamespace: "linkerd-egress",
    ...overrides,
  };
}

export function isDefaultPolicy(v: string): v is DefaultInboundPolicy {
  return (DEFAULT_INBOUND_POLICIES as readonly string[]).includes(v);
}
