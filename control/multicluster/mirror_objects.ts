/**
 * What the service mirror writes in the source cluster for one remote Service, as pure functions:
 * the mirror Service `<svc>-<target>` (gateway or flat mode), its gateway Endpoints, and the
 * federated Service `<svc>-federated` with this link's `<svc>@<target>` entry merged into the
 * entries of other links. Labels and annotations follow Linkerd's service mirror: the remote
 * Service's labels are copied except `mirror.linkerd.io/*` (they select exports and must not make
 * the mirror an export itself), its annotations except topology hints (not multicluster aware).
 */
import { type LabelSelectorLike, selects } from "../k8s/label_selector.ts";
import type { KubeObject } from "../k8s/mod.ts";
import { Annotations, Labels, type Link } from "./link.ts";

export interface ServicePort {
  name?: string;
  protocol?: string;
  port: number;
  targetPort?: number | string;
  appProtocol?: string;
  nodePort?: number;
}

export type Service = KubeObject & {
  spec?: { ports?: ServicePort[]; clusterIP?: string; type?: string; selector?: Record<string, string> };
};

export interface EndpointPort {
  name?: string;
  protocol?: string;
  port: number;
}

export type Endpoints = KubeObject & {
  subsets?: { addresses?: { ip: string }[]; notReadyAddresses?: { ip: string }[]; ports?: EndpointPort[] }[];
};

export type MirrorMode = "gateway" | "flat";

/** Whether a remote Endpoints object has no ready address (an exported Service with nothing behind it). */
export function endpointsEmpty(ep: Endpoints): boolean {
  return !(ep.subsets ?? []).some((s) => (s.addresses ?? []).length > 0);
}

/** As Linkerd: an empty selector selects nothing here (an unset one must not export every Service). */
function picks(selector: LabelSelectorLike, labels: Record<string, string> | undefined): boolean {
  const empty =
    Object.keys(selector.matchLabels ?? {}).length + (selector.matchExpressions ?? []).length === 0;
  return !empty && selects(selector, labels);
}

/** How `remote` is exported by `link`: a mirror mode (or none) and federated membership. */
export function classify(remote: Service, link: Link): { mode?: MirrorMode; federated: boolean } {
  const labels = remote.metadata.labels;
  // Remote discovery wins when both select: the flat mirror needs no gateway.
  const mode: MirrorMode | undefined = picks(link.remoteDiscoverySelector, labels)
    ? "flat"
    : picks(link.selector, labels)
    ? "gateway"
    : undefined;
  return { mode, federated: picks(link.federatedServiceSelector, labels) };
}

export function mirrorName(remoteName: string, target: string): string {
  return `${remoteName}-${target}`;
}

export function federatedName(remoteName: string): string {
  return `${remoteName}-federated`;
}

/** The remote Service's name of one of this link's mirrors, or undefined when the name is not one. */
export function remoteNameOf(mirror: string, target: string): string | undefined {
  const suffix = `-${target}`;
  return mirror.endsWith(suffix) && mirror.length > suffix.length
    ? mirror.slice(0, -suffix.length)
    : undefined;
}

function commonLabels(remote: Service): Record<string, string> {
  const out: Record<string, string> = { [Labels.mirroredService]: "true" };
  for (const [k, v] of Object.entries(remote.metadata.labels ?? {})) {
    if (!k.startsWith(Labels.mirrorPrefix)) out[k] = v;
  }
  out[Labels.mirroredService] = "true";
  return out;
}

function commonAnnotations(remote: Service): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(remote.metadata.annotations ?? {})) {
    if (k === "service.kubernetes.io/topology-aware-hints" || k === "service.kubernetes.io/topology-mode") {
      continue;
    }
    if (k === "kubectl.kubernetes.io/last-applied-configuration") continue;
    out[k] = v;
  }
  return out;
}

/** The ports a mirror or federated Service gets: no node ports (they mean nothing here). */
export function mirrorPorts(remote: Service): ServicePort[] {
  return (remote.spec?.ports ?? []).map((p) => {
    const out: ServicePort = { port: p.port, protocol: p.protocol ?? "TCP" };
    if (p.name) out.name = p.name;
    if (p.targetPort !== undefined) out.targetPort = p.targetPort;
    if (p.appProtocol) out.appProtocol = p.appProtocol;
    return out;
  });
}

export function fqName(remote: Service, link: Link): string {
  return `${remote.metadata.name}.${remote.metadata.namespace}.svc.${link.targetClusterDomain}`;
}

export function mirrorLabels(remote: Service, link: Link, mode: MirrorMode): Record<string, string> {
  const labels = commonLabels(remote);
  labels[Labels.clusterName] = link.targetClusterName;
  if (mode === "flat") {
    labels[Labels.remoteDiscovery] = link.targetClusterName;
    labels[Labels.remoteService] = remote.metadata.name ?? "";
  }
  return labels;
}

export function desiredMirrorService(remote: Service, link: Link, mode: MirrorMode): Service {
  return {
    apiVersion: "v1",
    kind: "Service",
    metadata: {
      name: mirrorName(remote.metadata.name ?? "", link.targetClusterName),
      namespace: remote.metadata.namespace,
      labels: mirrorLabels(remote, link, mode),
      annotations: {
        ...commonAnnotations(remote),
        [Annotations.remoteSvcFqName]: fqName(remote, link),
        [Annotations.remoteResourceVersion]: remote.metadata.resourceVersion ?? "",
      },
    },
    spec: { ports: mirrorPorts(remote) },
  };
}

/**
 * Gateway mode: every remote port, by name, answered by the gateway's port on the gateway's addresses.
 * While the gateway's probe fails the addresses are not ready, as Linkerd does, so clients fail fast
 * instead of connecting to a dead gateway. A remote Service without ready endpoints gets empty
 * mirror Endpoints (also as Linkerd): nothing behind the gateway would answer.
 */
export function desiredMirrorEndpoints(
  remote: Service,
  link: Link,
  gatewayIps: readonly string[],
  gatewayAlive = true,
  remoteEmpty = false,
): Endpoints {
  const ports = (remote.spec?.ports ?? []).map((p) => {
    const out: EndpointPort = { port: link.gatewayPort, protocol: p.protocol ?? "TCP" };
    if (p.name) out.name = p.name;
    return out;
  });
  return {
    apiVersion: "v1",
    kind: "Endpoints",
    metadata: {
      name: mirrorName(remote.metadata.name ?? "", link.targetClusterName),
      namespace: remote.metadata.namespace,
      labels: mirrorLabels(remote, link, "gateway"),
      annotations: {
        [Annotations.remoteGatewayIdentity]: link.gatewayIdentity,
        [Annotations.remoteSvcFqName]: fqName(remote, link),
      },
    },
    subsets: gatewayIps.length && !remoteEmpty
      ? [{ [gatewayAlive ? "addresses" : "notReadyAddresses"]: gatewayIps.map((ip) => ({ ip })), ports }]
      : [],
  };
}

export function discoveryEntry(remoteName: string, target: string): string {
  return `${remoteName}@${target}`;
}

function entries(list: string | undefined): string[] {
  return (list ?? "").split(",").map((s) => s.trim()).filter((s) => s !== "");
}

/** `list` with `entry` appended once (order of the others kept). */
export function addEntry(list: string | undefined, entry: string): string {
  const e = entries(list);
  return e.includes(entry) ? e.join(",") : [...e, entry].join(",");
}

/** `list` without `entry`. */
export function removeEntry(list: string | undefined, entry: string): string {
  return entries(list).filter((e) => e !== entry).join(",");
}

/** `localMember` undefined: not known here (cleanup mode), the annotation is kept as it is. */
function withLocalDiscovery(
  annotations: Record<string, string>,
  remoteName: string,
  localMember: boolean | undefined,
): Record<string, string> {
  const out = { ...annotations };
  if (localMember === true) out[Annotations.localDiscovery] = remoteName;
  else if (localMember === false) delete out[Annotations.localDiscovery];
  return out;
}

/**
 * The federated Service after this link's member joins: created from the remote Service when
 * `existing` is undefined, else `existing` with the entry merged (other links' entries kept).
 * `localMember`: the source cluster's own `<svc>` is a federated member (undefined: unknown, kept).
 */
export function federatedWithMember(
  existing: Service | undefined,
  remote: Service,
  link: Link,
  localMember: boolean | undefined,
): Service {
  const name = remote.metadata.name ?? "";
  const entry = discoveryEntry(name, link.targetClusterName);
  if (!existing) {
    return {
      apiVersion: "v1",
      kind: "Service",
      metadata: {
        name: federatedName(name),
        namespace: remote.metadata.namespace,
        labels: commonLabels(remote),
        annotations: withLocalDiscovery(
          { ...commonAnnotations(remote), [Annotations.remoteDiscovery]: entry },
          name,
          localMember,
        ),
      },
      spec: { ports: mirrorPorts(remote) },
    };
  }
  const annotations = existing.metadata.annotations ?? {};
  return {
    ...existing,
    metadata: {
      ...existing.metadata,
      annotations: withLocalDiscovery(
        {
          ...annotations,
          [Annotations.remoteDiscovery]: addEntry(annotations[Annotations.remoteDiscovery], entry),
        },
        name,
        localMember,
      ),
    },
  };
}

/**
 * The federated Service after this link's member leaves: `delete` when no member (remote or
 * local) is left, else the Service with only this link's entry removed.
 */
export function federatedWithoutMember(
  existing: Service,
  remoteName: string,
  target: string,
  localMember: boolean | undefined,
): { delete: true } | { delete: false; service: Service } {
  const annotations = existing.metadata.annotations ?? {};
  const remaining = removeEntry(annotations[Annotations.remoteDiscovery], discoveryEntry(remoteName, target));
  const next = withLocalDiscovery(annotations, remoteName, localMember);
  if (remaining === "") delete next[Annotations.remoteDiscovery];
  else next[Annotations.remoteDiscovery] = remaining;
  if (remaining === "" && !next[Annotations.localDiscovery]) return { delete: true };
  return { delete: false, service: { ...existing, metadata: { ...existing.metadata, annotations: next } } };
}

/** The `<svc>@<target>` entries of a federated Service. */
export function remoteDiscoveryEntries(svc: Service): string[] {
  return entries(svc.metadata.annotations?.[Annotations.remoteDiscovery]);
}

function sameRecord(a: Record<string, string> | undefined, b: Record<string, string> | undefined): boolean {
  const ea = Object.entries(a ?? {}).sort(([x], [y]) => x < y ? -1 : x > y ? 1 : 0);
  const eb = Object.entries(b ?? {}).sort(([x], [y]) => x < y ? -1 : x > y ? 1 : 0);
  return JSON.stringify(ea) === JSON.stringify(eb);
}

function samePorts(a: ServicePort[] | undefined, b: ServicePort[] | undefined): boolean {
  const norm = (ps: ServicePort[] | undefined) =>
    (ps ?? []).map((
      p,
    ) => [p.name ?? "", p.protocol ?? "TCP", p.port, String(p.targetPort ?? p.port), p.appProtocol ?? ""]);
  return JSON.stringify(norm(a)) === JSON.stringify(norm(b));
}

/** Whether `existing` already has what `desired` asks for (labels, annotations, ports). */
export function serviceUpToDate(existing: Service, desired: Service): boolean {
  return sameRecord(existing.metadata.labels, desired.metadata.labels) &&
    sameRecord(existing.metadata.annotations, desired.metadata.annotations) &&
    samePorts(existing.spec?.ports, desired.spec?.ports);
}

/** `existing` rewritten to `desired`'s labels, annotations and ports, keeping its version and cluster IP. */
export function serviceUpdated(existing: Service, desired: Service): Service {
  return {
    ...existing,
    metadata: {
      ...existing.metadata,
      labels: desired.metadata.labels,
      annotations: desired.metadata.annotations,
    },
    spec: { ...existing.spec, ports: desired.spec?.ports },
  };
}

export function endpointsUpToDate(existing: Endpoints, desired: Endpoints): boolean {
  const subsets = (e: Endpoints) =>
    (e.subsets ?? []).map((s) => ({
      addresses: (s.addresses ?? []).map((a) => a.ip).sort(),
      notReady: (s.notReadyAddresses ?? []).map((a) => a.ip).sort(),
      ports: (s.ports ?? []).map((p) => [p.name ?? "", p.protocol ?? "TCP", p.port]),
    }));
  return sameRecord(existing.metadata.labels, desired.metadata.labels) &&
    sameRecord(existing.metadata.annotations, desired.metadata.annotations) &&
    JSON.stringify(subsets(existing)) === JSON.stringify(subsets(desired));
}
