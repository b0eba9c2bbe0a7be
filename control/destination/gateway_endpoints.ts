/**
 * Gateway-mode mirror endpoints: a selector-less mirror Service whose Endpoints (mirrored by
 * Kubernetes into an EndpointSlice, annotations included) name the remote cluster's gateway.
 * Clients reach them with mTLS to the gateway's identity and a transport header naming the remote
 * Service (`authority_override`), as Linkerd's destination serves them.
 */
import { toTcpAddress } from "../../proto/ip.ts";
import { DEFAULT_WEIGHT, type WeightedAddr } from "./endpoints.ts";
import type { EndpointSlice, Service } from "./k8s_types.ts";
import { Multicluster } from "./multicluster_names.ts";

export interface GatewayTarget {
  identity: string;
  /** `<svc>.<ns>.svc.<remote domain>`, when annotated. */
  remoteFqName: string | undefined;
}

/**
 * The gateway a slice's address-only endpoints stand for: the slice's annotations first (the
 * Endpoints' annotations, mirrored), else the Service's; undefined for ordinary endpoints.
 */
export function gatewayTarget(service: Service, slice: EndpointSlice): GatewayTarget | undefined {
  const id = Multicluster.remoteGatewayIdentityAnnotation;
  const fq = Multicluster.remoteSvcFqNameAnnotation;
  const s = slice.metadata.annotations ?? {};
  const v = service.metadata.annotations ?? {};
  const identity = s[id] || v[id];
  if (!identity) return undefined;
  return { identity, remoteFqName: s[fq] || v[fq] || undefined };
}

/**
 * The address of a gateway endpoint: identity = the gateway's, no protocol hint (the gateway
 * forwards opaquely, so no h2 upgrade), opaque transport to the endpoint's own port (the gateway's
 * mTLS port), and the remote Service with the service port the client asked for as the authority.
 */
export function gatewayAddr(
  ip: string,
  endpointPort: number,
  servicePort: number,
  gw: GatewayTarget,
): WeightedAddr {
  return {
    addr: toTcpAddress(ip, endpointPort),
    weight: DEFAULT_WEIGHT,
    metricLabels: {},
    tlsIdentity: {
      strategy: { $case: "dnsLikeIdentity", value: { name: gw.identity } },
      serverName: { name: gw.identity },
    },
    authorityOverride: gw.remoteFqName
      ? { authorityOverride: `${gw.remoteFqName}:${servicePort}` }
      : undefined,
    protocolHint: { protocol: undefined, opaqueTransport: { inboundPort: endpointPort } },
  };
}
