/**
 * The remote clusters destination discovers endpoints in (flat and federated multicluster), built
 * from the credentials Secrets of type `mirror.linkerd.io/remote-kubeconfig` in its own namespace
 * (Linkerd's cluster store). Each Secret gives one cluster: a client from its `kubeconfig`, the
 * same informers destination keeps locally (Services, EndpointSlices, pods, ...) and an endpoint
 * index computing addresses with that cluster's trust and cluster domains. A Secret added,
 * changed or removed starts, replaces or stops its cluster; listeners hear the cluster's name so
 * streams move to the new index. Handlers only build objects and start informers without
 * awaiting them: a slow or unreachable cluster never holds up the event path, and a Secret whose
 * kubeconfig is bad is logged by name and skipped.
 */
import {
  type EventSource,
  Informer,
  type KubeObject,
  objectKey,
  secretText,
  stripManagedFields,
} from "../k8s/mod.ts";
import { ClusterState, type SourceFactory } from "./cluster_state.ts";
import type { DestinationConfig } from "./config.ts";
import { EndpointIndex } from "./endpoint_index.ts";
import { Multicluster } from "./multicluster_names.ts";

export type Secret = KubeObject & { type?: string; data?: Record<string, string> };

export interface RemoteCluster {
  name: string;
  /** `namespace/name` of the Secret it was built from. */
  secret: string;
  trustDomain: string;
  clusterDomain: string;
  state: ClusterState;
  endpoints: EndpointIndex;
}

export interface ClusterStoreOptions {
  /** The credentials Secrets of destination's namespace (main.ts selects them by type). */
  secrets: EventSource<Secret>;
  /** Informer sources for a cluster from its kubeconfig text; throws when the kubeconfig is bad. */
  connect: (kubeconfig: string, secret: string) => SourceFactory;
  /** The local configuration; a remote cluster's copy takes its trust and cluster domains. */
  config: DestinationConfig;
  log?: (m: string) => void;
}

interface Entry {
  cluster: RemoteCluster;
  /** What the cluster was built from: an update that leaves it equal changes nothing. */
  basis: string;
  ctrl: AbortController;
}

function decode(b64: string | undefined): string | undefined {
  if (b64 === undefined) return undefined;
  try {
    return secretText(b64);
  } catch {
    return undefined;
  }
}

export class ClusterStore {
  readonly secrets: Informer<Secret>;
  readonly #opts: ClusterStoreOptions;
  readonly #log: (m: string) => void;
  /** By cluster name. */
  readonly #clusters = new Map<string, Entry>();
  /** Secret key → cluster name it currently provides. */
  readonly #bySecret = new Map<string, string>();
  readonly #listeners = new Set<(cluster: string) => void>();
  #signal: AbortSignal | undefined;

  constructor(opts: ClusterStoreOptions) {
    this.#opts = opts;
    this.#log = opts.log ?? console.error;
    this.secrets = new Informer<Secret>({
      name: "remote_cluster_secrets",
      source: opts.secrets,
      transform: stripManagedFields,
      log: this.#log,
    });
    this.secrets.onAdd((s) => this.#apply(s));
    this.secrets.onUpdate((_o, s) => this.#apply(s));
    this.secrets.onDelete((s) => this.#remove(objectKey(s)));
  }

  /** Runs the Secret informer (and the clusters' informers) until `signal` aborts. */
  start(signal: AbortSignal): Promise<void> {
    this.#signal = signal;
    signal.addEventListener("abort", () => {
      for (const e of this.#clusters.values()) e.ctrl.abort();
    }, { once: true });
    return this.secrets.start(signal);
  }

  get(name: string): RemoteCluster | undefined {
    return this.#clusters.get(name)?.cluster;
  }

  names(): string[] {
    return [...this.#clusters.keys()];
  }

  /** `fn(cluster)` after a cluster is added, replaced or removed; returns the unsubscribe. */
  onChange(fn: (cluster: string) => void): () => void {
    this.#listeners.add(fn);
    return () => this.#listeners.delete(fn);
  }

  #notify(cluster: string): void {
    for (const fn of [...this.#listeners]) {
      try {
        fn(cluster);
      } catch (e) {
        this.#log(`destination: remote cluster ${cluster}: listener failed: ${(e as Error).message}`);
      }
    }
  }

  #apply(secret: Secret): void {
    const key = objectKey(secret);
    if (secret.type !== undefined && secret.type !== Multicluster.credentialsSecretType) {
      this.#remove(key);
      return;
    }
    const name = secret.metadata.labels?.[Multicluster.clusterNameLabel];
    const ann = secret.metadata.annotations ?? {};
    const kubeconfig = decode(secret.data?.[Multicluster.kubeconfigKey]);
    const what = `credentials Secret ${key}`;
    if (!name) {
      this.#log(`destination: ${what} has no ${Multicluster.clusterNameLabel} label: ignored`);
      this.#remove(key);
      return;
    }
    if (!kubeconfig) {
      this.#log(`destination: ${what} has no readable '${Multicluster.kubeconfigKey}' key: ignored`);
      this.#remove(key);
      return;
    }
    const config: DestinationConfig = {
      ...this.#opts.config,
      trustDomain: ann[Multicluster.trustDomainAnnotation] || this.#opts.config.trustDomain,
      clusterDomain: ann[Multicluster.clusterDomainAnnotation] || "cluster.local",
    };
    const basis = JSON.stringify([name, config.trustDomain, config.clusterDomain, kubeconfig]);
    const held = this.#clusters.get(name);
    if (held && held.cluster.secret === key && held.basis === basis) return;
    if (held && held.cluster.secret !== key) {
      this.#log(
        `destination: ${what} names cluster ${name}, also named by ${held.cluster.secret}: it replaces it`,
      );
    }
    let sources: SourceFactory;
    try {
      sources = this.#opts.connect(kubeconfig, what);
    } catch (e) {
      // The cluster keeps serving from what it had, if anything: a bad edit does not cut it off.
      this.#log(`destination: ${what}: cluster ${name} not (re)connected: ${(e as Error).message}`);
      return;
    }
    // The Secret may have been renamed to another cluster: drop what it gave before.
    const before = this.#bySecret.get(key);
    if (before !== undefined && before !== name) this.#remove(key);
    const ctrl = new AbortController();
    if (this.#signal?.aborted) ctrl.abort();
    else this.#signal?.addEventListener("abort", () => ctrl.abort(), { once: true });
    const log = (m: string) => this.#log(`destination: remote cluster ${name}: ${m}`);
    // Servers, ServiceProfiles and ExternalWorkloads are not read remotely: their CRDs may be
    // absent there, and an informer that never syncs would only cost retries.
    const state = new ClusterState({
      sources,
      watchServers: false,
      watchServiceProfiles: false,
      watchExternalWorkloads: false,
      log,
    });
    const endpoints = new EndpointIndex(state, config, { signal: ctrl.signal });
    state.start(ctrl.signal).catch((e) => log(`informers stopped: ${(e as Error).message}`));
    state.synced.then(() => {
      if (!ctrl.signal.aborted) log("synced");
    });
    const cluster: RemoteCluster = {
      name,
      secret: key,
      trustDomain: config.trustDomain,
      clusterDomain: config.clusterDomain,
      state,
      endpoints,
    };
    this.#clusters.set(name, { cluster, basis, ctrl });
    this.#bySecret.set(key, name);
    if (held) {
      held.ctrl.abort();
      if (held.cluster.secret !== key) this.#bySecret.delete(held.cluster.secret);
    }
    log(
      `${
        held ? "replaced" : "added"
      } from ${key} (trust domain ${config.trustDomain}, cluster domain ${config.clusterDomain})`,
    );
    this.#notify(name);
  }

  #remove(secretKey: string): void {
    const name = this.#bySecret.get(secretKey);
    if (name === undefined) return;
    this.#bySecret.delete(secretKey);
    const held = this.#clusters.get(name);
    if (!held || held.cluster.secret !== secretKey) return;
    this.#clusters.delete(name);
    held.ctrl.abort();
    this.#log(`destination: remote cluster ${name}: removed (${secretKey} gone)`);
    this.#notify(name);
  }
}
