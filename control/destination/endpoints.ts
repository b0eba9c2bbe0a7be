/**
 * Builds the endpoint set of one (service, port, hostname) from the Service, its
 * EndpointSlices and the pods behind them, and filters it for one client (node, zone).
 *
 * Readiness: endpoints with `ready` (unset counts as ready) are served; when none is ready,
 * endpoints still `serving` (terminating but alive) are served instead, as kube-proxy does,
 * so a rollout that terminates every old pod before new ones are ready does not drop traffic.
 */
import { WeightedAddr } from "../../proto/gen/destination.ts";
import { toTcpAddress } from "../../proto/ip.ts";
import type { KubeObject } from "../k8s/mod.ts";
import type { DestinationConfig } from "./config.ts";
import type { Locality } from "./frame.ts";
import type { EndpointSlice, Pod, Server, Service, SliceEndpoint } from "./k8s_types.ts";
import type { ExternalWorkload } from "../k8s/external_workload.ts";
import {
  EXTERNAL_WORKLOAD_KIND,
  externalWorkloadAddr,
  selectedExternalWorkloadEndpoints,
} from "./external_workload_endpoints.ts";
import { gatewayAddr, type GatewayTarget, gatewayTarget } from "./gateway_endpoints.ts";
import {
  isOpaqueByAnnotation,
  isOpaqueByServer,
  isSkipInbound,
  meshedWith,
  type OwnerLookup,
  podIdentity,
  podOwner,
  proxyInboundPort,
  proxyMetaPort,
} from "./workload.ts";

/** The address message, for modules that build one without importing generated code. */
export type { WeightedAddr };

export const DEFAULT_WEIGHT = 10000;
export const ZONE_LABEL = "topology.kubernetes.io/zone";

export interface Endpoint {
  /** `ip:port`, the identity of the address in diffs. */
  key: string;
  ip: string;
  port: number;
  nodeName?: string;
  zone?: string;
  /** Zones this endpoint is hinted for; undefined when the slice gives no hint. */
  forZones?: string[];
  /**
   * The encoded WeightedAddr without `zone_locality`, which depends on the client: frames append
   * that one map entry per client locality (see frame.ts). Only the bytes are kept, not the
   * message object they were encoded from, so an endpoint costs its wire size plus this record.
   */
  base: Uint8Array;
  /** The slice fields and pod object it was built from: while they are the same it is reused. */
  basisFields?: string;
  basisPod?: Pod;
}

export interface EndpointSet {
  endpoints: Endpoint[];
  /** `internalTrafficPolicy: Local`: clients get only endpoints on their own node. */
  nodeLocal: boolean;
  /** Pods the set was built from, so pod changes reach exactly the affected sets. */
  podKeys: Set<string>;
  /** The `generation` of the cluster-wide inputs (namespaces, nodes, owners, Servers) it was built at. */
  generation: number;
}

/**
 * The previous set of the same (service, port, hostname) and the current generation of the inputs
 * an endpoint reads besides its slice entry and pod. Endpoints whose inputs are unchanged are
 * reused with their encoded bytes, so a change costs what changed, not the size of the service.
 */
export interface Reuse {
  previous: EndpointSet | undefined;
  generation: number;
}

/** The slice fields an endpoint's address depends on (its ip and port are its key). */
function basisFields(ep: SliceEndpoint): string {
  const hints = ep.hints?.forZones?.map((z) => z.name).join(",") ?? "";
  return `${ep.nodeName ?? ""}|${ep.zone ?? ""}|${hints}|${ep.hints?.forZones ? "h" : ""}`;
}

export interface Lookups {
  pod(namespace: string, name: string): Pod | undefined;
  namespace(name: string): KubeObject | undefined;
  nodeZone(nodeName: string): string | undefined;
  owner: OwnerLookup;
  servers(namespace: string): readonly Server[];
  /** ExternalWorkloads of a namespace, and one by name; absent when they are not watched. */
  externalWorkloads?(namespace: string): readonly ExternalWorkload[];
  externalWorkload?(namespace: string, name: string): ExternalWorkload | undefined;
}

/** The slice port number that serves service port `port`, or undefined when the slice has none. */
export function sliceTargetPort(service: Service, slice: EndpointSlice, port: number): number | undefined {
  const svcPort = service.spec?.ports?.find((p) => p.port === port);
  if (!svcPort) return port;
  const name = svcPort.name ?? "";
  const match = slice.ports?.find((p) => (p.name ?? "") === name);
  return match?.port ?? undefined;
}

export function sliceServiceName(slice: EndpointSlice): string | undefined {
  return slice.metadata.labels?.["kubernetes.io/service-name"] ??
    slice.metadata.ownerReferences?.find((o) => o.kind === "Service")?.name;
}

function isReady(ep: SliceEndpoint): boolean {
  return ep.conditions?.ready !== false;
}

function isServing(ep: SliceEndpoint): boolean {
  // An unset `serving` defers to `ready`, which is false here.
  return ep.conditions?.serving === true;
}

export function computeEndpoints(
  service: Service,
  slices: readonly EndpointSlice[],
  port: number,
  hostname: string | undefined,
  lookups: Lookups,
  config: DestinationConfig,
  reuse: Reuse = { previous: undefined, generation: 0 },
): EndpointSet {
  const prior = new Map<string, Endpoint>();
  if (reuse.previous?.generation === reuse.generation) {
    for (const e of reuse.previous.endpoints) if (e.basisPod) prior.set(e.key, e);
  }
  const ready: [SliceEndpoint, string, number, GatewayTarget?][] = [];
  const serving: [SliceEndpoint, string, number, GatewayTarget?][] = [];
  for (const slice of slices) {
    const family = slice.addressType;
    if (family !== "IPv4" && !(family === "IPv6" && config.enableIPv6)) continue;
    const target = sliceTargetPort(service, slice, port);
    if (target === undefined) continue;
    const gateway = gatewayTarget(service, slice);
    for (const ep of slice.endpoints ?? []) {
      if (hostname !== undefined && ep.hostname !== undefined && ep.hostname !== hostname) continue;
      const ip = ep.addresses?.[0];
      if (!ip) continue;
      if (isReady(ep)) ready.push([ep, ip, target, gateway]);
      else if (isServing(ep)) serving.push([ep, ip, target, gateway]);
    }
  }
  if (lookups.externalWorkloads) {
    const ews = lookups.externalWorkloads(service.metadata.namespace ?? "");
    for (const [ep, target] of selectedExternalWorkloadEndpoints(service, port, ews, config)) {
      if (hostname !== undefined && ep.hostname !== undefined && ep.hostname !== hostname) continue;
      ready.push([ep, ep.addresses[0], target]);
    }
  }
  const chosen = ready.length > 0 ? ready : serving;
  const out: Endpoint[] = [];
  const seen = new Set<string>();
  const podKeys = new Set<string>();
  for (const [ep, ip, target, gateway] of chosen) {
    const key = ip.includes(":") ? `[${ip}]:${target}` : `${ip}:${target}`;
    if (seen.has(key)) continue; // the same address in two slices while they are migrated
    seen.add(key);
    const ref = ep.targetRef;
    if (ref?.kind === EXTERNAL_WORKLOAD_KIND) {
      const ns = ref.namespace ?? service.metadata.namespace ?? "";
      const ew = ref.name ? lookups.externalWorkload?.(ns, ref.name) : undefined;
      // As for pods: an endpoint naming a workload not (yet) cached is served once it is.
      if (!ew) continue;
      const zone = ep.zone ?? ew.metadata.labels?.[ZONE_LABEL];
      out.push({
        key,
        ip,
        port: target,
        zone,
        forZones: ep.hints?.forZones?.length ? ep.hints.forZones.map((z) => z.name) : undefined,
        base: WeightedAddr.encode(externalWorkloadAddr(ew, ip, target, zone, lookups.servers(ns), config))
          .finish(),
      });
      continue;
    }
    if (gateway && ref?.kind !== "Pod") {
      out.push({
        key,
        ip,
        port: target,
        nodeName: ep.nodeName,
        zone: ep.zone,
        forZones: ep.hints?.forZones?.length ? ep.hints.forZones.map((z) => z.name) : undefined,
        base: WeightedAddr.encode(gatewayAddr(ip, target, port, gateway)).finish(),
      });
      continue;
    }
    let pod: Pod | undefined;
    let fields = "";
    if (ref?.kind === "Pod" && ref.name) {
      const ns = ref.namespace ?? service.metadata.namespace ?? "";
      podKeys.add(`${ns}/${ref.name}`);
      pod = lookups.pod(ns, ref.name);
      // A slice can name a pod the pod informer has not seen yet; it is served once it has.
      if (!pod) continue;
      fields = basisFields(ep);
      const before = prior.get(key);
      if (before !== undefined && before.basisPod === pod && before.basisFields === fields) {
        out.push(before);
        continue;
      }
    }
    const nodeName = ep.nodeName ?? pod?.spec?.nodeName;
    const zone = ep.zone ?? (nodeName ? lookups.nodeZone(nodeName) : undefined);
    const forZones = ep.hints?.forZones?.length ? ep.hints.forZones.map((z) => z.name) : undefined;
    out.push({
      key,
      ip,
      port: target,
      nodeName,
      zone,
      forZones,
      base: WeightedAddr.encode(weightedAddr(ip, target, pod, zone, lookups, config)).finish(),
      basisFields: pod ? fields : undefined,
      basisPod: pod,
    });
  }
  return {
    endpoints: out,
    nodeLocal: service.spec?.internalTrafficPolicy === "Local",
    podKeys,
    generation: reuse.generation,
  };
}

/** The WeightedAddr of an endpoint, without the client-dependent `zone_locality`. */
export function weightedAddr(
  ip: string,
  port: number,
  pod: Pod | undefined,
  zone: string | undefined,
  lookups: Lookups,
  config: DestinationConfig,
): WeightedAddr {
  const addr: WeightedAddr = { addr: toTcpAddress(ip, port), weight: DEFAULT_WEIGHT, metricLabels: {} };
  if (!pod) return addr;
  const ns = pod.metadata.namespace ?? "";
  const labels = addr.metricLabels;
  labels.pod = pod.metadata.name ?? "";
  labels.namespace = ns;
  labels.serviceaccount = pod.spec?.serviceAccountName || "default";
  const owner = podOwner(pod, lookups.owner);
  if (owner) labels[owner[0]] = owner[1];
  const hash = pod.metadata.labels?.["pod-template-hash"];
  if (hash) labels.pod_template_hash = hash;
  labels.zone = zone ?? "";
  const cpNs = meshedWith(pod);
  // The proxy's admin server speaks plain HTTP only (no mesh TLS detection, unlike Linkerd's), so a
  // meshed client reaches it as an unmeshed endpoint, as if the port were skipped.
  const meta = proxyMetaPort(pod, port);
  if (!cpNs || isSkipInbound(pod, port) || meta === "admin") return addr;
  labels.control_plane_ns = cpNs;
  const identity = podIdentity(pod, config);
  if (identity) {
    addr.tlsIdentity = {
      strategy: { $case: "dnsLikeIdentity", value: { name: identity } },
      serverName: { name: identity },
    };
  }
  const opaque = isOpaqueByServer(pod, port, lookups.servers(ns)) ||
    isOpaqueByAnnotation(pod, port, lookups.namespace(ns), config);
  if (opaque || config.enableH2Upgrade || config.forceOpaqueTransport) {
    addr.protocolHint = {
      protocol: opaque
        ? { $case: "opaque", value: {} }
        : config.enableH2Upgrade
        ? { $case: "h2", value: {} }
        : undefined,
      // The control (tap) port terminates mesh TLS itself: never through the inbound port (Linkerd's rule).
      opaqueTransport: (opaque || config.forceOpaqueTransport) && meta !== "control"
        ? { inboundPort: proxyInboundPort(pod) }
        : undefined,
    };
  }
  return addr;
}

export interface ClientPlace {
  nodeName?: string;
  zone?: string;
}

/** The endpoints a client sees: node-local for `internalTrafficPolicy: Local`, else zone hints. */
export function filterForClient(set: EndpointSet, client: ClientPlace): Endpoint[] {
  if (set.nodeLocal) {
    if (!client.nodeName) return set.endpoints;
    return set.endpoints.filter((e) => e.nodeName === client.nodeName);
  }
  // Hints count only when every endpoint has them, as kube-proxy does.
  if (!client.zone || set.endpoints.length === 0 || set.endpoints.some((e) => !e.forZones)) {
    return set.endpoints;
  }
  const zoned = set.endpoints.filter((e) => e.forZones!.includes(client.zone!));
  return zoned.length > 0 ? zoned : set.endpoints;
}

export function localityOf(e: Endpoint, client: ClientPlace): Locality {
  if (!client.zone || !e.zone) return "unknown";
  return e.zone === client.zone ? "local" : "remote";
}
