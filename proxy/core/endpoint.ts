/**
 * One endpoint as the proxy uses it, converted once from Destination's `WeightedAddr` where
 * discovery receives it (and where a policy names a forward address): the stacks read these
 * fields, never the generated message.
 */
import type { WeightedAddr } from "../../proto/gen_messages/destination.ts";
import { fromIpAddress } from "../../proto/ip.ts";

export interface Endpoint {
  readonly ip: string;
  readonly port: number;
  /** Mesh identity (DNS-like name) and TLS server name, when the endpoint is meshed. */
  readonly identity: { readonly name: string; readonly serverName: string } | undefined;
  /** The peer proxy's inbound port for opaque transport, 0 when it did not ask for it. */
  readonly opaqueTransportPort: number;
  /** The peer proxy takes HTTP/2 (Linkerd's `h2` protocol hint): HTTP/1 is upgraded to it. */
  readonly h2: boolean;
  /**
   * A remote gateway's target (Destination's `authority_override`, `host:port`): connections go
   * to the endpoint with opaque transport, and the transport header names this host and port.
   * Undefined for ordinary endpoints and for an override without a port (which Linkerd ignores).
   */
  readonly authorityOverride?: { readonly name: string; readonly port: number };
  /** Labels for the endpoint's metrics (namespace, service, pod, …). */
  readonly metricLabels: Readonly<Record<string, string>>;
}

/** The endpoint of a Destination address; undefined when it carries no IP. */
export function endpointFromWire(w: WeightedAddr, setLabels?: Record<string, string>): Endpoint | undefined {
  const a = w.addr;
  if (!a?.ip) return undefined;
  const id = w.tlsIdentity;
  const name = id?.strategy?.$case === "dnsLikeIdentity" ? id.strategy.value.name : undefined;
  const serverName = id?.serverName?.name || name;
  const inbound = w.protocolHint?.opaqueTransport?.inboundPort ?? 0;
  const authorityOverride = parseAuthority(w.authorityOverride?.authorityOverride ?? "");
  return {
    ip: fromIpAddress(a.ip),
    port: a.port,
    identity: name && serverName ? { name, serverName } : undefined,
    opaqueTransportPort: inbound > 0 && inbound < 65536 ? inbound : 0,
    h2: w.protocolHint?.protocol?.$case === "h2",
    ...(authorityOverride ? { authorityOverride } : {}),
    // Set-level labels (namespace, service, …) apply to every address; an address's own win.
    metricLabels: setLabels && Object.keys(setLabels).length > 0
      ? { ...setLabels, ...w.metricLabels }
      : w.metricLabels,
  };
}

/** `host:port` with a DNS-like host and a port in 1..65535; undefined otherwise. */
export function parseAuthority(text: string): { name: string; port: number } | undefined {
  const m =
    /^([A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)*)\.?:(\d{1,5})$/
      .exec(text);
  if (!m) return undefined;
  const port = Number(m[5]);
  return port >= 1 && port <= 65535 ? { name: m[1].toLowerCase(), port } : undefined;
}
