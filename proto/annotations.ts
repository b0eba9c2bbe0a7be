/** Kubernetes annotation and label keys of the mesh, as Linkerd users already write them. */

export const Annotations = {
  /** `enabled`, `ingress` or `disabled`, on a pod or its namespace. */
  inject: "linkerd.io/inject",
  // Recorded by the injector on the pods it mutated.
  proxyVersion: "linkerd.io/proxy-version",
  trustRootSha256: "linkerd.io/trust-root-sha256",
  createdBy: "linkerd.io/created-by",
  identityMode: "linkerd.io/identity-mode",
  injectedDefaults: "weft.io/injected-defaults",

  // Proxy configuration overrides, on a pod or its namespace.
  opaquePorts: "config.linkerd.io/opaque-ports",
  skipInboundPorts: "config.linkerd.io/skip-inbound-ports",
  skipOutboundPorts: "config.linkerd.io/skip-outbound-ports",
  skipSubnets: "config.linkerd.io/skip-subnets",
  podInboundPorts: "config.linkerd.io/pod-inbound-ports",
  defaultInboundPolicy: "config.linkerd.io/default-inbound-policy",
  proxyUid: "config.linkerd.io/proxy-uid",
  proxyGid: "config.linkerd.io/proxy-gid",
  proxyCpuRequest: "config.linkerd.io/proxy-cpu-request",
  proxyCpuLimit: "config.linkerd.io/proxy-cpu-limit",
  proxyMemoryRequest: "config.linkerd.io/proxy-memory-request",
  proxyMemoryLimit: "config.linkerd.io/proxy-memory-limit",
  proxyEphemeralStorageRequest: "config.linkerd.io/proxy-ephemeral-storage-request",
  proxyEphemeralStorageLimit: "config.linkerd.io/proxy-ephemeral-storage-limit",
  proxyLogLevel: "config.linkerd.io/proxy-log-level",
  proxyLogFormat: "config.linkerd.io/proxy-log-format",
  accessLog: "config.linkerd.io/access-log",
  proxyAwait: "config.linkerd.io/proxy-await",
  proxyInboundConnectTimeout: "config.linkerd.io/proxy-inbound-connect-timeout",
  proxyOutboundConnectTimeout: "config.linkerd.io/proxy-outbound-connect-timeout",
  proxyImage: "config.linkerd.io/proxy-image",
  proxyVersionOverride: "config.linkerd.io/proxy-version",
  imagePullPolicy: "config.linkerd.io/image-pull-policy",
  adminPort: "config.linkerd.io/admin-port",
  controlPort: "config.linkerd.io/control-port",
  inboundPort: "config.linkerd.io/inbound-port",
  outboundPort: "config.linkerd.io/outbound-port",
  shutdownGracePeriod: "config.linkerd.io/shutdown-grace-period",
  /** `enabled` turns on the proxy's POST /shutdown (loopback peers only); off unless asked for. */
  proxyAdminShutdown: "config.linkerd.io/proxy-admin-shutdown",
  /** `true`: the proxy is a multicluster gateway (Linkerd's; the gateway Deployment carries it). */
  enableGateway: "config.linkerd.io/enable-gateway",
  waitBeforeExitSeconds: "config.alpha.linkerd.io/proxy-wait-before-exit-seconds",
  enableNativeSidecar: "config.beta.linkerd.io/proxy-enable-native-sidecar",
  /** Namespace label that turns the admission webhooks off for that namespace. */
  admissionWebhooks: "config.linkerd.io/admission-webhooks",
} as const;

export const Labels = {
  controlPlaneNs: "linkerd.io/control-plane-ns",
  controlPlaneComponent: "linkerd.io/control-plane-component",
  workloadNs: "linkerd.io/workload-ns",
  /** Prefix of `linkerd.io/proxy-<owner kind>=<owner name>`. */
  proxyOwnerPrefix: "linkerd.io/proxy-",
} as const;

export const INJECT_VALUES = ["enabled", "ingress", "disabled"] as const;
export type InjectValue = (typeof INJECT_VALUES)[number];
