/**
 * One Link's mirroring while its spec stays the same: informers on the target cluster's Services
 * and on the source cluster's namespaces and federated members, a bounded work queue of remote
 * Service keys reconciled one at a time, a resync at start (and every `resyncPeriodMs`) that also
 * visits every object this link owns so orphaned mirrors go, and the gateway prober. Watch
 * handlers only enqueue keys.
 */
import type { KubeConfig } from "@kubernetes/client-node";
import { type EventSource, Informer, KubeApiSource, metadataOnly, Resources } from "../k8s/mod.ts";
import type { KubeObject } from "../k8s/mod.ts";
import { cachedGatewayIps } from "./gateway.ts";
import { type Link, selectorString } from "./link.ts";
import type { ServiceMirrorMetrics } from "./metrics.ts";
import type { MirrorApi } from "./mirror_api.ts";
import { classify, type Endpoints, endpointsEmpty, type Service } from "./mirror_objects.ts";
import { GatewayProber } from "./probe.ts";
import { Reconciler } from "./reconciler.ts";
import { WorkQueue } from "./work_queue.ts";

export interface LinkSessionOptions {
  link: Link;
  api: MirrorApi;
  /** Target cluster Services (all namespaces). */
  remoteServices: EventSource<Service>;
  /** Target cluster Endpoints of exported Services (their emptiness empties gateway mirrors). */
  remoteEndpoints: EventSource<Endpoints>;
  /** Source cluster namespaces (metadata is enough). */
  localNamespaces: EventSource<KubeObject>;
  /** Source cluster Services selected by the link's federatedServiceSelector. */
  localFederated: EventSource<Service>;
  metrics: ServiceMirrorMetrics;
  log: (message: string) => void;
  resyncPeriodMs?: number;
  queueMaxSize?: number;
  /** Gateway address -> IPs; DNS with a short cache when unset. */
  gatewayIps?: (address: string) => Promise<string[]>;
  fetch?: typeof fetch;
}

/** What a cached remote Service keeps: the fields mirrors are built from. */
export function slimService(s: Service): Service {
  const m = s.metadata;
  return {
    metadata: {
      name: m.name,
      namespace: m.namespace,
      uid: m.uid,
      resourceVersion: m.resourceVersion,
      labels: m.labels,
      annotations: m.annotations,
    },
    spec: { ports: s.spec?.ports, clusterIP: s.spec?.clusterIP, type: s.spec?.type },
  };
}

export function sessionSources(link: Link, localKc: KubeConfig, remoteKc: KubeConfig) {
  return {
    remoteServices: new KubeApiSource<Service>(remoteKc, Resources.services),
    // Endpoints carry their Service's labels, so the link's selector keeps this cache to exported ones.
    remoteEndpoints: new KubeApiSource<Endpoints>(remoteKc, {
      group: "",
      version: "v1",
      plural: "endpoints",
      labelSelector: selectorString(link.selector),
    }),
    localNamespaces: new KubeApiSource<KubeObject>(localKc, metadataOnly(Resources.namespaces)),
    localFederated: new KubeApiSource<Service>(localKc, {
      ...Resources.services,
      labelSelector: selectorString(link.federatedServiceSelector),
      metadataOnly: true,
    }),
  };
}

function keyOf(o: KubeObject): string {
  return `${o.metadata.namespace}/${o.metadata.name}`;
}

export class LinkSession {
  readonly link: Link;
  readonly #o: LinkSessionOptions;
  readonly remote: Informer<Service>;
  readonly remoteEndpoints: Informer<Endpoints>;
  readonly namespaces: Informer<KubeObject>;
  readonly localFederated: Informer<Service>;
  readonly reconciler: Reconciler;
  readonly queue: WorkQueue;
  readonly prober: GatewayProber | undefined;
  #resynced = false;

  constructor(o: LinkSessionOptions) {
    this.#o = o;
    this.link = o.link;
    const link = o.link;
    const target = link.targetClusterName;
    const log = (s: string) => o.log(`[${target}] ${s}`);
    this.remote = new Informer<Service>({
      name: "remote_services",
      source: o.remoteServices,
      transform: slimService,
      log: (s) => log(`remote services: ${s}`),
    });
    this.remoteEndpoints = new Informer<Endpoints>({
      name: "remote_endpoints",
      source: o.remoteEndpoints,
      // Only whether any address is ready matters here.
      transform: (e) => ({
        metadata: {
          name: e.metadata.name,
          namespace: e.metadata.namespace,
          resourceVersion: e.metadata.resourceVersion,
        },
        subsets: endpointsEmpty(e) ? [] : [{ addresses: [{ ip: "ready" }] }],
      }),
      log: (s) => log(`remote endpoints: ${s}`),
    });
    this.namespaces = new Informer<KubeObject>({
      name: "namespaces",
      source: o.localNamespaces,
      log: (s) => log(`namespaces: ${s}`),
    });
    this.localFederated = new Informer<Service>({
      name: "local_federated_services",
      source: o.localFederated,
      log: (s) => log(`local federated services: ${s}`),
    });
    const gatewayIps = o.gatewayIps ?? cachedGatewayIps(30_000);
    this.reconciler = new Reconciler({
      api: o.api,
      link: () => link,
      remote: (ns, name) => this.remote.get(ns, name),
      namespaceExists: (ns) => this.namespaces.get(undefined, ns) !== undefined,
      localFederatedMember: (ns, name) => this.localFederated.get(ns, name) !== undefined,
      gatewayIps: () => gatewayIps(link.gatewayAddress),
      gatewayAlive: () => this.prober?.alive ?? true,
      remoteEmpty: (ns, name) => {
        const e = this.remoteEndpoints.get(ns, name);
        return e ? endpointsEmpty(e) : undefined;
      },
      log,
    });
    const labels = { target_cluster_name: target };
    this.queue = new WorkQueue({
      maxSize: o.queueMaxSize ?? 10_000,
      maxRetries: 8,
      backoff: { initialMs: 200, maxMs: 30_000 },
      process: async (key) => {
        try {
          await this.reconciler.reconcile(key);
        } finally {
          this.#updateGauges();
        }
      },
      onError: (key, e, attempt, retry) => {
        o.metrics.reconcileErrors.inc(labels);
        log(
          `reconcile ${key} failed (attempt ${attempt}${
            retry ? ", will retry" : ", left for the next resync"
          }): ${e instanceof Error ? e.message : e}`,
        );
      },
      onOverflow: () => {
        o.metrics.queueDropped.inc(labels);
        void this.resync().catch((e) => log(`resync after overflow failed: ${e.message ?? e}`));
      },
    });
    this.prober = link.gatewayAddress
      ? new GatewayProber({
        link: () => link,
        metrics: o.metrics,
        gatewayIps,
        log,
        fetch: o.fetch,
        // The gateway Endpoints follow the probe: not ready while it fails, ready again when it answers.
        onChange: () => {
          for (const [key, mode] of this.reconciler.mirrored) if (mode === "gateway") this.queue.add(key);
        },
      })
      : undefined;
    this.#wire();
  }

  #updateGauges(): void {
    const target = this.link.targetClusterName;
    const c = this.reconciler.counts();
    for (const mode of ["gateway", "flat", "federated"] as const) {
      this.#o.metrics.mirrored.set({ target_cluster_name: target, mode }, c[mode]);
    }
    this.#o.metrics.queueDepth.set({ target_cluster_name: target }, this.queue.depth);
  }

  /** Whether this link exports `s` in any way (a mirror or a federated member). */
  selected(s: Service | undefined): boolean {
    if (!s) return false;
    const c = classify(s, this.link);
    return c.mode !== undefined || c.federated;
  }

  #known(key: string): boolean {
    return this.reconciler.mirrored.has(key) || this.reconciler.federated.has(key);
  }

  #wire(): void {
    const remoteChange = (old: Service | undefined, s: Service) => {
      const key = keyOf(s);
      if (this.selected(old) || this.selected(s) || this.#known(key)) this.queue.add(key);
    };
    this.remote.onAdd((s) => remoteChange(undefined, s));
    this.remote.onUpdate((old, s) => remoteChange(old, s));
    this.remote.onDelete((s) => remoteChange(s, s));
    // A remote Service that loses (or regains) its last ready endpoint: its gateway mirror follows.
    const epChange = (old: Endpoints | undefined, e: Endpoints | undefined) => {
      const cur = e ?? old!;
      if (old && e && endpointsEmpty(old) === endpointsEmpty(e)) return;
      const key = keyOf(cur);
      if (this.reconciler.mirrored.get(key) === "gateway" || this.selected(this.remote.getByKey(key))) {
        this.queue.add(key);
      }
    };
    this.remoteEndpoints.onAdd((e) => epChange(undefined, e));
    this.remoteEndpoints.onUpdate((old, e) => epChange(old, e));
    this.remoteEndpoints.onDelete((e) => epChange(e, undefined));
    // A namespace that appears may now hold mirrors that were skipped; one that goes took them along.
    const nsChange = (ns: KubeObject) => {
      const name = ns.metadata.name;
      for (const s of this.remote.values()) {
        if (s.metadata.namespace === name && (this.selected(s) || this.#known(keyOf(s)))) {
          this.queue.add(keyOf(s));
        }
      }
    };
    this.namespaces.onAdd(nsChange);
    this.namespaces.onDelete(nsChange);
    // The local member decides the federated Service's local-discovery annotation.
    const localChange = (s: Service) => {
      const key = keyOf(s);
      if (this.selected(this.remote.getByKey(key)) || this.#known(key)) this.queue.add(key);
    };
    this.localFederated.onAdd(localChange);
    this.localFederated.onUpdate((_, s) => localChange(s));
    this.localFederated.onDelete(localChange);
  }

  /** Ready once every key of the first resync has been reconciled once. */
  ready(): string | undefined {
    if (!this.remote.isSynced()) {
      return `target cluster ${this.link.targetClusterName} services not listed yet`;
    }
    if (!this.namespaces.isSynced() || !this.localFederated.isSynced()) {
      return "source cluster not listed yet";
    }
    if (!this.#resynced) return "first resync not done";
    return undefined;
  }

  /** Enqueues every remote Service this link exports and every object it owns in the source cluster. */
  async resync(): Promise<number> {
    const keys = await this.reconciler.ownedKeys();
    for (const s of this.remote.values()) if (this.selected(s)) keys.add(keyOf(s));
    for (const k of keys) this.queue.add(k);
    return keys.size;
  }

  async run(signal: AbortSignal): Promise<void> {
    const log = (s: string) => this.#o.log(`[${this.link.targetClusterName}] ${s}`);
    const running = [
      this.remote.start(signal),
      this.remoteEndpoints.start(signal),
      this.namespaces.start(signal),
      this.localFederated.start(signal),
      this.prober?.run(signal),
    ];
    await Promise.race([
      Promise.all([
        this.remote.synced,
        this.remoteEndpoints.synced,
        this.namespaces.synced,
        this.localFederated.synced,
      ]),
      new Promise((r) => signal.addEventListener("abort", r, { once: true })),
    ]);
    if (signal.aborted) return void await Promise.allSettled(running);
    const worker = this.queue.run(signal);
    // The first resync is retried until it works: it is what removes orphans of an earlier run.
    for (let delay = 1000; !signal.aborted; delay = Math.min(delay * 2, 30_000)) {
      try {
        const n = await this.resync();
        log(`resync: ${n} remote services to reconcile`);
        break;
      } catch (e) {
        log(`resync failed: ${e instanceof Error ? e.message : e}`);
        await sleep(delay, signal);
      }
    }
    // Ready after one pass over every key; a key that keeps failing is retried in the background.
    while (!signal.aborted && !this.queue.drained()) await sleep(50, signal);
    this.#resynced = true;
    this.#updateGauges();
    const period = this.#o.resyncPeriodMs ?? 60_000;
    while (!signal.aborted) {
      await sleep(period, signal);
      if (signal.aborted) break;
      await this.resync().catch((e) => log(`resync failed: ${e.message ?? e}`));
    }
    await Promise.allSettled([...running, worker]);
  }
}

export function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((r) => {
    if (signal.aborted) return r();
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal.removeEventListener("abort", done);
      r();
    }
    signal.addEventListener("abort", done, { once: true });
  });
}
