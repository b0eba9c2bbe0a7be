/**
 * The informers the destination service reads, built from one `EventSource` factory so that
 * tests pass fakes and main.ts passes `KubeApiSource`s. Objects only needed for their metadata
 * (namespaces, nodes, ReplicaSets, Jobs) are watched metadata-only, and managedFields are
 * dropped from everything cached.
 */
import type { Registry } from "prom-client";
import {
  type EventSource,
  Informer,
  type KubeObject,
  metadataOnly,
  type ResourceRef,
  Resources,
  stripManagedFields,
} from "../k8s/mod.ts";
import type { EndpointSlice, Pod, Server, Service, ServiceProfile } from "./k8s_types.ts";
import { type Lookups, sliceServiceName } from "./endpoints.ts";
import { EXTERNAL_WORKLOADS, type ExternalWorkload, externalWorkloadIps } from "../k8s/external_workload.ts";

export type SourceFactory = <T extends KubeObject>(ref: ResourceRef) => EventSource<T>;

/** Keeps only the pod fields the destination service reads. */
export function slimPod(pod: Pod): Pod {
  const m = pod.metadata;
  const slimContainer = (c: NonNullable<NonNullable<Pod["spec"]>["containers"]>[number]) => ({
    name: c.name,
    ports: c.ports?.map((p) => ({ name: p.name, containerPort: p.containerPort })),
    restartPolicy: c.restartPolicy,
    env: c.name === "linkerd-proxy"
      ? c.env?.filter((e) => e.name.endsWith("INBOUND_LISTEN_ADDR"))
      : undefined,
  });
  return {
    metadata: {
      name: m.name,
      namespace: m.namespace,
      uid: m.uid,
      resourceVersion: m.resourceVersion,
      labels: m.labels,
      annotations: m.annotations,
      ownerReferences: m.ownerReferences,
      deletionTimestamp: m.deletionTimestamp,
    },
    spec: {
      serviceAccountName: pod.spec?.serviceAccountName,
      nodeName: pod.spec?.nodeName,
      hostNetwork: pod.spec?.hostNetwork,
      containers: pod.spec?.containers?.map(slimContainer),
      initContainers: pod.spec?.initContainers?.map(slimContainer),
    },
    status: { phase: pod.status?.phase, podIP: pod.status?.podIP, podIPs: pod.status?.podIPs },
  };
}

export interface ClusterStateOptions {
  sources: SourceFactory;
  registry?: Registry;
  /** Watch policy.linkerd.io Servers (for `proxyProtocol: opaque`); off when the CRD is absent. */
  watchServers?: boolean;
  watchServiceProfiles?: boolean;
  /** Watch workload.linkerd.io ExternalWorkloads (mesh expansion); defaults to `watchServers`. */
  watchExternalWorkloads?: boolean;
  log?: (m: string) => void;
}

export class ClusterState {
  readonly services: Informer<Service>;
  readonly endpointSlices: Informer<EndpointSlice>;
  readonly pods: Informer<Pod>;
  readonly namespaces: Informer<KubeObject>;
  readonly nodes: Informer<KubeObject>;
  readonly replicaSets: Informer<KubeObject>;
  readonly jobs: Informer<KubeObject>;
  readonly servers: Informer<Server> | undefined;
  readonly serviceProfiles: Informer<ServiceProfile> | undefined;
  readonly externalWorkloads: Informer<ExternalWorkload> | undefined;

  constructor(opts: ClusterStateOptions) {
    const base = { registry: opts.registry, log: opts.log, transform: stripManagedFields };
    const make = <T extends KubeObject>(
      name: string,
      ref: ResourceRef,
      extra: Partial<ConstructorParameters<typeof Informer<T>>[0]> = {},
    ) =>
      new Informer<T>(
        { name, source: opts.sources<T>(ref), ...base, ...extra } as ConstructorParameters<
          typeof Informer<T>
        >[0],
      );
    this.services = make<Service>("services", Resources.services, {
      indexers: {
        clusterIP: (s) =>
          (s.spec?.clusterIPs ?? (s.spec?.clusterIP ? [s.spec.clusterIP] : [])).filter((ip) => ip !== "None"),
      },
    });
    this.endpointSlices = make<EndpointSlice>("endpointslices", Resources.endpointSlices, {
      indexers: {
        service: (s) => {
          const n = sliceServiceName(s);
          return n ? [`${s.metadata.namespace}/${n}`] : [];
        },
      },
    });
    this.pods = make<Pod>("pods", Resources.pods, {
      transform: slimPod,
      indexers: {
        ip: (p) =>
          p.spec?.hostNetwork
            ? []
            : (p.status?.podIPs?.map((x) => x.ip) ?? (p.status?.podIP ? [p.status.podIP] : [])),
      },
    });
    this.namespaces = make("namespaces", metadataOnly(Resources.namespaces));
    this.nodes = make("nodes", metadataOnly(Resources.nodes));
    this.replicaSets = make("replicasets", metadataOnly(Resources.replicaSets));
    this.jobs = make("jobs", metadataOnly(Resources.jobs));
    this.servers = opts.watchServers === false ? undefined : make<Server>("servers", Resources.servers, {
      indexers: { namespace: (s) => [s.metadata.namespace ?? ""] },
    });
    this.serviceProfiles = opts.watchServiceProfiles === false
      ? undefined
      : make<ServiceProfile>("serviceprofiles", Resources.serviceProfiles);
    this.externalWorkloads = (opts.watchExternalWorkloads ?? opts.watchServers) === false
      ? undefined
      : make<ExternalWorkload>("externalworkloads", EXTERNAL_WORKLOADS, {
        indexers: { namespace: (w) => [w.metadata.namespace ?? ""], ip: (w) => externalWorkloadIps(w, true) },
      });
  }

  all(): Informer<KubeObject>[] {
    return [
      this.services,
      this.endpointSlices,
      this.pods,
      this.namespaces,
      this.nodes,
      this.replicaSets,
      this.jobs,
      this.servers,
      this.serviceProfiles,
      this.externalWorkloads,
    ].filter((x) => x !== undefined) as unknown as Informer<KubeObject>[];
  }

  start(signal: AbortSignal): Promise<void[]> {
    return Promise.all(this.all().map((i) => i.start(signal)));
  }

  get synced(): Promise<void> {
    return Promise.all(this.all().map((i) => i.synced)).then(() => {});
  }

  /** Names of informers not yet synced (for /ready). */
  unsynced(): string[] {
    return this.all().filter((i) => !i.isSynced()).map((i) => i.name);
  }

  nodeZone(nodeName: string): string | undefined {
    return this.nodes.get(undefined, nodeName)?.metadata.labels?.["topology.kubernetes.io/zone"];
  }

  /** What endpoint translation reads of the cluster beyond Services and slices. */
  lookups(): Lookups {
    return {
      pod: (ns, name) => this.pods.get(ns, name),
      namespace: (name) => this.namespaces.get(undefined, name),
      nodeZone: (n) => this.nodeZone(n),
      owner: (kind, ns, name) => (kind === "Job" ? this.jobs : this.replicaSets).get(ns, name),
      servers: (ns) => this.servers?.byIndex("namespace", ns) ?? [],
      externalWorkloads: (ns) => this.externalWorkloads?.byIndex("namespace", ns) ?? [],
      externalWorkload: (ns, name) => this.externalWorkloads?.get(ns, name),
    };
  }
}
