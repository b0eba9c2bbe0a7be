/**
 * ExternalWorkloads as Service endpoints (mesh expansion, issue 24).
 *
 * Linkerd runs a controller that writes EndpointSlices for each Service whose selector matches
 * ExternalWorkload labels; its destination service then reads those slices and looks each
 * ExternalWorkload up for its identity. weft's destination computes a Service's endpoints itself
 * from informer caches, so it takes the matching ExternalWorkloads straight from its own
 * ExternalWorkload cache instead: no writes to the API server, no leader election, no second
 * copy of the state to keep in step. Slices that name an ExternalWorkload (written by Linkerd's
 * controller, or by hand) are still honoured: their endpoints are looked up the same way.
 *
 * The rules are Linkerd's: a workload contributes when it is in the Service's namespace, its
 * labels match the Service's (non-empty) selector, it has a `Ready=True` condition and it
 * declares the port the Service targets (by number or name, same protocol).
 */
import { toTcpAddress } from "../../proto/ip.ts";
import { Annotations } from "../../proto/annotations.ts";
import {
  type ExternalWorkload,
  externalWorkloadIps,
  externalWorkloadNamedPort,
  externalWorkloadProxyPort,
  externalWorkloadReady,
  externalWorkloadTargetPort,
  meshTlsOf,
} from "../k8s/external_workload.ts";
import { selects } from "../k8s/label_selector.ts";
import { DEFAULT_INBOUND_PORT, type DestinationConfig } from "./config.ts";
import type { Server, Service, SliceEndpoint } from "./k8s_types.ts";
import type { WeightedAddr } from "./endpoints.ts";
import { opaquePortList, portListHas } from "./port_list.ts";

export const EXTERNAL_WORKLOAD_KIND = "ExternalWorkload";
const ZONE_LABEL = "topology.kubernetes.io/zone";
const WEIGHT = 10000;

/** Whether the Service's selector picks the workload; a Service without one picks none. */
export function serviceSelects(service: Service, ew: ExternalWorkload): boolean {
  const sel = service.spec?.selector;
  if (!sel || Object.keys(sel).length === 0) return false;
  if (ew.metadata.namespace !== service.metadata.namespace) return false;
  return selects({ matchLabels: sel }, ew.metadata.labels);
}

/**
 * The endpoints the Service's matching ExternalWorkloads give for service port `port`, shaped as
 * slice endpoints with `[endpoint, target port]` so they go through the same path as slices.
 * Not-ready workloads are left out (Linkerd marks them neither ready nor serving).
 */
export function selectedExternalWorkloadEndpoints(
  service: Service,
  port: number,
  workloads: Iterable<ExternalWorkload>,
  config: DestinationConfig,
): [SliceEndpoint, number][] {
  const out: [SliceEndpoint, number][] = [];
  const svcPort = service.spec?.ports?.find((p) => p.port === port);
  const headless = service.spec?.clusterIP === "None";
  for (const ew of workloads) {
    if (!serviceSelects(service, ew) || !externalWorkloadReady(ew)) continue;
    // A port the Service does not list is used as asked, as for slices.
    const target = svcPort ? externalWorkloadTargetPort(ew, svcPort) : port;
    if (target === undefined) continue;
    const zone = ew.metadata.labels?.[ZONE_LABEL];
    for (const ip of externalWorkloadIps(ew, config.enableIPv6)) {
      out.push([{
        addresses: [ip],
        conditions: { ready: true, serving: true },
        // Linkerd names the endpoint after the workload only for headless Services (DNS records).
        hostname: headless ? ew.metadata.name : undefined,
        zone,
        targetRef: { kind: EXTERNAL_WORKLOAD_KIND, name: ew.metadata.name, namespace: ew.metadata.namespace },
      }, target]);
    }
  }
  return out;
}

/** Opaque by the workload's own `config.linkerd.io/opaque-ports` (port names its ports), else the default. */
export function externalWorkloadOpaqueByAnnotation(
  ew: ExternalWorkload,
  port: number,
  config: DestinationConfig,
): boolean {
  const ann = ew.metadata.annotations?.[Annotations.opaquePorts];
  if (ann === undefined) return config.defaultOpaquePorts.includes(port);
  return portListHas(opaquePortList(ann), port, (n) => externalWorkloadNamedPort(ew, n));
}

/** A Server selecting the workload (externalWorkloadSelector) on `port` with `proxyProtocol: opaque`. */
export function externalWorkloadOpaqueByServer(
  ew: ExternalWorkload,
  port: number,
  servers: readonly Server[],
): boolean {
  for (const s of servers) {
    if (s.spec?.proxyProtocol !== "opaque" || !s.spec.externalWorkloadSelector) continue;
    const p = s.spec.port;
    const matchesPort = typeof p === "number"
      ? p === port
      : p !== undefined && externalWorkloadNamedPort(ew, p) === port;
    if (matchesPort && selects(s.spec.externalWorkloadSelector, ew.metadata.labels)) return true;
  }
  return false;
}

/**
 * The WeightedAddr of an ExternalWorkload endpoint (without the client's `zone_locality`).
 * As Linkerd: the TLS identity is the workload's `meshTLS.identity` as a URI-like (SPIFFE)
 * identity with `meshTLS.serverName` as the SNI name; the protocol hint is always set (`opaque`
 * for opaque ports, else `h2`), with the transport header on the workload's proxy port for
 * opaque ports or when opaque transport is forced.
 */
export function externalWorkloadAddr(
  ew: ExternalWorkload,
  ip: string,
  port: number,
  zone: string | undefined,
  servers: readonly Server[],
  config: DestinationConfig,
): WeightedAddr {
  const labels: Record<string, string> = {
    external_workload: ew.metadata.name ?? "",
    namespace: ew.metadata.namespace ?? "",
    zone: zone ?? "",
  };
  const addr: WeightedAddr = { addr: toTcpAddress(ip, port), weight: WEIGHT, metricLabels: labels };
  const opaque = externalWorkloadOpaqueByServer(ew, port, servers) ||
    externalWorkloadOpaqueByAnnotation(ew, port, config);
  addr.protocolHint = {
    protocol: opaque ? { $case: "opaque", value: {} } : { $case: "h2", value: {} },
    opaqueTransport: opaque || config.forceOpaqueTransport
      ? { inboundPort: externalWorkloadProxyPort(ew, DEFAULT_INBOUND_PORT) }
      : undefined,
  };
  const tls = meshTlsOf(ew);
  // The schema requires both; an object that lacks them (read back from v1alpha1 without
  // conversion) is served without identity rather than with a wrong one.
  if (tls?.identity && tls.serverName) {
    addr.tlsIdentity = {
      strategy: { $case: "uriLikeIdentity", value: { uri: tls.identity } },
      serverName: { name: tls.serverName },
    };
  }
  return addr;
}
