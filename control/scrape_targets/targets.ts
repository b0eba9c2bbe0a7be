/**
 * Pods → Prometheus scrape targets, labelled as Prometheus' own Kubernetes discovery (`kubernetes_sd_configs`,
 * role pod) labels them. Debian's Prometheus is built without Kubernetes discovery, so the embedded metrics
 * store reads these groups over `http_sd_configs` instead, and Linkerd's relabelling rules (which only read
 * `__meta_kubernetes_*` labels) apply to them unchanged.
 *
 * As the pod role does: one target per declared container port (`<pod IP>:<port>`), init containers included
 * (native sidecars declare the proxy's ports there) and marked `__meta_kubernetes_pod_container_init`; a
 * container without ports gives one portless target; pods without an IP yet give none (nothing to scrape).
 */
export interface PodPort {
  name?: string;
  containerPort: number;
  protocol?: string;
}
export interface PodContainer {
  name: string;
  image?: string;
  ports?: PodPort[];
}
export interface PodLike {
  metadata: {
    name: string;
    namespace?: string;
    uid?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    ownerReferences?: { kind: string; name: string; controller?: boolean }[];
  };
  spec?: { nodeName?: string; containers?: PodContainer[]; initContainers?: PodContainer[] };
  status?: {
    phase?: string;
    podIP?: string;
    hostIP?: string;
    conditions?: { type: string; status: string }[];
  };
}

/** One `http_sd` target group: the addresses and the labels they share. */
export interface TargetGroup {
  targets: string[];
  labels: Record<string, string>;
}

const PREFIX = "__meta_kubernetes_";

/** A Kubernetes label or annotation key as a Prometheus label name part (what Prometheus' discovery does). */
export function sanitizeLabelName(key: string): string {
  return key.replace(/[^a-zA-Z0-9_]/g, "_");
}

function hostPort(ip: string, port: number): string {
  return ip.includes(":") ? `[${ip}]:${port}` : `${ip}:${port}`;
}

function podLabels(pod: PodLike): Record<string, string> {
  const m = pod.metadata;
  const ready = pod.status?.conditions?.find((c) => c.type === "Ready")?.status ?? "unknown";
  const out: Record<string, string> = {
    [`${PREFIX}namespace`]: m.namespace ?? "",
    [`${PREFIX}pod_name`]: m.name,
    [`${PREFIX}pod_ip`]: pod.status?.podIP ?? "",
    [`${PREFIX}pod_ready`]: ready.toLowerCase(),
    [`${PREFIX}pod_phase`]: pod.status?.phase ?? "",
    [`${PREFIX}pod_node_name`]: pod.spec?.nodeName ?? "",
    [`${PREFIX}pod_host_ip`]: pod.status?.hostIP ?? "",
    [`${PREFIX}pod_uid`]: m.uid ?? "",
  };
  const owner = m.ownerReferences?.find((r) => r.controller);
  if (owner) {
    out[`${PREFIX}pod_controller_kind`] = owner.kind;
    out[`${PREFIX}pod_controller_name`] = owner.name;
  }
  for (const [k, v] of Object.entries(m.labels ?? {})) {
    out[`${PREFIX}pod_label_${sanitizeLabelName(k)}`] = v;
    out[`${PREFIX}pod_labelpresent_${sanitizeLabelName(k)}`] = "true";
  }
  for (const [k, v] of Object.entries(m.annotations ?? {})) {
    out[`${PREFIX}pod_annotation_${sanitizeLabelName(k)}`] = v;
    out[`${PREFIX}pod_annotationpresent_${sanitizeLabelName(k)}`] = "true";
  }
  return out;
}

/** The target groups of one pod (empty when it has no IP). */
export function podTargets(pod: PodLike): TargetGroup[] {
  const ip = pod.status?.podIP;
  if (!ip) return [];
  const base = podLabels(pod);
  const out: TargetGroup[] = [];
  const containers = [
    ...(pod.spec?.initContainers ?? []).map((c) => ({ c, init: true })),
    ...(pod.spec?.containers ?? []).map((c) => ({ c, init: false })),
  ];
  for (const { c, init } of containers) {
    const labels = {
      ...base,
      [`${PREFIX}pod_container_name`]: c.name,
      [`${PREFIX}pod_container_image`]: c.image ?? "",
      [`${PREFIX}pod_container_init`]: String(init),
    };
    if (!c.ports?.length) {
      // Prometheus adds a portless target per container only for regular containers.
      if (!init) out.push({ targets: [ip], labels });
      continue;
    }
    for (const p of c.ports) {
      out.push({
        targets: [hostPort(ip, p.containerPort)],
        labels: {
          ...labels,
          [`${PREFIX}pod_container_port_name`]: p.name ?? "",
          [`${PREFIX}pod_container_port_number`]: String(p.containerPort),
          [`${PREFIX}pod_container_port_protocol`]: p.protocol ?? "TCP",
        },
      });
    }
  }
  return out;
}

/** Every pod's groups, in a stable order (namespace, name) so that an unchanged cluster gives the same answer. */
export function allTargets(pods: Iterable<PodLike>): TargetGroup[] {
  const sorted = [...pods].sort((a, b) =>
    `${a.metadata.namespace}/${a.metadata.name}`.localeCompare(`${b.metadata.namespace}/${b.metadata.name}`)
  );
  return sorted.flatMap(podTargets);
}

/**
 * What the cache keeps of a pod: only the fields targets are made of (a pod's full spec and status are several
 * times larger, and discovery holds every pod of the cluster).
 */
export function slimPod<T extends PodLike>(pod: T): T {
  const m = pod.metadata;
  const containers = (cs: PodContainer[] | undefined) =>
    cs?.map((c) => ({
      name: c.name,
      image: c.image,
      ports: c.ports?.map((p) => ({ name: p.name, containerPort: p.containerPort, protocol: p.protocol })),
    }));
  return {
    ...pod,
    metadata: {
      ...m,
      ownerReferences: m.ownerReferences?.map((r) => ({
        kind: r.kind,
        name: r.name,
        controller: r.controller,
      })),
    },
    spec: {
      nodeName: pod.spec?.nodeName,
      containers: containers(pod.spec?.containers),
      initContainers: containers(pod.spec?.initContainers),
    },
    status: {
      phase: pod.status?.phase,
      podIP: pod.status?.podIP,
      hostIP: pod.status?.hostIP,
      conditions: pod.status?.conditions?.filter((c) => c.type === "Ready").map((c) => ({
        type: c.type,
        status: c.status,
      })),
    },
  };
}
