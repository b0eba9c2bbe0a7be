/**
 * Endpoint topics: one per (service, port, hostname) with subscribers, each holding one view
 * per client node (the filter), shared by every stream with the same key. Informer handlers
 * only mark topics dirty (no per-stream work on the watch path); one flush per coalescing window
 * recomputes them, reusing the endpoints whose inputs did not change, diffs each view once
 * against what its streams were sent, and queues the same encoded bytes for all its subscribers.
 * A fan-out pump then writes them to each subscriber's bounded queue, in order, yielding to the
 * event loop between time slices so a large fan-out does not hold up watch events or other I/O.
 */
import { sameBytes } from "../../proto/support/bytes.ts";
import { Counter, Gauge, type Registry } from "prom-client";
import { toTcpAddress } from "../../proto/ip.ts";
import { RequestError } from "../grpc/request_error.ts";
import type { KubeObject } from "../k8s/mod.ts";
import type { ClusterState } from "./cluster_state.ts";
import type { DestinationConfig } from "./config.ts";
import {
  type ClientPlace,
  computeEndpoints,
  type Endpoint,
  type EndpointSet,
  filterForClient,
  localityOf,
  type Lookups,
  sliceServiceName,
} from "./endpoints.ts";
import { encodeAdd, encodeNoEndpoints, encodeRemove, type LocatedAddr } from "./frame.ts";
import type { EndpointSlice, Pod, Service } from "./k8s_types.ts";

export interface Subscriber {
  push(message: Uint8Array): void;
}

/** Longest run of fan-out writes before the pump yields to the event loop. */
export const FANOUT_SLICE_MS = 10;

/** One message for the subscribers a view had when it was computed. */
interface FanOut {
  subscribers: readonly Subscriber[];
  message: Uint8Array;
  next: number;
}

export interface EndpointIndexOptions {
  registry?: Registry;
  /** Stops the flush and fan-out timers. */
  signal?: AbortSignal;
}

export interface EndpointRequest {
  service: string;
  namespace: string;
  port: number;
  hostname?: string;
  nodeName?: string;
}

interface View {
  client: ClientPlace;
  exists: boolean;
  snapshot: Map<string, Endpoint>;
  subscribers: Set<Subscriber>;
  /** The full-set Add for new subscribers, cached until the next change. */
  fullAdd: Uint8Array | undefined;
}

interface Topic {
  key: string;
  serviceKey: string;
  namespace: string;
  port: number;
  hostname: string | undefined;
  set: EndpointSet | undefined;
  views: Map<string, View>;
}

export class EndpointIndex {
  readonly #state: ClusterState;
  readonly #config: DestinationConfig;
  readonly #lookups: Lookups;
  readonly #topics = new Map<string, Topic>();
  readonly #byService = new Map<string, Set<Topic>>();
  /** Topics built from each pod: most pods back one topic, held without a Set of its own. */
  readonly #byPod = new Map<string, Topic | Set<Topic>>();
  readonly #dirty = new Set<Topic>();
  #scheduled = false;
  #flushTimer: ReturnType<typeof setTimeout> | undefined;
  #lastFlush = -Infinity;
  /** Bumped when an input every endpoint may read changes, so no endpoint is reused across it. */
  #generation = 0;
  #fanout: FanOut[] = [];
  #fanoutHead = 0;
  #pumpTimer: ReturnType<typeof setTimeout> | undefined;
  #closed = false;
  readonly #updates: Counter | undefined;
  /** Called after each flush with the number of topics recomputed (for benchmarks). */
  onFlush: ((topics: number) => void) | undefined;

  constructor(state: ClusterState, config: DestinationConfig, opts: EndpointIndexOptions = {}) {
    this.#state = state;
    this.#config = config;
    this.#lookups = state.lookups();
    const registry = opts.registry;
    opts.signal?.addEventListener("abort", () => this.close(), { once: true });
    if (registry) {
      const topics = this.#topics;
      this.#updates = new Counter({
        name: "endpoint_updates_sent_total",
        help: "Endpoint updates computed for views (each is sent to every subscriber of the view).",
        labelNames: ["type"],
        registers: [registry],
      });
      new Gauge({
        name: "endpoints_topics",
        help: "Watched (service, port, hostname) keys.",
        registers: [registry],
        collect() {
          this.set(topics.size);
        },
      });
      new Gauge({
        name: "endpoint_views_active",
        help: "Shared endpoint views (one per topic and client node).",
        registers: [registry],
        collect() {
          let n = 0;
          for (const t of topics.values()) n += t.views.size;
          this.set(n);
        },
      });
      new Gauge({
        name: "endpoints_subscribers",
        help: "Get streams subscribed to endpoint views.",
        registers: [registry],
        collect() {
          let n = 0;
          for (const t of topics.values()) for (const v of t.views.values()) n += v.subscribers.size;
          this.set(n);
        },
      });
      new Gauge({
        name: "endpoints_cache_size",
        help: "Endpoints held by watched topics.",
        registers: [registry],
        collect() {
          let n = 0;
          for (const t of topics.values()) n += t.set?.endpoints.length ?? 0;
          this.set(n);
        },
      });
    }
    this.#wire();
  }

  #wire(): void {
    const s = this.#state;
    const svc = (o: Service) => this.#markService(`${o.metadata.namespace}/${o.metadata.name}`);
    s.services.onAdd(svc);
    s.services.onUpdate((_o, n) => svc(n));
    s.services.onDelete(svc);
    const slice = (o: EndpointSlice) => {
      const name = sliceServiceName(o);
      if (name) this.#markService(`${o.metadata.namespace}/${name}`);
    };
    s.endpointSlices.onAdd(slice);
    s.endpointSlices.onUpdate((o, n) => {
      slice(o);
      slice(n);
    });
    s.endpointSlices.onDelete(slice);
    const pod = (o: Pod) => {
      const held = this.#byPod.get(`${o.metadata.namespace}/${o.metadata.name}`);
      if (held instanceof Set) this.#markAll(held);
      else if (held) this.#mark(held);
    };
    s.pods.onAdd(pod);
    s.pods.onUpdate((_o, n) => pod(n));
    s.pods.onDelete(pod);
    // Rare changes that can touch any topic of a namespace (or all, for nodes).
    const inNamespace = (o: KubeObject) => {
      this.#generation++;
      this.#markNamespace(o.metadata.namespace ?? o.metadata.name ?? "");
    };
    const rare = [s.replicaSets, s.jobs, s.servers, s.externalWorkloads].filter((i) => i !== undefined);
    for (const inf of rare as typeof s.replicaSets[]) {
      inf.onAdd(inNamespace);
      inf.onUpdate((_o, n) => inNamespace(n));
      inf.onDelete(inNamespace);
    }
    s.namespaces.onUpdate((_o, n) => inNamespace(n));
    const allTopics = () => {
      this.#generation++;
      this.#markAll(new Set(this.#topics.values()));
    };
    s.nodes.onAdd(allTopics);
    s.nodes.onUpdate(allTopics);
    s.nodes.onDelete(allTopics);
  }

  #markService(key: string): void {
    this.#markAll(this.#byService.get(key));
  }

  #markNamespace(ns: string): void {
    for (const t of this.#topics.values()) if (t.namespace === ns) this.#mark(t);
  }

  #markAll(topics: Set<Topic> | undefined): void {
    if (topics) { for (const t of topics) this.#mark(t); }
  }

  #mark(t: Topic): void {
    this.#dirty.add(t);
    if (this.#scheduled || this.#closed) return;
    this.#scheduled = true;
    // A change after a quiet window goes out at once; changes within the window after a flush
    // wait for its end and are merged: each dirty topic is recomputed once and its views send one
    // diff from what their streams had to the latest state, so no final state is lost.
    const wait = this.#lastFlush + this.#config.coalesceWindowMs - performance.now();
    if (wait > 0) this.#flushTimer = setTimeout(() => this.#flush(), wait);
    else queueMicrotask(() => this.#flush());
  }

  /** Recomputes dirty topics and fans out; also callable directly by tests to flush synchronously. */
  flush(): void {
    this.#flush();
  }

  /** Stops the timers; nothing more is computed or sent. */
  close(): void {
    this.#closed = true;
    clearTimeout(this.#flushTimer);
    clearTimeout(this.#pumpTimer);
    this.#dirty.clear();
    this.#fanout = [];
    this.#fanoutHead = 0;
  }

  #flush(): void {
    clearTimeout(this.#flushTimer);
    this.#flushTimer = undefined;
    this.#scheduled = false;
    if (this.#closed) return;
    this.#lastFlush = performance.now();
    const n = this.#dirty.size;
    for (const t of this.#dirty) {
      if (this.#topics.get(t.key) === t) this.#recompute(t);
    }
    this.#dirty.clear();
    if (n > 0) this.onFlush?.(n);
    // A pump already waiting for its next slice keeps the order: it takes the new jobs after the old.
    if (this.#pumpTimer === undefined) this.#pump();
  }

  /** Writes queued messages to their subscribers in order, for at most FANOUT_SLICE_MS at a time. */
  #pump(): void {
    this.#pumpTimer = undefined;
    const stop = performance.now() + FANOUT_SLICE_MS;
    let writes = 0;
    while (this.#fanoutHead < this.#fanout.length) {
      const job = this.#fanout[this.#fanoutHead];
      while (job.next < job.subscribers.length) {
        job.subscribers[job.next++].push(job.message);
        if ((++writes & 63) === 0 && performance.now() > stop) {
          this.#pumpTimer = setTimeout(() => this.#pump(), 0);
          return;
        }
      }
      // Drop the reference now: a long queue is not kept alive until it is empty.
      this.#fanout[this.#fanoutHead++] = DONE;
    }
    this.#fanout = [];
    this.#fanoutHead = 0;
  }

  /** Messages waiting for the fan-out pump (for tests and metrics). */
  get fanoutPending(): number {
    let n = 0;
    for (let i = this.#fanoutHead; i < this.#fanout.length; i++) {
      n += this.#fanout[i].subscribers.length - this.#fanout[i].next;
    }
    return n;
  }

  #compute(t: Topic): EndpointSet | undefined {
    const [ns, name] = t.serviceKey.split("/");
    const svc = this.#state.services.get(ns, name);
    if (!svc || svc.spec?.type === "ExternalName") return undefined;
    const slices = this.#state.endpointSlices.byIndex("service", t.serviceKey);
    return computeEndpoints(svc, slices, t.port, t.hostname, this.#lookups, this.#config, {
      previous: t.set,
      generation: this.#generation,
    });
  }

  #setPods(t: Topic, before: Set<string> | undefined, after: Set<string> | undefined): void {
    for (const k of before ?? []) {
      if (after?.has(k)) continue;
      const held = this.#byPod.get(k);
      if (held === t) this.#byPod.delete(k);
      else if (held instanceof Set) {
        held.delete(t);
        if (held.size === 1) this.#byPod.set(k, held.values().next().value!);
      }
    }
    for (const k of after ?? []) {
      const held = this.#byPod.get(k);
      if (held === undefined) this.#byPod.set(k, t);
      else if (held instanceof Set) held.add(t);
      else if (held !== t) this.#byPod.set(k, new Set([held, t]));
    }
  }

  #recompute(t: Topic): void {
    const set = this.#compute(t);
    this.#setPods(t, t.set?.podKeys, set?.podKeys);
    t.set = set;
    for (const view of t.views.values()) this.#updateView(t, view);
  }

  #updateView(t: Topic, view: View): void {
    const set = t.set;
    if (view.client.nodeName) view.client.zone = this.#state.nodeZone(view.client.nodeName);
    if (!set) {
      if (view.exists) {
        view.exists = false;
        view.snapshot.clear();
        view.fullAdd = undefined;
        this.#send(view, encodeNoEndpoints(false), "no_endpoints");
      }
      return;
    }
    const visible = filterForClient(set, view.client);
    const next = new Map<string, Endpoint>();
    const added: LocatedAddr[] = [];
    for (const e of visible) {
      next.set(e.key, e);
      const old = view.snapshot.get(e.key);
      // The same object: built from unchanged inputs, so the same bytes.
      if (old === e) continue;
      const locality = localityOf(e, view.client);
      if (!old || locality !== localityOf(old, view.client) || !sameBytes(old.base, e.base)) {
        added.push({ base: e.base, locality });
      }
    }
    const removed = [];
    for (const [key, old] of view.snapshot) if (!next.has(key)) removed.push(toTcpAddress(old.ip, old.port));
    const wasMissing = !view.exists;
    view.exists = true;
    view.snapshot = next;
    if (removed.length === 0 && added.length === 0) {
      if (wasMissing) {
        view.fullAdd = undefined;
        this.#send(view, encodeNoEndpoints(true), "no_endpoints");
      }
      return;
    }
    view.fullAdd = undefined;
    if (removed.length > 0) this.#send(view, encodeRemove(removed), "remove");
    if (added.length > 0) this.#send(view, encodeAdd(added, this.#setLabels(t)), "add");
  }

  #setLabels(t: Topic): Record<string, string> {
    return { service: t.serviceKey.split("/")[1], namespace: t.namespace };
  }

  /** Queues one message for the view's current subscribers: later subscribers start from the new state. */
  #send(view: View, message: Uint8Array, type: string): void {
    this.#updates?.inc({ type });
    if (view.subscribers.size === 0) return;
    this.#fanout.push({ subscribers: [...view.subscribers], message, next: 0 });
  }

  /**
   * Subscribes to a service's endpoints and sends the first message (the full set, or
   * NoEndpoints{exists:true}) at once. Throws RequestError for unknown and ExternalName services.
   * Returns the function that unsubscribes. With `allowMissing` (a member of a multicluster union,
   * whose Service may not exist yet) nothing is thrown and a missing Service starts as
   * NoEndpoints{exists:false}, followed by its endpoints once it appears.
   */
  subscribe(req: EndpointRequest, sub: Subscriber, opts: { allowMissing?: boolean } = {}): () => void {
    const svc = this.#state.services.get(req.namespace, req.service);
    if (!svc && !opts.allowMissing) {
      throw new RequestError("not_found", `Service ${req.namespace}/${req.service} not found`);
    }
    if (svc?.spec?.type === "ExternalName" && !opts.allowMissing) {
      throw new RequestError(
        "invalid_argument",
        `Service ${req.namespace}/${req.service} is of type ExternalName (${svc.spec.externalName}): not discoverable`,
      );
    }
    const serviceKey = `${req.namespace}/${req.service}`;
    const key = `${serviceKey}:${req.port}:${req.hostname ?? ""}`;
    let t = this.#topics.get(key);
    if (!t) {
      t = {
        key,
        serviceKey,
        namespace: req.namespace,
        port: req.port,
        hostname: req.hostname,
        set: undefined,
        views: new Map(),
      };
      this.#topics.set(key, t);
      let bySvc = this.#byService.get(serviceKey);
      if (!bySvc) this.#byService.set(serviceKey, bySvc = new Set());
      bySvc.add(t);
      t.set = this.#compute(t);
      this.#setPods(t, undefined, t.set?.podKeys);
    }
    const viewKey = req.nodeName ?? "";
    let view = t.views.get(viewKey);
    if (!view) {
      view = {
        client: {
          nodeName: req.nodeName,
          zone: req.nodeName ? this.#state.nodeZone(req.nodeName) : undefined,
        },
        exists: false,
        snapshot: new Map(),
        subscribers: new Set(),
        fullAdd: undefined,
      };
      t.views.set(viewKey, view);
      // Fill the snapshot without sending: the new subscriber gets the full set below.
      const subs = view.subscribers;
      view.subscribers = new Set();
      this.#updateView(t, view);
      view.subscribers = subs;
    }
    view.subscribers.add(sub);
    if (!view.exists) sub.push(encodeNoEndpoints(false));
    else if (view.snapshot.size === 0) sub.push(encodeNoEndpoints(true));
    else {
      if (!view.fullAdd) {
        const all: LocatedAddr[] = [];
        for (const e of view.snapshot.values()) {
          all.push({ base: e.base, locality: localityOf(e, view.client) });
        }
        view.fullAdd = encodeAdd(all, this.#setLabels(t));
      }
      sub.push(view.fullAdd);
    }
    const topic = t;
    const v = view;
    return () => {
      v.subscribers.delete(sub);
      if (v.subscribers.size > 0) return;
      topic.views.delete(viewKey);
      if (topic.views.size > 0) return;
      this.#topics.delete(topic.key);
      this.#dirty.delete(topic);
      this.#setPods(topic, topic.set?.podKeys, undefined);
      const bySvc = this.#byService.get(topic.serviceKey);
      bySvc?.delete(topic);
      if (bySvc?.size === 0) this.#byService.delete(topic.serviceKey);
    };
  }
}

const DONE: FanOut = { subscribers: [], message: new Uint8Array(0), next: 0 };
