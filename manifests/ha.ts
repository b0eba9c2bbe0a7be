/**
 * High availability (issue 19, docs/ha.md): what `--ha` and a values file change in the control plane's
 * YAML, applied to the documents before rendering, so the injector's code still builds the proxies (and
 * reads the proxy resource annotations set here). Without `--ha` and without a values file nothing is
 * touched: the render is byte-identical to one without this module.
 *
 * With HA, for destination (destination, policy and the validators share that pod), identity and the
 * proxy injector:
 *   - 3 replicas (values: replicas.<component>);
 *   - pod anti-affinity on the component label over kubernetes.io/hostname: required when the cluster has
 *     at least as many schedulable nodes as replicas, preferred otherwise (values: antiAffinity);
 *   - a topology spread over kubernetes.io/hostname, maxSkew 1, ScheduleAnyway;
 *   - rolling updates one pod at a time (`ROLLING`);
 *   - a PodDisruptionBudget with maxUnavailable 1 (the manifests carry one; it is checked, and added
 *     if missing);
 *   - resource requests and limits from measured use (`HA_RESOURCES`), each replaceable per container.
 */
import type { V1Container } from "@kubernetes/client-node";
import { Annotations } from "../proto/annotations.ts";
import { PROXY_CONTAINER } from "../control/injector/decision.ts";
import type { Manifest } from "./kinds.ts";
import {
  type AntiAffinity,
  HA_COMPONENTS,
  type HaComponent,
  type HaContainer,
  type HaValues,
  type ResourceValues,
} from "./ha_values.ts";

export const HA_REPLICAS = 3;
export const COMPONENT_LABEL = "linkerd.io/control-plane-component";
export const HOSTNAME_KEY = "kubernetes.io/hostname";

/**
 * Requests and limits with --ha. Measured on the local cluster (kubelet summary API, 2026-12-05): each
 * controller container 84–100 MB RSS idle, and ~125–135 MB with the demo running (the figure the docs
 * carry); the control plane's proxies 30–43 MB. Requests cover the loaded figure with ~25% headroom
 * (160Mi), so the scheduler reserves what a replica really uses and three replicas are not packed onto a
 * node that cannot hold them. The memory limits stay the manifests' (768Mi for destination and policy,
 * which cache every endpoint and policy object; 512Mi elsewhere): they bound a leak, and V8 grows its heap
 * in steps (the dashboard was OOM-killed at a tighter limit). CPU: 50m requested (idle use is under 1
 * millicore; 5 containers × 3 replicas × 50m is 0.75 core, which a 2-core node still admits), no CPU
 * limit: throttling a discovery server delays updates to every proxy. The proxies get 20m / 64Mi
 * requested (the injector's default 32Mi is below their measured RSS), 256Mi limit as the injector's.
 */
export const HA_RESOURCES: Record<HaContainer, ResourceValues> = {
  destination: { requests: { cpu: "50m", memory: "160Mi" }, limits: { memory: "768Mi" } },
  policy: { requests: { cpu: "50m", memory: "160Mi" }, limits: { memory: "768Mi" } },
  validator: { requests: { cpu: "50m", memory: "160Mi" }, limits: { memory: "512Mi" } },
  identity: { requests: { cpu: "50m", memory: "160Mi" }, limits: { memory: "512Mi" } },
  "proxy-injector": { requests: { cpu: "50m", memory: "160Mi" }, limits: { memory: "512Mi" } },
  "linkerd-proxy": { requests: { cpu: "20m", memory: "64Mi" }, limits: { memory: "256Mi" } },
};

/**
 * With one pod per node required, a surge pod has no node to go to while every node runs a replica: the
 * rollout would wait forever. Replacing one pod at a time (maxSurge 0, maxUnavailable 1) keeps the other
 * replicas serving, and the PDB's maxUnavailable 1 matches it.
 */
export const ROLLING = { type: "RollingUpdate", rollingUpdate: { maxSurge: 0, maxUnavailable: 1 } };

export interface HaPlan {
  ha: boolean;
  replicas: Partial<Record<HaComponent, number>>;
  /** Per component: how its replicas avoid each other (undefined: as the manifests, no affinity). */
  antiAffinity?: "preferred" | "required";
  resources: Partial<Record<HaContainer, ResourceValues>>;
}

/** A node pods can be scheduled on: Ready, not cordoned, no NoSchedule/NoExecute taint. */
export function schedulableNodes(
  nodes: {
    spec?: { unschedulable?: boolean; taints?: { effect?: string }[] };
    status?: { conditions?: { type: string; status: string }[] };
  }[],
): number {
  return nodes.filter((n) =>
    !n.spec?.unschedulable &&
    !(n.spec?.taints ?? []).some((t) => t.effect === "NoSchedule" || t.effect === "NoExecute") &&
    (n.status?.conditions ?? []).some((c) => c.type === "Ready" && c.status === "True")
  ).length;
}

/**
 * What to change, from --ha, the values file and the number of schedulable nodes (counted by deploy,
 * given to render). undefined when nothing changes (no --ha, no values file or an empty one).
 */
export function haPlan(o: { flag: boolean; values?: HaValues; nodes: number }): HaPlan | undefined {
  const v = o.values ?? {};
  const ha = o.flag || v.ha === true;
  if (!ha && !v.replicas && !v.resources && !v.antiAffinity) return undefined;
  const replicas: HaPlan["replicas"] = {};
  for (const c of HA_COMPONENTS) {
    const n = v.replicas?.[c] ?? (ha ? HA_REPLICAS : undefined);
    if (n !== undefined) replicas[c] = n;
  }
  const mode: AntiAffinity = v.antiAffinity ?? "auto";
  const most = Math.max(...Object.values(replicas), 1);
  // auto: required only with HA and enough nodes for one replica each (with fewer, required would leave
  // replicas Pending); a values file may ask for either explicitly, also without --ha.
  const antiAffinity = mode === "auto"
    ? (ha ? (o.nodes >= Math.max(most, HA_REPLICAS) ? "required" : "preferred") : undefined)
    : mode;
  return {
    ha,
    replicas,
    antiAffinity,
    resources: mergeResources(ha ? HA_RESOURCES : {}, v.resources ?? {}),
  };
}

/** Per container and field: the values file's figure over HA's (a field it does not name keeps HA's). */
function mergeResources(
  base: Partial<Record<HaContainer, ResourceValues>>,
  over: Partial<Record<HaContainer, ResourceValues>>,
): Partial<Record<HaContainer, ResourceValues>> {
  const out = structuredClone(base);
  for (const [k, r] of Object.entries(over) as [HaContainer, ResourceValues][]) {
    const b = out[k] ?? {};
    out[k] = {
      ...((b.requests || r.requests) ? { requests: { ...b.requests, ...r.requests } } : {}),
      ...((b.limits || r.limits) ? { limits: { ...b.limits, ...r.limits } } : {}),
    };
  }
  return out;
}

interface PodSpec {
  containers: V1Container[];
  initContainers?: V1Container[];
  affinity?: Record<string, unknown>;
  topologySpreadConstraints?: unknown[];
  [k: string]: unknown;
}
interface DeploymentSpec {
  replicas?: number;
  strategy?: unknown;
  template: { metadata?: { annotations?: Record<string, string> }; spec: PodSpec };
}

function setResources(c: V1Container, r: ResourceValues): void {
  const res = { ...c.resources };
  if (r.requests) res.requests = { ...res.requests, ...r.requests };
  if (r.limits) res.limits = { ...res.limits, ...r.limits };
  c.resources = res;
}

/** The proxy's resources go through the injector's annotations, as for any workload. */
function proxyAnnotations(r: ResourceValues): Record<string, string> {
  const out: Record<string, string> = {};
  if (r.requests?.cpu) out[Annotations.proxyCpuRequest] = r.requests.cpu;
  if (r.requests?.memory) out[Annotations.proxyMemoryRequest] = r.requests.memory;
  if (r.limits?.cpu) out[Annotations.proxyCpuLimit] = r.limits.cpu;
  if (r.limits?.memory) out[Annotations.proxyMemoryLimit] = r.limits.memory;
  return out;
}

function pdb(component: string, namespace: string): Manifest {
  return {
    apiVersion: "policy/v1",
    kind: "PodDisruptionBudget",
    metadata: {
      name: `weft-${component}`,
      namespace,
      labels: { "app.kubernetes.io/part-of": "weft", [COMPONENT_LABEL]: component },
    },
    spec: { maxUnavailable: 1, selector: { matchLabels: { [COMPONENT_LABEL]: component } } },
  };
}

/** The control plane's YAML documents with the plan applied (inputs are not modified). */
export function applyHa(docs: readonly Manifest[], plan: HaPlan | undefined): Manifest[] {
  const out = structuredClone(docs) as Manifest[];
  if (!plan) return out;
  const seen = new Set<string>();
  for (const m of out) {
    const component = m.metadata.labels?.[COMPONENT_LABEL] as HaComponent | undefined;
    if (!component || !(HA_COMPONENTS as readonly string[]).includes(component)) continue;
    if (m.kind === "PodDisruptionBudget" && plan.ha) {
      // One pod at a time, whatever the manifests say: with minAvailable a drain could stall.
      const spec = m.spec as Record<string, unknown>;
      delete spec.minAvailable;
      spec.maxUnavailable = 1;
      seen.add(component);
    }
    if (m.kind !== "Deployment") continue;
    const spec = m.spec as DeploymentSpec;
    const replicas = plan.replicas[component];
    if (replicas !== undefined) spec.replicas = replicas;
    const pod = spec.template.spec;
    const selector = { matchLabels: { [COMPONENT_LABEL]: component } };
    const term = { labelSelector: selector, topologyKey: HOSTNAME_KEY };
    if (plan.antiAffinity === "required") {
      pod.affinity = {
        ...pod.affinity,
        podAntiAffinity: { requiredDuringSchedulingIgnoredDuringExecution: [term] },
      };
    } else if (plan.antiAffinity === "preferred") {
      pod.affinity = {
        ...pod.affinity,
        podAntiAffinity: {
          preferredDuringSchedulingIgnoredDuringExecution: [{ weight: 100, podAffinityTerm: term }],
        },
      };
    }
    if (plan.ha) {
      pod.topologySpreadConstraints = [{
        maxSkew: 1,
        topologyKey: HOSTNAME_KEY,
        whenUnsatisfiable: "ScheduleAnyway",
        labelSelector: selector,
      }];
      if ((spec.replicas ?? 1) > 1) spec.strategy = structuredClone(ROLLING);
    }
    for (const c of [...(pod.initContainers ?? []), ...pod.containers]) {
      const r = plan.resources[c.name as HaContainer];
      if (!r) continue;
      if (c.name === PROXY_CONTAINER) continue; // not a container: env overrides (render.ts)
      setResources(c, r);
    }
    const proxy = plan.resources[PROXY_CONTAINER];
    if (proxy) {
      const tpl = spec.template;
      tpl.metadata = {
        ...tpl.metadata,
        annotations: { ...tpl.metadata?.annotations, ...proxyAnnotations(proxy) },
      };
    }
  }
  if (plan.ha) {
    const ns = out.find((m) => m.kind === "Deployment")?.metadata.namespace ?? "weft";
    for (const c of HA_COMPONENTS) if (!seen.has(c)) out.push(pdb(c, ns));
  }
  return out;
}
