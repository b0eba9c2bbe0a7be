/**
 * Test fixture: the destination service over fake event sources, served by a real grpc-js
 * server on 127.0.0.1 and read with the generated client.
 */
import * as grpc from "@grpc/grpc-js";
import { Registry } from "prom-client";
import { DestinationClient, type DestinationProfile, type Update } from "../../proto/gen/destination.ts";
import {
  type EventSource,
  FakeEventSource,
  kubeConfigFromText,
  type KubeObject,
  type ResourceRef,
} from "../k8s/mod.ts";
import { ClusterState } from "./cluster_state.ts";
import { ClusterStore, type Secret } from "./cluster_store.ts";
import { Multicluster } from "./multicluster_names.ts";
import { defaultConfig, type DestinationConfig } from "./config.ts";
import { type Destination, serveDestination } from "./server.ts";

export interface Stream<T> {
  next(timeoutMs?: number): Promise<T>;
  /** Resolves with the status when the stream ends. */
  status: Promise<grpc.StatusObject>;
  received: T[];
  call: grpc.ClientReadableStream<T>;
  cancel(): void;
}

function reader<T>(call: grpc.ClientReadableStream<T>): Stream<T> {
  const received: T[] = [];
  const waiters: ((v: T) => void)[] = [];
  let read = 0;
  call.on("data", (m: T) => {
    received.push(m);
    const w = waiters.shift();
    if (w) {
      read++;
      w(m);
    }
  });
  const status = new Promise<grpc.StatusObject>((resolve) => {
    call.on("status", resolve);
    call.on("error", () => {});
  });
  return {
    received,
    call,
    status,
    cancel: () => call.cancel(),
    next(timeoutMs = 3000) {
      if (read < received.length) return Promise.resolve(received[read++]);
      return new Promise<T>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no message within ${timeoutMs}ms`)), timeoutMs);
        waiters.push((m) => {
          clearTimeout(timer);
          resolve(m);
        });
        status.then((s) => {
          clearTimeout(timer);
          reject(new Error(`stream ended: ${s.code} ${s.details}`));
        });
      });
    },
  };
}

/** A Destination client of a server elsewhere (a deployed destination pod), for cluster tests. */
export function dialDestination(address: string): {
  get(path: string, contextToken?: string): Stream<Update>;
  close(): void;
} {
  const client = new DestinationClient(address, grpc.credentials.createInsecure());
  return {
    get: (path, contextToken = "") => reader(client.get({ scheme: "", path, contextToken })),
    close: () => client.close(),
  };
}

export class Fixture {
  readonly fakes = new Map<string, FakeEventSource<KubeObject>>();
  /** Fake sources of remote clusters, by the API server URL of their kubeconfig, then plural. */
  readonly remoteFakes = new Map<string, Map<string, FakeEventSource<KubeObject>>>();
  /** What the remote-cluster store logged. */
  readonly logs: string[] = [];
  clusters!: ClusterStore;
  readonly registry = new Registry();
  readonly ctrl = new AbortController();
  state!: ClusterState;
  destination!: Destination;
  server!: grpc.Server;
  client!: DestinationClient;
  config!: DestinationConfig;
  port = 0;
  #informers!: Promise<unknown>;

  fake(plural: string): FakeEventSource<KubeObject> {
    let f = this.fakes.get(plural);
    if (!f) this.fakes.set(plural, f = new FakeEventSource(plural));
    return f;
  }

  /** A remote cluster's fake source; the cluster is the `server` of a credentials Secret's kubeconfig. */
  remote(server: string, plural: string): FakeEventSource<KubeObject> {
    let m = this.remoteFakes.get(server);
    if (!m) this.remoteFakes.set(server, m = new Map());
    let f = m.get(plural);
    if (!f) m.set(plural, f = new FakeEventSource(`${server} ${plural}`));
    return f;
  }

  async start(overrides: Partial<DestinationConfig> = {}): Promise<this> {
    this.config = defaultConfig({
      controlPlaneNamespace: "linkerd",
      trustDomain: "cluster.local",
      ...overrides,
    });
    this.state = new ClusterState({
      sources: <T extends KubeObject>(ref: ResourceRef) => this.fake(ref.plural) as unknown as EventSource<T>,
      registry: this.registry,
      log: () => {},
    });
    this.clusters = new ClusterStore({
      secrets: this.fake("secrets") as unknown as EventSource<Secret>,
      // The real kubeconfig parsing; the "cluster" behind it is the fakes of its server URL.
      connect: (text, what) => {
        const server = kubeConfigFromText(text, what).getCurrentCluster()!.server;
        return <T extends KubeObject>(ref: ResourceRef) =>
          this.remote(server, ref.plural) as unknown as EventSource<T>;
      },
      config: this.config,
      log: (m) => this.logs.push(m),
    });
    this.#informers = Promise.all([
      this.state.start(this.ctrl.signal),
      this.clusters.start(this.ctrl.signal),
    ]);
    await this.state.synced;
    await this.clusters.secrets.synced;
    const s = await serveDestination({
      state: this.state,
      config: this.config,
      registry: this.registry,
      hostname: "127.0.0.1",
      port: 0,
      log: () => {},
      clusters: this.clusters,
      signal: this.ctrl.signal,
    });
    this.server = s.server;
    this.port = s.port;
    this.destination = s.destination;
    this.client = new DestinationClient(`127.0.0.1:${s.port}`, grpc.credentials.createInsecure());
    return this;
  }

  apply(plural: string, obj: KubeObject): void {
    this.fake(plural).apply(obj);
  }

  get(path: string, contextToken = "", client = this.client): Stream<Update> {
    return reader(client.get({ scheme: "", path, contextToken }));
  }

  profile(path: string, contextToken = ""): Stream<DestinationProfile> {
    return reader(this.client.getProfile({ scheme: "", path, contextToken }));
  }

  async metric(name: string): Promise<string> {
    return await this.registry.getSingleMetricAsString(name);
  }

  async stop(): Promise<void> {
    this.client?.close();
    this.server?.forceShutdown();
    this.ctrl.abort();
    await this.#informers;
  }
}

// Object builders.

/** A minimal kubeconfig naming `server` (no credentials: enough to parse). */
export function kubeconfigText(server: string): string {
  return [
    "apiVersion: v1",
    "kind: Config",
    `clusters: [{ name: c, cluster: { server: "${server}" } }]`,
    "users: [{ name: u, user: {} }]",
    "contexts: [{ name: x, context: { cluster: c, user: u } }]",
    "current-context: x",
  ].join("\n");
}

/** A multicluster credentials Secret of destination's namespace (`linkerd` in the fixture). */
export function credentialsSecret(
  cluster: string,
  kubeconfig: string,
  opts: { name?: string; trustDomain?: string; clusterDomain?: string; namespace?: string } = {},
): KubeObject {
  return {
    metadata: {
      name: opts.name ?? `cluster-credentials-${cluster}`,
      namespace: opts.namespace ?? "linkerd",
      labels: { [Multicluster.clusterNameLabel]: cluster },
      annotations: {
        [Multicluster.trustDomainAnnotation]: opts.trustDomain ?? "cluster.local",
        [Multicluster.clusterDomainAnnotation]: opts.clusterDomain ?? "cluster.local",
      },
    },
    type: Multicluster.credentialsSecretType,
    data: { [Multicluster.kubeconfigKey]: btoa(kubeconfig) },
  } as KubeObject;
}
export function service(
  ns: string,
  name: string,
  ports: { name?: string; port: number }[] = [{ name: "http", port: 80 }],
  extra: Record<string, unknown> = {},
  annotations?: Record<string, string>,
): KubeObject {
  return {
    metadata: { name, namespace: ns, annotations },
    spec: { type: "ClusterIP", ports, ...extra },
  } as KubeObject;
}

export interface EpSpec {
  ip: string;
  pod?: string;
  ready?: boolean;
  serving?: boolean;
  zone?: string;
  forZones?: string[];
  hostname?: string;
  nodeName?: string;
}

export function slice(
  ns: string,
  svc: string,
  eps: EpSpec[],
  ports: { name?: string; port: number }[] = [{ name: "http", port: 8080 }],
  name = `${svc}-abc`,
): KubeObject {
  return {
    metadata: { name, namespace: ns, labels: { "kubernetes.io/service-name": svc } },
    addressType: "IPv4",
    ports,
    endpoints: eps.map((e) => ({
      addresses: [e.ip],
      conditions: { ready: e.ready ?? true, serving: e.serving ?? e.ready ?? true },
      zone: e.zone,
      hostname: e.hostname,
      nodeName: e.nodeName,
      hints: e.forZones ? { forZones: e.forZones.map((z) => ({ name: z })) } : undefined,
      targetRef: e.pod ? { kind: "Pod", name: e.pod, namespace: ns } : undefined,
    })),
  } as KubeObject;
}

export function pod(
  ns: string,
  name: string,
  ip: string,
  opts: {
    meshed?: boolean | "native";
    sa?: string;
    annotations?: Record<string, string>;
    labels?: Record<string, string>;
    node?: string;
    rs?: string;
    cpNs?: string;
  } = {},
): KubeObject {
  const proxy = { name: "linkerd-proxy", ports: [{ name: "linkerd-proxy", containerPort: 4143 }] };
  const app = {
    name: "app",
    ports: [{ name: "http", containerPort: 8080 }, { name: "db", containerPort: 5433 }],
  };
  return {
    metadata: {
      name,
      namespace: ns,
      labels: {
        ...(opts.meshed ? { "linkerd.io/control-plane-ns": opts.cpNs ?? "linkerd" } : {}),
        "pod-template-hash": "h4sh",
        ...opts.labels,
      },
      annotations: opts.annotations,
      ownerReferences: opts.rs
        ? [{ apiVersion: "apps/v1", kind: "ReplicaSet", name: opts.rs, uid: "u", controller: true }]
        : [],
    },
    spec: {
      serviceAccountName: opts.sa ?? "web",
      nodeName: opts.node,
      containers: opts.meshed === true ? [app, proxy] : [app],
      initContainers: opts.meshed === "native" ? [{ ...proxy, restartPolicy: "Always" }] : [],
    },
    status: { phase: "Running", podIP: ip, podIPs: [{ ip }] },
  } as KubeObject;
}
