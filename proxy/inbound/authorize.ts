/**
 * Connection-level inbound authorization: a port's Server policy (from WatchPort, or the default
 * policy until one arrives) compiled into matchers, and the per-connection decision.
 */
import type { Authz, Server } from "../../proto/gen_messages/inbound.ts";
import type { IPNetwork } from "../../proto/gen_messages/net.ts";
import type { DefaultInboundPolicy } from "../../proto/env.ts";
import { fromIpAddress } from "../../proto/ip.ts";
import type { Cidr } from "../config/parse.ts";
import { ipToBigint, isLoopbackIp, makeNet, type Net, netContains } from "./cidr.ts";

type Authn =
  | { kind: "unauthenticated" }
  | { kind: "tls_any" }
  | { kind: "identities"; names: Set<string>; suffixes: string[][] };

export interface CompiledAuthz {
  name: string;
  kind: string;
  networks: { net: Net; except: Net[] }[];
  authn: Authn;
}

export type PortProtocol = "detect" | "opaque" | "tls" | "http1" | "http2" | "grpc";

export interface PortPolicy {
  serverName: string;
  serverKind: string;
  protocol: PortProtocol;
  authorizations: CompiledAuthz[];
}

/**
 * What part of a Server message the proxy could not compile: a metric label, so a small fixed
 * set (the detail goes to the log).
 */
export type InvalidPolicyReason =
  | "protocol"
  | "metadata"
  | "network"
  | "authentication"
  | "route_match"
  | "route_filter"
  | "rate_limit"
  | "malformed";

export class PolicyError extends Error {
  override name = "PolicyError";
  constructor(message: string, readonly reason: InvalidPolicyReason = "malformed") {
    super(message);
  }
}

export interface ConnMeta {
  clientIp: string;
  /** undefined: not mesh TLS (plaintext or passthrough). */
  tls: { clientId: string | undefined } | undefined;
}

export type Decision =
  | { allow: true; authzName: string; authzKind: string; audited: boolean }
  | { allow: false; reason: string };

const ALL_V4 = makeNet("0.0.0.0", 0);
const ALL_V6 = makeNet("::", 0);

function nets(cidrs: Cidr[]): CompiledAuthz["networks"] {
  return cidrs.map((c) => ({ net: makeNet(c.ip, c.prefix), except: [] }));
}

/**
 * What a port gets when its Server message cannot be compiled (Linkerd's invalid server policy):
 * no authorization, so every connection and every request is denied (HTTP 403, gRPC
 * PERMISSION_DENIED, TCP closed), never the last valid policy or the cluster default. The
 * message's protocol is kept when it names one (Linkerd uses `detect`), so TCP clients of an
 * opaque port are refused at once and HTTP clients of an HTTP port get their answer.
 */
export function invalidPolicy(protocol: PortProtocol = "detect"): PortPolicy {
  return { serverName: "invalid", serverKind: "default", protocol, authorizations: [] };
}

/** The policy a port has until the control plane says otherwise (LINKERD2_PROXY_INBOUND_DEFAULT_POLICY). */
export function defaultPolicy(
  name: DefaultInboundPolicy,
  clusterNetworks: Cidr[],
  opaque: boolean,
): PortPolicy {
  const everywhere = [{ net: ALL_V4, except: [] }, { net: ALL_V6, except: [] }];
  const authz = (networks: CompiledAuthz["networks"], authn: Authn): CompiledAuthz[] => [{
    name,
    kind: "default",
    networks,
    authn,
  }];
  const anyId: Authn = { kind: "identities", names: new Set(), suffixes: [[]] };
  const table: Record<DefaultInboundPolicy, CompiledAuthz[]> = {
    "all-unauthenticated": authz(everywhere, { kind: "unauthenticated" }),
    "all-authenticated": authz(everywhere, anyId),
    "cluster-unauthenticated": authz(nets(clusterNetworks), { kind: "unauthenticated" }),
    "cluster-authenticated": authz(nets(clusterNetworks), anyId),
    "deny": [],
    // Audit allows everyone; the matched "audit" rule marks the connection as audited.
    "audit": authz(everywhere, { kind: "unauthenticated" }),
  };
  return {
    serverName: name,
    serverKind: "default",
    protocol: opaque ? "opaque" : "detect",
    authorizations: table[name],
  };
}

/** A network of an authorization; throws PolicyError("network") naming what is wrong. */
function compileNet(n: IPNetwork | undefined, what: string): Net {
  if (!n?.ip?.ip) throw new PolicyError(`${what} has no address`, "network");
  const ip = fromIpAddress(n.ip);
  const max = ip.includes(":") ? 128 : 32;
  if (!Number.isInteger(n.prefixLen) || n.prefixLen < 0 || n.prefixLen > max) {
    throw new PolicyError(`${what} ${ip}/${n.prefixLen}: prefix length is not in 0..${max}`, "network");
  }
  return makeNet(ip, n.prefixLen);
}

function compileAuthz(a: Authz, i: number): CompiledAuthz {
  if (a.networks.length === 0) throw new PolicyError(`authorization ${i} has no networks`, "network");
  const networks = a.networks.map((n, j) => ({
    net: compileNet(n.net, `authorization ${i} network ${j}`),
    except: n.except.map((e, k) => compileNet(e, `authorization ${i} network ${j} except ${k}`)),
  }));
  const permit = a.authentication?.permit;
  let authn: Authn;
  // An authentication kind this proxy does not know decodes as no authentication at all.
  if (!permit) {
    throw new PolicyError(`authorization ${i} has no authentication this proxy knows`, "authentication");
  }
  if (permit.$case === "unauthenticated") authn = { kind: "unauthenticated" };
  else {
    const clients = permit.value.clients;
    if (!clients) {
      throw new PolicyError(`authorization ${i} meshTLS has no clients this proxy knows`, "authentication");
    }
    authn = clients.$case === "unauthenticated" ? { kind: "tls_any" } : {
      kind: "identities",
      names: new Set(clients.value.identities.map((x) => x.name)),
      suffixes: clients.value.suffixes.map((s) => s.parts),
    };
  }
  const meta = a.metadata?.kind;
  const name = meta?.$case === "default"
    ? meta.value
    : meta?.$case === "resource"
    ? meta.value.name
    : a.labels["name"] ?? `authz-${i}`;
  const kind = meta?.$case === "resource" ? meta.value.kind.toLowerCase() : a.labels["kind"] ?? "default";
  return { name, kind, networks, authn };
}

/** Validates and compiles a Server message as the proxy does; throws PolicyError when invalid. */
export function compileServer(s: Server): PortPolicy {
  const kind = s.protocol?.kind;
  if (!kind) throw new PolicyError("server has no protocol this proxy knows", "protocol");
  if (kind.$case === "detect" && !kind.value.timeout) {
    throw new PolicyError("detect protocol has no timeout", "protocol");
  }
  const name = s.labels["name"];
  if (!name) throw new PolicyError("server labels have no name", "metadata");
  return {
    serverName: name,
    serverKind: s.labels["kind"] ?? "server",
    protocol: kind.$case,
    authorizations: s.authorizations.map(compileAuthz),
  };
}

function suffixMatch(id: string, parts: string[]): boolean {
  if (parts.length === 0) return true;
  return id.endsWith(`.${parts.join(".")}`);
}

function authnOk(a: Authn, tls: ConnMeta["tls"]): boolean {
  switch (a.kind) {
    case "unauthenticated":
      return true;
    case "tls_any":
      return tls !== undefined;
    case "identities": {
      const id = tls?.clientId;
      if (id === undefined) return false;
      return a.names.has(id) || a.suffixes.some((s) => suffixMatch(id, s));
    }
  }
}

export function authorize(policy: PortPolicy, conn: ConnMeta): Decision {
  if (isLoopbackIp(conn.clientIp)) {
    return { allow: true, authzName: "localhost", authzKind: "default", audited: false };
  }
  const ip = ipToBigint(conn.clientIp);
  for (const a of policy.authorizations) {
    const inNet = a.networks.some((n) => netContains(n.net, ip) && !n.except.some((e) => netContains(e, ip)));
    if (inNet && authnOk(a.authn, conn.tls)) {
      // Linkerd's policy controller expresses audit mode as a default authorization named "audit".
      const audited = a.kind === "default" && a.name === "audit";
      return { allow: true, authzName: a.name, authzKind: a.kind, audited };
    }
  }
  const who = conn.tls?.clientId ?? (conn.tls ? "TLS without identity" : "plaintext");
  return {
    allow: false,
    reason: `no authorization on server ${policy.serverName} permits ${conn.clientIp} (${who})`,
  };
}
