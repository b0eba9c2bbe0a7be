/**
 * Names of the proxy's environment variables, as linkerd2-proxy reads them. The injector writes
 * them and the proxy's main.ts reads them, so both take the names from here.
 */

const P = "LINKERD2_PROXY_";

export const ProxyEnv = {
  // Control-plane addresses and the server identities expected on them (NAME may be omitted only
  // for loopback addresses, which are spoken to in plaintext).
  destinationSvcAddr: `${P}DESTINATION_SVC_ADDR`,
  destinationSvcName: `${P}DESTINATION_SVC_NAME`,
  destinationContext: `${P}DESTINATION_CONTEXT`,
  destinationProfileSuffixes: `${P}DESTINATION_PROFILE_SUFFIXES`,
  destinationProfileNetworks: `${P}DESTINATION_PROFILE_NETWORKS`,
  destinationProfileInitialTimeout: `${P}DESTINATION_PROFILE_INITIAL_TIMEOUT`,
  policySvcAddr: `${P}POLICY_SVC_ADDR`,
  policySvcName: `${P}POLICY_SVC_NAME`,
  policyWorkload: `${P}POLICY_WORKLOAD`,
  policyClusterNetworks: `${P}POLICY_CLUSTER_NETWORKS`,
  identitySvcAddr: `${P}IDENTITY_SVC_ADDR`,
  identitySvcName: `${P}IDENTITY_SVC_NAME`,

  // Identity of this proxy.
  identityDir: `${P}IDENTITY_DIR`,
  identityTokenFile: `${P}IDENTITY_TOKEN_FILE`,
  identityTrustAnchors: `${P}IDENTITY_TRUST_ANCHORS`,
  identityLocalName: `${P}IDENTITY_LOCAL_NAME`,
  identityServerId: `${P}IDENTITY_SERVER_ID`,
  identityServerName: `${P}IDENTITY_SERVER_NAME`,
  identityMinRefresh: `${P}IDENTITY_MIN_REFRESH`,
  identityMaxRefresh: `${P}IDENTITY_MAX_REFRESH`,
  identityDisabled: `${P}IDENTITY_DISABLED`,

  // Listeners.
  inboundListenAddr: `${P}INBOUND_LISTEN_ADDR`,
  outboundListenAddr: `${P}OUTBOUND_LISTEN_ADDR`,
  outboundListenAddrs: `${P}OUTBOUND_LISTEN_ADDRS`,
  adminListenAddr: `${P}ADMIN_LISTEN_ADDR`,
  controlListenAddr: `${P}CONTROL_LISTEN_ADDR`,
  tapSvcName: `${P}TAP_SVC_NAME`,
  shutdownEndpointEnabled: `${P}SHUTDOWN_ENDPOINT_ENABLED`,
  /** How long a terminating proxy drains open connections before it exits. */
  shutdownGracePeriod: `${P}SHUTDOWN_GRACE_PERIOD`,

  // Inbound behaviour.
  inboundDefaultPolicy: `${P}INBOUND_DEFAULT_POLICY`,
  inboundPorts: `${P}INBOUND_PORTS`,
  inboundPortsDisableProtocolDetection: `${P}INBOUND_PORTS_DISABLE_PROTOCOL_DETECTION`,
  inboundIps: `${P}INBOUND_IPS`,
  inboundDetectTimeout: `${P}INBOUND_DETECT_TIMEOUT`,
  inboundConnectTimeout: `${P}INBOUND_CONNECT_TIMEOUT`,
  inboundDiscoveryIdleTimeout: `${P}INBOUND_DISCOVERY_IDLE_TIMEOUT`,
  inboundHttpQueueCapacity: `${P}INBOUND_HTTP_QUEUE_CAPACITY`,
  inboundHttpFailfastTimeout: `${P}INBOUND_HTTP_FAILFAST_TIMEOUT`,
  inboundAcceptKeepalive: `${P}INBOUND_ACCEPT_KEEPALIVE`,
  inboundConnectKeepalive: `${P}INBOUND_CONNECT_KEEPALIVE`,
  inboundConnectExpBackoffMin: `${P}INBOUND_CONNECT_EXP_BACKOFF_MIN`,
  inboundConnectExpBackoffMax: `${P}INBOUND_CONNECT_EXP_BACKOFF_MAX`,
  inboundConnectExpBackoffJitter: `${P}INBOUND_CONNECT_EXP_BACKOFF_JITTER`,
  /** Linkerd's gateway switch: the DNS suffixes (`svc.<cluster domain>.`) a gateway forwards to. */
  inboundGatewaySuffixes: `${P}INBOUND_GATEWAY_SUFFIXES`,

  // Outbound behaviour.
  outboundDetectTimeout: `${P}OUTBOUND_DETECT_TIMEOUT`,
  outboundConnectTimeout: `${P}OUTBOUND_CONNECT_TIMEOUT`,
  outboundDiscoveryIdleTimeout: `${P}OUTBOUND_DISCOVERY_IDLE_TIMEOUT`,
  outboundHttpQueueCapacity: `${P}OUTBOUND_HTTP_QUEUE_CAPACITY`,
  outboundHttpFailfastTimeout: `${P}OUTBOUND_HTTP_FAILFAST_TIMEOUT`,
  outboundTcpQueueCapacity: `${P}OUTBOUND_TCP_QUEUE_CAPACITY`,
  outboundTcpFailfastTimeout: `${P}OUTBOUND_TCP_FAILFAST_TIMEOUT`,
  outboundAcceptKeepalive: `${P}OUTBOUND_ACCEPT_KEEPALIVE`,
  outboundConnectKeepalive: `${P}OUTBOUND_CONNECT_KEEPALIVE`,
  outboundConnectExpBackoffMin: `${P}OUTBOUND_CONNECT_EXP_BACKOFF_MIN`,
  outboundConnectExpBackoffMax: `${P}OUTBOUND_CONNECT_EXP_BACKOFF_MAX`,
  outboundConnectExpBackoffJitter: `${P}OUTBOUND_CONNECT_EXP_BACKOFF_JITTER`,

  // Control-plane stream limits (not applied to loopback control planes).
  controlStreamInitialTimeout: `${P}CONTROL_STREAM_INITIAL_TIMEOUT`,
  controlStreamIdleTimeout: `${P}CONTROL_STREAM_IDLE_TIMEOUT`,
  controlStreamLifetime: `${P}CONTROL_STREAM_LIFETIME`,

  // Logging and runtime.
  log: `${P}LOG`,
  logFormat: `${P}LOG_FORMAT`,
  accessLog: `${P}ACCESS_LOG`,
  cores: `${P}CORES`,
} as const;

export type ProxyEnvName = (typeof ProxyEnv)[keyof typeof ProxyEnv];

/** weft's own proxy variables (no linkerd2-proxy equivalent), for multicluster (issue 23). */
export const WeftProxyEnv = {
  /**
   * `true`: the proxy is a multicluster gateway (also on when LINKERD2_PROXY_INBOUND_GATEWAY_SUFFIXES
   * is set, unless this says `false`); suffixes default to `svc.cluster.local.`.
   */
  inboundGateway: "WEFT_PROXY_INBOUND_GATEWAY",
  /**
   * Comma-separated identities whose connections may carry a forwarded client identity (the
   * transport header's weft extension): the multicluster gateways. Empty: the field is refused.
   */
  inboundTrustedGatewayIdentities: "WEFT_PROXY_INBOUND_TRUSTED_GATEWAY_IDENTITIES",
} as const;

/** Values accepted by LINKERD2_PROXY_INBOUND_DEFAULT_POLICY and the default-inbound-policy annotation. */
export const DEFAULT_INBOUND_POLICIES = [
  "all-unauthenticated",
  "all-authenticated",
  "cluster-unauthenticated",
  "cluster-authenticated",
  "deny",
  "audit",
] as const;
export type DefaultInboundPolicy = (typeof DEFAULT_INBOUND_POLICIES)[number];

/** Cluster networks assumed when none are configured (private and CGNAT ranges). */
export const DEFAULT_CLUSTER_NETWORKS: readonly string[] = [
  "10.0.0.0/8",
  "100.64.0.0/10",
  "172.16.0.0/12",
  "192.168.0.0/16",
  "fd00::/8",
];
