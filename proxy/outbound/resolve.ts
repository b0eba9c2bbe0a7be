/**
 * What an outbound connection's original destination is: a meshed endpoint (connect with mesh
 * TLS to its identity, through the peer's inbound port with a transport header when it asks for
 * opaque transport) or anything else (forward as plain TCP). The pure parts read the outbound
 * policy's view and endpoints; `resolveOutbound` asks the discovery watches, with a deadline.
 */
import type { Endpoint } from "../core/endpoint.ts";
import type { SocketAddr } from "../transport/orig_dst.ts";
import { addrKey, type Discovery } from "../discovery/clients.ts";

export type Target =
  | { kind: "plain"; ip: string; port: number; reason: string }
  | {
    kind: "meshed";
    ip: string;
    /** Where to connect: the peer's inbound port with opaque transport, else the target port. */
    connectPort: number;
    targetPort: number;
    identity: string;
    serverName: string;
    opaqueTransport: boolean;
    /**
     * A remote gateway's target (Destination's authority override): the transport header names
     * this host and port instead of `targetPort`, as Linkerd's client proxy does.
     */
    gateway?: { name: string; port: number };
  };

export class ResolveError extends Error {
  override name = "ResolveError";
}

/** Mesh target for an endpoint carrying a TLS identity; plain otherwise. */
export function endpointTarget(e: Endpoint): Target {
  const { ip, port, identity } = e;
  if (identity === undefined) {
    return { kind: "plain", ip, port, reason: "not_provided_by_service_discovery" };
  }
  // An authority override always travels in a transport header (Linkerd offers the ALPN for
  // either hint); without an inbound port the endpoint's own port is the gateway's.
  const gateway = e.authorityOverride;
  const opaqueTransport = e.opaqueTransportPort > 0 || gateway !== undefined;
  return {
    kind: "meshed",
    ip,
    connectPort: e.opaqueTransportPort > 0 ? e.opaqueTransportPort : port,
    targetPort: port,
    identity: identity.name,
    serverName: identity.serverName,
    opaqueTransport,
    ...(gateway ? { gateway: { name: gateway.name, port: gateway.port } } : {}),
  };
}

/** The transport header fields a meshed target's connection starts with (port and gateway name). */
export function headerTarget(t: Extract<Target, { kind: "meshed" }>): { port: number; name: string } {
  return t.gateway ? { port: t.gateway.port, name: t.gateway.name } : { port: t.targetPort, name: "" };
}

export function pickEndpoint(
  endpoints: Map<string, Endpoint>,
  prefer: SocketAddr,
  isDown?: (key: string) => boolean,
  random: () => number = Math.random,
): Endpoint | undefined {
  const exact = endpoints.get(addrKey(prefer.ip, prefer.port));
  if (exact) return exact;
  if (endpoints.size === 0) return undefined;
  // Endpoints whose connects fail are skipped while others remain (outbound/reachability.ts).
  let all = [...endpoints.entries()];
  if (isDown) {
    const up = all.filter(([k]) => !isDown(k));
    if (up.length > 0) all = up;
  }
  return all[Math.floor(random() * all.length)][1];
}

/** The target Destination.Get(`path`) gives for `dst` (plain when it knows no endpoint). */
export async function viaDestination(
  d: Discovery,
  path: string,
  dst: SocketAddr,
  timeoutMs: number,
  isDown?: (key: string) => boolean,
): Promise<Target> {
  const h = d.destination.subscribe(path);
  try {
    const v = await h.ready(timeoutMs);
    if (v.state === undefined) {
      if (v.status === "final") {
        return { kind: "plain", ip: dst.ip, port: dst.port, reason: "not_provided_by_service_discovery" };
      }
      throw new ResolveError(`no answer from Destination.Get(${path}) within ${timeoutMs}ms`);
    }
    const ep = pickEndpoint(v.state.endpoints, dst, isDown);
    if (!ep) {
      return { kind: "plain", ip: dst.ip, port: dst.port, reason: "not_provided_by_service_discovery" };
    }
    return endpointTarget(ep);
  } finally {
    h.release();
  }
}

/**
 * Resolves from the outbound policy for `dst` and, when it points at a balancer or an endpoint
 * without metadata, from Destination.Get. Cached state answers at once, including while the
 * control plane is away.
 */
export async function resolveOutbound(
  d: Discovery,
  dst: SocketAddr,
  timeoutMs: number,
  isDown?: (key: string) => boolean,
): Promise<Target> {
  const h = d.outbound.subscribe({ ip: dst.ip, port: dst.port });
  try {
    const v = await h.ready(timeoutMs);
    const self = addrKey(dst.ip, dst.port);
    if (v.state === undefined) {
      if (v.status !== "final") {
        throw new ResolveError(`no outbound policy for ${self} within ${timeoutMs}ms`);
      }
      return await viaDestination(d, self, dst, timeoutMs, isDown);
    }
    const b = v.state.l4;
    if (b?.kind === "balancer") return await viaDestination(d, b.path, dst, timeoutMs, isDown);
    if (b?.kind === "forward" && b.endpoint.identity) return endpointTarget(b.endpoint);
    return await viaDestination(d, self, dst, timeoutMs, isDown);
  } finally {
    h.release();
  }
}
