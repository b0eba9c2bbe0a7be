/**
 * Facts about the pod behind an endpoint: whether it is meshed, its identity, its owning
 * workload and whether a port is opaque.
 *
 * Meshed rule: a pod is meshed when it carries the `linkerd.io/control-plane-ns` label that the
 * injector adds AND has the injected proxy, either a container named `linkerd-proxy` or a native
 * sidecar (an init container named `linkerd-proxy` with `restartPolicy: Always`). hostNetwork
 * pods are never meshed. Only pods whose label names this control plane get a TLS identity.
 */
import { selects } from "../k8s/label_selector.ts";
import { Annotations, Labels } from "../../proto/annotations.ts";
import { ProxyEnv } from "../../proto/env.ts";
import { formatWorkloadIdentity } from "../../proto/identity_name.ts";
import type { KubeObject } from "../k8s/mod.ts";
import { Ports } from "../../proto/ports.ts";
import { DEFAULT_INBOUND_PORT, type DestinationConfig } from "./config.ts";
import type { Pod, Server } from "./k8s_types.ts";
import { opaquePortList, portListHas, skipInboundPortList } from "./port_list.ts";

export const PROXY_CONTAINER = "linkerd-proxy";

export function proxyContainer(pod: Pod) {
  const c = pod.spec?.containers?.find((c) => c.name === PROXY_CONTAINER);
  if (c) return c;
  return pod.spec?.initContainers?.find((c) => c.name === PROXY_CONTAINER && c.restartPolicy === "Always");
}

/** The control-plane namespace a pod is meshed with, or undefined when it is not meshed. */
export function meshedWith(pod: Pod): string | undefined {
  if (pod.spec?.hostNetwork) return undefined;
  const ns = pod.metadata.labels?.[Labels.controlPlaneNs];
  if (!ns) return undefined;
  return proxyContainer(pod) ? ns : undefined;
}

/** The proxy's inbound port, from its env when the injector set one. */
export function proxyInboundPort(pod: Pod): number {
  const addr = proxyContainer(pod)?.env?.find((e) => e.name === ProxyEnv.inboundListenAddr)?.value;
  const m = addr ? /:(\d+)$/.exec(addr) : null;
  return m ? Number(m[1]) : DEFAULT_INBOUND_PORT;
}

/**
 * Which of the proxy's own ports `port` is: its admin server (4191) or its control (tap) server
 * (4190), read from the proxy's env as Linkerd's destination reads them. Neither is behind the
 * inbound listener (init skips them), so a client must never wrap them in opaque transport to 4143.
 */
export function proxyMetaPort(pod: Pod, port: number): "admin" | "control" | undefined {
  const env = proxyContainer(pod)?.env ?? [];
  const portOf = (name: string, fallback: number) => {
    const m = /:(\d+)$/.exec(env.find((e) => e.name === name)?.value ?? "");
    return m ? Number(m[1]) : fallback;
  };
  if (port === portOf(ProxyEnv.controlListenAddr, Ports.proxyControl)) return "control";
  if (port === portOf(ProxyEnv.adminListenAddr, Ports.proxyAdmin)) return "admin";
  return undefined;
}

export function podIdentity(pod: Pod, config: DestinationConfig): string | undefined {
  if (meshedWith(pod) !== config.controlPlaneNamespace) return undefined;
  try {
    return formatWorkloadIdentity({
      serviceAccount: pod.spec?.serviceAccountName || "default",
      namespace: pod.metadata.namespace ?? "",
      controlPlaneNamespace: config.controlPlaneNamespace,
      trustDomain: config.trustDomain,
    });
  } catch {
    return undefined; // Not a valid name: the endpoint is served without identity.
  }
}

export function namedContainerPort(pod: Pod, name: string): number | undefined {
  for (const list of [pod.spec?.containers, pod.spec?.initContainers]) {
    for (const c of list ?? []) {
      for (const p of c.ports ?? []) if (p.name === name) return p.containerPort;
    }
  }
  return undefined;
}

export function isSkipInbound(pod: Pod, port: number): boolean {
  const ann = pod.metadata.annotations?.[Annotations.skipInboundPorts];
  return ann ? portListHas(skipInboundPortList(ann), port, (n) => namedContainerPort(pod, n)) : false;
}

/**
 * Opaque by annotation: the pod's `config.linkerd.io/opaque-ports`, else its namespace's, else the
 * cluster default (an empty annotation means none).
 */
export function isOpaqueByAnnotation(
  pod: Pod,
  port: number,
  namespace: KubeObject | undefined,
  config: DestinationConfig,
): boolean {
  const ann = pod.metadata.annotations?.[Annotations.opaquePorts] ??
    namespace?.metadata.annotations?.[Annotations.opaquePorts];
  if (ann === undefined) return config.defaultOpaquePorts.includes(port);
  return portListHas(opaquePortList(ann), port, (n) => namedContainerPort(pod, n));
}

/** A Server in the pod's namespace selecting the pod and port with `proxyProtocol: opaque`. */
export function isOpaqueByServer(pod: Pod, port: number, servers: readonly Server[]): boolean {
  for (const s of servers) {
    if (s.spec?.proxyProtocol !== "opaque") continue;
    const p = s.spec.port;
    const matchesPort = typeof p === "number"
      ? p === port
      : p !== undefined && namedContainerPort(pod, p) === port;
    if (matchesPort && selects(s.spec.podSelector, pod.metadata.labels)) return true;
  }
  return false;
}

/** Metadata of the owners (ReplicaSets, Jobs) the controller chain is resolved through. */
export type OwnerLookup = (kind: string, namespace: string, name: string) => KubeObject | undefined;

const OWNER_LABEL: Record<string, string> = {
  Deployment: "deployment",
  ReplicaSet: "replicaset",
  StatefulSet: "statefulset",
  DaemonSet: "daemonset",
  Job: "k8s_job",
  CronJob: "cronjob",
  ReplicationController: "replicationcontroller",
};

function controllerOf(obj: KubeObject) {
  return obj.metadata.ownerReferences?.find((o) => o.controller) ?? obj.metadata.ownerReferences?.[0];
}

/** `[label, name]` of the workload owning a pod: a ReplicaSet resolves to its Deployment, a Job to its CronJob. */
export function podOwner(pod: Pod, lookup: OwnerLookup): [string, string] | undefined {
  const ref = controllerOf(pod);
  if (!ref) return undefined;
  if (ref.kind === "ReplicaSet" || ref.kind === "Job") {
    const owner = lookup(ref.kind, pod.metadata.namespace ?? "", ref.name);
    const parent = owner ? controllerOf(owner) : undefined;
    if (parent && (parent.kind === "Deployment" || parent.kind === "CronJob")) {
      return [OWNER_LABEL[parent.kind], parent.name];
    }
  }
  return [OWNER_LABEL[ref.kind] ?? ref.kind.toLowerCase(), ref.name];
}
