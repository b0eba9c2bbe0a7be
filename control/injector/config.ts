/** The injector's resolved configuration: everything the patch depends on besides the pod. */
import { DEFAULT_CONTROL_PLANE_NAMESPACE } from "../../proto/control_plane.ts";
import { DEFAULT_CLUSTER_NETWORKS, type DefaultInboundPolicy } from "../../proto/env.ts";
import { DEFAULT_OPAQUE_PORTS, DEFAULT_PROXY_UID, Ports } from "../../proto/ports.ts";

export interface ResourceSpec {
  cpuRequest?: string;
  cpuLimit?: string;
  memoryRequest?: string;
  memoryLimit?: string;
  ephemeralStorageRequest?: string;
  ephemeralStorageLimit?: string;
}

export interface InjectorConfig {
  /** Version recorded in `linkerd.io/proxy-version` and `linkerd.io/created-by`. */
  version: string;
  controlPlaneNamespace: string;
  clusterDomain: string;
  trustDomain: string;
  /** PEM bundle given to every proxy as LINKERD2_PROXY_IDENTITY_TRUST_ANCHORS. */
  trustAnchorsPem: string;
  image: string;
  imagePullPolicy: "Always" | "IfNotPresent" | "Never";
  /** Command of the proxy container (runs proxy/main.ts in the image). */
  proxyCommand: string[];
  /** Command of the init container (runs init/main.ts in the image); flags are appended. */
  initCommand: string[];
  /** Command run by the classic-mode postStart hook to hold the app until the proxy is ready. */
  awaitCommand: string[];
  /** Command of the classic-mode preStop hook; the seconds to wait are appended. */
  sleepCommand: string[];
  /** Whether the API server supports native sidecars (restartPolicy: Always init containers). */
  nativeSidecars: boolean;
  proxyUid: number;
  defaultInboundPolicy: DefaultInboundPolicy;
  clusterNetworks: string[];
  /**
   * Whether meshed pods' IPv6 traffic goes through the proxy: init's `--ipv6` and the proxy's listen
   * addresses both follow it (proto/ip_families.ts). `--disable-ipv6` turns it off, as Linkerd's
   * `disableIPv6`.
   */
  ipv6: boolean;
  opaquePorts: number[];
  /** Inbound ports never redirected, besides the proxy's own admin and control ports. */
  ignoreInboundPorts: number[];
  ignoreOutboundPorts: number[];
  logLevel: string;
  logFormat: "plain" | "json";
  resources: ResourceSpec;
  /** Namespaces whose pods are never injected (the control plane's own, kube-system). */
  excludedNamespaces: string[];
  /**
   * Identities proxies let forward a caller's identity (WEFT_PROXY_INBOUND_TRUSTED_GATEWAY_IDENTITIES).
   * Empty by default: trusting a gateway is an explicit control-plane choice (issue 23), since anyone
   * who can run a pod under that identity could otherwise impersonate any caller.
   */
  trustedGatewayIdentities: string[];
}

/** Names of the control-plane services and their identities; the manifests create exactly these. */
export function controlPlaneNames(
  c: Pick<InjectorConfig, "controlPlaneNamespace" | "clusterDomain" | "trustDomain">,
) {
  const ns = c.controlPlaneNamespace;
  const svc = (name: string, port: number) => `${name}.${ns}.svc.${c.clusterDomain}.:${port}`;
  const id = (sa: string) => `${sa}.${ns}.serviceaccount.identity.${ns}.${c.trustDomain}`;
  return {
    destinationAddr: svc("weft-dst-headless", Ports.destination),
    policyAddr: svc("weft-policy", Ports.policy),
    identityAddr: svc("weft-identity-headless", Ports.identity),
    destinationName: id("weft-destination"),
    policyName: id("weft-destination"),
    identityName: id("weft-identity"),
    /** The tap component (ServiceAccount weft-tap): the only client proxies let observe. */
    tapName: id("weft-tap"),
  };
}

export function defaultInjectorConfig(trustAnchorsPem: string): InjectorConfig {
  return {
    version: "dev",
    controlPlaneNamespace: DEFAULT_CONTROL_PLANE_NAMESPACE,
    clusterDomain: "cluster.local",
    trustDomain: "cluster.local",
    trustAnchorsPem,
    image: "localhost/weft:dev",
    imagePullPolicy: "Never",
    proxyCommand: ["weft-proxy"],
    initCommand: ["weft-init"],
    awaitCommand: ["weft-await", "--timeout=120s", `--port=${Ports.proxyAdmin}`],
    // The image has no coreutils: the await helper also sleeps.
    sleepCommand: ["weft-await", "sleep"],
    nativeSidecars: true,
    proxyUid: DEFAULT_PROXY_UID,
    defaultInboundPolicy: "all-unauthenticated",
    clusterNetworks: [...DEFAULT_CLUSTER_NETWORKS],
    ipv6: true,
    opaquePorts: [...DEFAULT_OPAQUE_PORTS],
    ignoreInboundPorts: [],
    ignoreOutboundPorts: [],
    logLevel: "warn,linkerd=info,weft=info",
    logFormat: "plain",
    resources: { cpuRequest: "20m", memoryRequest: "32Mi", memoryLimit: "256Mi" },
    excludedNamespaces: ["kube-system", "weft"],
    trustedGatewayIdentities: [],
  };
}
