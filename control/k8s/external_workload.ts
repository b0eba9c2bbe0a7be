/**
 * workload.linkerd.io ExternalWorkload: a workload outside the cluster (a VM, a bare-metal host)
 * enrolled in the mesh. The fields the destination and policy controllers read, and the rules
 * both apply to them, as Linkerd's controllers do.
 */
import type { ResourceRef } from "./api_source.ts";
import type { KubeObject } from "./types.ts";

/** Read at the storage version; its objects carry `spec.meshTLS`. */
export const EXTERNAL_WORKLOADS: ResourceRef = {
  group: "workload.linkerd.io",
  version: "v1beta1",
  plural: "externalworkloads",
};

export interface ExternalWorkloadPort {
  name?: string;
  port: number;
  protocol?: string;
}

export interface MeshTls {
  identity?: string;
  serverName?: string;
}

export type ExternalWorkload = KubeObject & {
  spec?: {
    meshTLS?: MeshTls;
    /** The v1alpha1 spelling, kept when such an object is read back without conversion. */
    meshTls?: MeshTls;
    ports?: ExternalWorkloadPort[] | null;
    workloadIPs?: { ip?: string }[] | null;
  };
  status?: { conditions?: { type?: string; status?: string }[] | null };
};

/** The name of the port that, when the workload lists it, is its proxy's inbound port. */
export const PROXY_PORT_NAME = "linkerd-proxy";

export function meshTlsOf(ew: ExternalWorkload): MeshTls | undefined {
  return ew.spec?.meshTLS ?? ew.spec?.meshTls;
}

/**
 * Ready when a `Ready` condition says "True". Whoever runs the workload reports it (Linkerd's
 * harness does); without one the workload is not served, as in Linkerd.
 */
export function externalWorkloadReady(ew: ExternalWorkload): boolean {
  return (ew.status?.conditions ?? []).some((c) => c.type === "Ready" && c.status === "True");
}

function protocolOf(p: { protocol?: string }): string {
  return p.protocol || "TCP";
}

/**
 * The workload port a Service port targets, or undefined when the workload does not list it:
 * unlike a pod's, an external workload's ports must all be declared. A named target matches a
 * port of that name, a numbered one a port of that number, both with the same protocol.
 */
export function externalWorkloadTargetPort(
  ew: ExternalWorkload,
  svcPort: { port: number; targetPort?: number | string; protocol?: string },
): number | undefined {
  const target = svcPort.targetPort ?? svcPort.port;
  const proto = protocolOf(svcPort);
  for (const p of ew.spec?.ports ?? []) {
    if (protocolOf(p) !== proto) continue;
    if (typeof target === "string" ? p.name === target : p.port === target) return p.port;
  }
  return undefined;
}

/** The number of the workload's port called `name`. */
export function externalWorkloadNamedPort(ew: ExternalWorkload, name: string): number | undefined {
  return (ew.spec?.ports ?? []).find((p) => p.name === name)?.port;
}

/** The inbound port of the workload's proxy: its `linkerd-proxy` port, else the default. */
export function externalWorkloadProxyPort(ew: ExternalWorkload, fallback: number): number {
  return externalWorkloadNamedPort(ew, PROXY_PORT_NAME) ?? fallback;
}

/** The workload's addresses, IPv4 first; IPv6 only when asked for. */
export function externalWorkloadIps(ew: ExternalWorkload, ipv6: boolean): string[] {
  const ips = (ew.spec?.workloadIPs ?? []).map((w) => w.ip ?? "").filter((ip) => ip !== "");
  const v4 = ips.filter((ip) => !ip.includes(":"));
  return ipv6 ? [...v4, ...ips.filter((ip) => ip.includes(":"))] : v4;
}
