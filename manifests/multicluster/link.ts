/**
 * What `weft multicluster link` writes into the source cluster (issue 23), pure: the kubeconfig the service mirror
 * and destination use to reach the target (the target's remote-access ServiceAccount token), its two Secret copies
 * (`weft-multicluster` for the service mirror, the control plane's namespace for destination) and the Link object.
 */
import { stringify } from "yaml";
import {
  CREDENTIALS_SECRET_TYPE,
  DEFAULT_FEDERATED_SELECTOR,
  DEFAULT_REMOTE_DISCOVERY_SELECTOR,
  DEFAULT_SELECTOR,
  LINK_GROUP,
  LINK_VERSION,
} from "../../control/multicluster/link.ts";
import type { Manifest } from "../kinds.ts";
import { Credentials } from "../../proto/multicluster.ts";
import { MC_NAMESPACE, PROBE_PATH, PROBE_PERIOD } from "./install.ts";

export const CLUSTER_NAME_LABEL = Credentials.clusterNameLabel;
export const CLUSTER_DOMAIN_ANNOTATION = Credentials.clusterDomainAnnotation;
export const TRUST_DOMAIN_ANNOTATION = Credentials.trustDomainAnnotation;
export const CREDENTIALS_KEY = Credentials.kubeconfigKey;

/** DNS-1123 label, and short enough that `weft-service-mirror-<name>` and `<svc>-<name>` stay valid. */
export function validClusterName(name: string): string | undefined {
  if (!/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(name)) {
    return `"${name}" is not a DNS label (lower-case letters, digits and '-')`;
  }
  if (name.length > 32) return `"${name}" is longer than 32 characters`;
  return undefined;
}

export function credentialsSecretName(cluster: string): string {
  return `cluster-credentials-${cluster}`;
}

export interface TargetGateway {
  /** IPs or DNS names (the Link keeps them comma-separated, as Linkerd). */
  addresses: string[];
  port: number;
  identity: string;
  probePort: number;
  probePath: string;
  probePeriod: string;
}

export interface LinkPlan {
  clusterName: string;
  /** The target's API server as the source's pods reach it. */
  apiServer: string;
  /** PEM of the target API server's CA. */
  caPem: string;
  token: string;
  targetClusterDomain: string;
  targetTrustDomain: string;
  targetControlPlaneNamespace: string;
  /** Absent: a link for flat and federated services only. */
  gateway?: TargetGateway;
  /** The source's control plane namespace (destination reads the second credentials copy there). */
  sourceControlPlaneNamespace: string;
}

function b64(text: string): string {
  const bytes = new TextEncoder().encode(text);
  let bin = "";
  for (const b of bytes) bin += String.fromCharCode(b);
  return btoa(bin);
}

/** A kubeconfig with one context: the target's API server, its CA, the remote-access token. */
export function credentialsKubeconfig(
  p: Pick<LinkPlan, "clusterName" | "apiServer" | "caPem" | "token">,
): string {
  const user = `weft-service-mirror-remote-access-${p.clusterName}`;
  return stringify({
    apiVersion: "v1",
    kind: "Config",
    clusters: [{
      name: p.clusterName,
      cluster: { server: p.apiServer, "certificate-authority-data": b64(p.caPem) },
    }],
    users: [{ name: user, user: { token: p.token } }],
    contexts: [{ name: p.clusterName, context: { cluster: p.clusterName, user } }],
    "current-context": p.clusterName,
  });
}

export function credentialsSecrets(p: LinkPlan): Manifest[] {
  const kubeconfig = credentialsKubeconfig(p);
  return [MC_NAMESPACE, p.sourceControlPlaneNamespace].map((namespace) => ({
    apiVersion: "v1",
    kind: "Secret",
    metadata: {
      name: credentialsSecretName(p.clusterName),
      namespace,
      labels: { [CLUSTER_NAME_LABEL]: p.clusterName, "linkerd.io/extension": "multicluster" },
      annotations: {
        [CLUSTER_DOMAIN_ANNOTATION]: p.targetClusterDomain,
        [TRUST_DOMAIN_ANNOTATION]: p.targetTrustDomain,
      },
    },
    type: CREDENTIALS_SECRET_TYPE,
    data: { [CREDENTIALS_KEY]: b64(kubeconfig) },
  }));
}

export function linkObject(p: LinkPlan): Manifest {
  const g = p.gateway;
  return {
    apiVersion: `${LINK_GROUP}/${LINK_VERSION}`,
    kind: "Link",
    metadata: {
      name: p.clusterName,
      namespace: MC_NAMESPACE,
      labels: { [CLUSTER_NAME_LABEL]: p.clusterName, "linkerd.io/extension": "multicluster" },
    },
    spec: {
      targetClusterName: p.clusterName,
      targetClusterDomain: p.targetClusterDomain,
      targetClusterLinkerdNamespace: p.targetControlPlaneNamespace,
      clusterCredentialsSecret: credentialsSecretName(p.clusterName),
      // Linkerd's Link keeps ports as strings.
      gatewayAddress: g ? g.addresses.join(",") : "",
      gatewayPort: g ? String(g.port) : "",
      gatewayIdentity: g?.identity ?? "",
      probeSpec: {
        path: g?.probePath ?? PROBE_PATH,
        port: g ? String(g.probePort) : "",
        period: g?.probePeriod ?? PROBE_PERIOD,
      },
      selector: DEFAULT_SELECTOR,
      remoteDiscoverySelector: DEFAULT_REMOTE_DISCOVERY_SELECTOR,
      federatedServiceSelector: DEFAULT_FEDERATED_SELECTOR,
    },
  };
}
