/**
 * The proxy's resolved configuration, read from the LINKERD2_PROXY_* variables (names from
 * proto/env.ts). Only proxy/main.ts reads the environment; everything else gets this object.
 */
import {
  DEFAULT_INBOUND_POLICIES,
  type DefaultInboundPolicy,
  ProxyEnv,
  WeftProxyEnv,
} from "../../proto/env.ts";
import { Ports } from "../../proto/ports.ts";
import { TRUST_ROOTS_DIR_ENV } from "../../proto/trust_roots.ts";
import { X509Certificate } from "node:crypto";
import {
  type Cidr,
  ConfigError,
  type ControlAddr,
  isIpv4,
  isIpv6,
  isLoopbackHost,
  type ListenAddr,
  parseBool,
  parseCidrList,
  parseControlAddr,
  parseDuration,
  parseIdentityName,
  parsePortSet,
  parseRatio,
  parseSocketAddr,
} from "./parse.ts";

/** linkerd2-proxy's drain limit on shutdown. */
export const SHUTDOWN_GRACE_PERIOD_ENV = ProxyEnv.shutdownGracePeriod;

export interface ControlService {
  addr: ControlAddr;
  /** Expected server identity; undefined for loopback (plaintext). */
  name: string | undefined;
  plaintext: boolean;
}

export interface Backoff {
  minMs: number;
  maxMs: number;
  jitter: number;
}

export interface ProxyConfig {
  destination: ControlService;
  policy: ControlService;
  identitySvc: ControlService;
  policyWorkload: string;
  destinationContext: string;
  identity: {
    localName: string;
    trustAnchorsPem: string;
    /** The mounted trust-roots ConfigMap to watch (issue 21), when the injector set it. */
    trustRootsDir?: string;
    dir: string;
    tokenFile: string;
    minRefreshMs: number;
    maxRefreshMs: number;
  };
  inboundListen: ListenAddr;
  outboundListen: ListenAddr[];
  adminListen: ListenAddr;
  /** The tap server's address (LINKERD2_PROXY_CONTROL_LISTEN_ADDR); set by `parseConfig`. */
  controlListen?: ListenAddr;
  /** LINKERD2_PROXY_TAP_SVC_NAME: the only identity allowed to tap; without it, no tap server. */
  tapSvcName?: string;
  inboundDefaultPolicy: DefaultInboundPolicy;
  clusterNetworks: Cidr[];
  inboundPorts: Set<number>;
  opaquePorts: Set<number>;
  inboundIps: string[] | undefined;
  inboundDetectTimeoutMs: number;
  outboundDetectTimeoutMs: number;
  inboundConnectTimeoutMs: number;
  outboundConnectTimeoutMs: number;
  inboundDiscoveryIdleTimeoutMs: number;
  outboundDiscoveryIdleTimeoutMs: number;
  controlBackoff: Backoff;
  controlStream: { initialTimeoutMs?: number; idleTimeoutMs?: number; lifetimeMs?: number };
  shutdownEndpointEnabled: boolean;
  shutdownGracePeriodMs: number;
  /** LINKERD2_PROXY_ACCESS_LOG: the inbound HTTP access log's format; undefined: off. */
  accessLog: "apache" | "json" | undefined;
  /**
   * Multicluster gateway mode (off: undefined): direct connections whose transport header names
   * `<svc>.<ns>.<suffix>` are forwarded; suffixes are `svc.<cluster domain>` without the final dot.
   */
  gateway?: { suffixes: string[] };
  /** Peers whose connections may carry a forwarded client identity (WEFT_PROXY_INBOUND_TRUSTED_GATEWAY_IDENTITIES). */
  trustedGatewayIdentities: Set<string>;
}

export type Env = (name: string) => string | undefined;

/**
 * The ports the proxy itself serves (inbound, outbound, admin, and the control port it reserves),
 * which the inbound side must never dial on a client's behalf.
 */
export function proxyOwnPorts(config: ProxyConfig): Set<number> {
  return new Set([
    config.inboundListen.port,
    ...config.outboundListen.map((a) => a.port),
    config.adminListen.port,
    ...(config.controlListen ? [config.controlListen.port] : []),
    Ports.proxyInbound,
    Ports.proxyOutbound,
    Ports.proxyAdmin,
    Ports.proxyControl,
  ]);
}

function required(env: Env, name: string): string {
  const v = env(name);
  if (v === undefined || v === "") throw new ConfigError(name, "must be set");
  return v;
}

function optional(env: Env, name: string): string | undefined {
  const v = env(name);
  return v === undefined || v === "" ? undefined : v;
}

function controlService(env: Env, addrVar: string, nameVar: string): ControlService {
  const addr = parseControlAddr(addrVar, required(env, addrVar));
  const plaintext = isLoopbackHost(addr.host);
  const rawName = optional(env, nameVar);
  if (!plaintext && rawName === undefined) {
    throw new ConfigError(
      nameVar,
      `must be set because ${addrVar}=${addr.host}:${addr.port} is not loopback`,
    );
  }
  return { addr, name: rawName === undefined ? undefined : parseIdentityName(nameVar, rawName), plaintext };
}

/** At least one parsable certificate; returns the PEM unchanged. */
export function checkTrustAnchors(variable: string, pem: string): string {
  const blocks = pem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
  if (blocks.length === 0) throw new ConfigError(variable, "contains no PEM certificate");
  for (const b of blocks) {
    try {
      new X509Certificate(b);
    } catch (e) {
      throw new ConfigError(variable, `has a certificate that does not parse: ${(e as Error).message}`);
    }
  }
  return pem;
}

function parseIpList(variable: string, text: string): string[] {
  return text.split(",").map((s) => s.trim()).filter((s) => s !== "").map((ip) => {
    if (!isIpv4(ip) && !isIpv6(ip)) throw new ConfigError(variable, `"${ip}" is not an IP address`);
    return ip;
  });
}

function duration(env: Env, name: string, dflt: number): number {
  const v = optional(env, name);
  return v === undefined ? dflt : parseDuration(name, v);
}

export function resolveProxyConfig(env: Env): ProxyConfig {
  const E = ProxyEnv;
  if (optional(env, E.identityDisabled) !== undefined) {
    throw new ConfigError(E.identityDisabled, "identity can no longer be disabled; unset it");
  }
  let localName: string;
  const ln = optional(env, E.identityLocalName);
  if (ln !== undefined) localName = parseIdentityName(E.identityLocalName, ln);
  else {
    const id = parseIdentityName(E.identityServerId, required(env, E.identityServerId));
    const sn = parseIdentityName(E.identityServerName, required(env, E.identityServerName));
    if (id !== sn) {
      throw new ConfigError(
        E.identityServerName,
        `must equal ${E.identityServerId} (${id}) for Linkerd identity`,
      );
    }
    localName = id;
  }
  const policyName = optional(env, E.inboundDefaultPolicy) ?? "all-unauthenticated";
  if (!(DEFAULT_INBOUND_POLICIES as readonly string[]).includes(policyName)) {
    throw new ConfigError(
      E.inboundDefaultPolicy,
      `"${policyName}" is not one of ${DEFAULT_INBOUND_POLICIES.join(", ")}`,
    );
  }
  const clusterNetworksText = optional(env, E.policyClusterNetworks);
  if (policyName.startsWith("cluster-") && clusterNetworksText === undefined) {
    throw new ConfigError(E.policyClusterNetworks, `must be set for ${E.inboundDefaultPolicy}=${policyName}`);
  }
  const outboundText = optional(env, E.outboundListenAddrs) ?? optional(env, E.outboundListenAddr);
  const outboundListen = outboundText === undefined
    ? [{ ip: "127.0.0.1", port: Ports.proxyOutbound }]
    : outboundText.split(",").map((s) =>
      parseSocketAddr(
        optional(env, E.outboundListenAddrs) ? E.outboundListenAddrs : E.outboundListenAddr,
        s.trim(),
      )
    );
  if (outboundListen.length > 2) throw new ConfigError(E.outboundListenAddrs, "takes one or two addresses");
  const inboundIpsText = optional(env, E.inboundIps);
  const streamDur = (name: string) => {
    const v = optional(env, name);
    return v === undefined ? undefined : parseDuration(name, v);
  };
  const shutdown = optional(env, E.shutdownEndpointEnabled);
  const minMs = duration(env, E.outboundConnectExpBackoffMin, 100);
  const maxMs = duration(env, E.outboundConnectExpBackoffMax, 60_000);
  if (maxMs < minMs) throw new ConfigError(E.outboundConnectExpBackoffMax, "is less than the minimum");
  const jitterText = optional(env, E.outboundConnectExpBackoffJitter);
  return {
    destination: controlService(env, E.destinationSvcAddr, E.destinationSvcName),
    policy: controlService(env, E.policySvcAddr, E.policySvcName),
    identitySvc: controlService(env, E.identitySvcAddr, E.identitySvcName),
    policyWorkload: required(env, E.policyWorkload),
    destinationContext: optional(env, E.destinationContext) ?? "",
    identity: {
      localName,
      trustAnchorsPem: checkTrustAnchors(E.identityTrustAnchors, required(env, E.identityTrustAnchors)),
      trustRootsDir: optional(env, TRUST_ROOTS_DIR_ENV),
      dir: required(env, E.identityDir),
      tokenFile: required(env, E.identityTokenFile),
      minRefreshMs: duration(env, E.identityMinRefresh, 10_000),
      maxRefreshMs: duration(env, E.identityMaxRefresh, 86_400_000),
    },
    inboundListen: parseSocketAddr(
      E.inboundListenAddr,
      optional(env, E.inboundListenAddr) ?? `0.0.0.0:${Ports.proxyInbound}`,
    ),
    outboundListen,
    adminListen: parseSocketAddr(
      E.adminListenAddr,
      optional(env, E.adminListenAddr) ?? `127.0.0.1:${Ports.proxyAdmin}`,
    ),
    controlListen: parseSocketAddr(
      E.controlListenAddr,
      optional(env, E.controlListenAddr) ?? `0.0.0.0:${Ports.proxyControl}`,
    ),
    tapSvcName: optional(env, E.tapSvcName),
    inboundDefaultPolicy: policyName as DefaultInboundPolicy,
    clusterNetworks: clusterNetworksText === undefined
      ? []
      : parseCidrList(E.policyClusterNetworks, clusterNetworksText),
    inboundPorts: parsePortSet(E.inboundPorts, optional(env, E.inboundPorts) ?? ""),
    opaquePorts: parsePortSet(
      E.inboundPortsDisableProtocolDetection,
      optional(env, E.inboundPortsDisableProtocolDetection) ?? "",
    ),
    inboundIps: inboundIpsText === undefined ? undefined : parseIpList(E.inboundIps, inboundIpsText),
    inboundDetectTimeoutMs: duration(env, E.inboundDetectTimeout, 10_000),
    outboundDetectTimeoutMs: duration(env, E.outboundDetectTimeout, 10_000),
    inboundConnectTimeoutMs: duration(env, E.inboundConnectTimeout, 300),
    outboundConnectTimeoutMs: duration(env, E.outboundConnectTimeout, 1000),
    inboundDiscoveryIdleTimeoutMs: duration(env, E.inboundDiscoveryIdleTimeout, 90_000),
    outboundDiscoveryIdleTimeoutMs: duration(env, E.outboundDiscoveryIdleTimeout, 5000),
    controlBackoff: {
      minMs,
      maxMs,
      jitter: jitterText === undefined ? 0.1 : parseRatio(E.outboundConnectExpBackoffJitter, jitterText),
    },
    controlStream: {
      initialTimeoutMs: streamDur(E.controlStreamInitialTimeout),
      idleTimeoutMs: streamDur(E.controlStreamIdleTimeout),
      lifetimeMs: streamDur(E.controlStreamLifetime),
    },
    shutdownEndpointEnabled: shutdown === undefined ? false : parseBool(E.shutdownEndpointEnabled, shutdown),
    shutdownGracePeriodMs: duration(env, SHUTDOWN_GRACE_PERIOD_ENV, 120_000),
    accessLog: accessLogFormat(optional(env, E.accessLog)),
    ...gatewayMode(env),
    trustedGatewayIdentities: new Set(
      (optional(env, WeftProxyEnv.inboundTrustedGatewayIdentities) ?? "").split(",").map((s) => s.trim())
        .filter((s) => s !== "").map((s) =>
          parseIdentityName(WeftProxyEnv.inboundTrustedGatewayIdentities, s)
        ),
    ),
  };
}

/**
 * Gateway mode: WEFT_PROXY_INBOUND_GATEWAY=true, or Linkerd's LINKERD2_PROXY_INBOUND_GATEWAY_SUFFIXES
 * set (unless WEFT_PROXY_INBOUND_GATEWAY=false). Suffixes default to `svc.cluster.local.`.
 */
function gatewayMode(env: Env): { gateway?: { suffixes: string[] } } {
  const flagText = optional(env, WeftProxyEnv.inboundGateway);
  const flag = flagText === undefined ? undefined : parseBool(WeftProxyEnv.inboundGateway, flagText);
  const suffixText = optional(env, ProxyEnv.inboundGatewaySuffixes);
  if (flag === false || (flag === undefined && suffixText === undefined)) return {};
  const suffixes = (suffixText ?? "svc.cluster.local.").split(",").map((s) => s.trim().toLowerCase())
    .filter((s) => s !== "").map((s) => {
      const bare = s.endsWith(".") ? s.slice(0, -1) : s;
      if (!/^svc(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)+$/.test(bare)) {
        throw new ConfigError(ProxyEnv.inboundGatewaySuffixes, `"${s}" is not svc.<cluster domain>.`);
      }
      return bare;
    });
  if (suffixes.length === 0) throw new ConfigError(ProxyEnv.inboundGatewaySuffixes, "names no suffix");
  return { gateway: { suffixes } };
}

function accessLogFormat(v: string | undefined): "apache" | "json" | undefined {
  if (v === undefined || v === "apache" || v === "json") return v;
  throw new ConfigError(ProxyEnv.accessLog, `"${v}" is not an access log format; want apache or json`);
}
