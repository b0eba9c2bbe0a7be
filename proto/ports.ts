/** Well-known ports shared by the proxy, the control plane, init and the injector. */
export const Ports = {
  /** Proxy inbound listener; iptables redirects inbound TCP here, meshed peers connect here directly. */
  proxyInbound: 4143,
  /** Proxy outbound listener; iptables redirects the app's outbound TCP here. */
  proxyOutbound: 4140,
  /** Proxy admin server: /live, /ready, /metrics. */
  proxyAdmin: 4191,
  /** Proxy control (tap) server. */
  proxyControl: 4190,
  /** Destination gRPC (Destination.Get, GetProfile). */
  destination: 8086,
  /** Policy gRPC (InboundServerPolicies, OutboundPolicies). */
  policy: 8090,
  /** Identity gRPC (Identity.Certify). */
  identity: 8080,
  // Each controller's admin server (/live, /ready, /metrics), Linkerd's numbers. Identity and policy share
  // 9990: they never run in the same pod (policy sits beside destination and the validator).
  /** Identity's admin server. */
  identityAdmin: 9990,
  /** Destination's admin server. */
  destinationAdmin: 9996,
  /** Policy's admin server. */
  policyAdmin: 9990,
  /** The ServiceProfile/policy validating webhook's admin server. */
  validatorAdmin: 9997,
  /** The proxy injector's admin server. */
  injectorAdmin: 9995,
  /** The tap component's HTTP API (the CLI reaches it through the API server's service proxy). */
  tap: 8089,
  /** The tap component's admin server. */
  tapAdmin: 9998,
  /** The dashboard's web server (Linkerd's viz web port). */
  dashboard: 8084,
  /** The dashboard's admin server (Linkerd's viz web admin port). */
  dashboardAdmin: 9994,
} as const;

/** Default UID the proxy runs as; init exempts its traffic from the outbound redirect. */
export const DEFAULT_PROXY_UID = 2102;

/** Inbound ports never redirected to the proxy: its own admin and control ports. */
export const DEFAULT_INBOUND_PORTS_TO_IGNORE: readonly number[] = [Ports.proxyControl, Ports.proxyAdmin];

/** Ports treated as opaque (no protocol detection) unless configured otherwise: server-speaks-first protocols. */
export const DEFAULT_OPAQUE_PORTS: readonly number[] = [25, 587, 3306, 4444, 5432, 6379, 9300, 11211];
