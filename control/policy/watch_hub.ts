/**
 * Fans policy out to streams. Streams asking the same question share a topic (one computation,
 * one encoding per change). A store change marks the affected topics dirty and schedules one
 * flush on a later task, so the watch path does no more than a few map lookups; the flush
 * recomputes each dirty topic once and sends only what actually changed.
 */
import { sameBytes } from "../../proto/support/bytes.ts";
import { Server } from "../../proto/gen/inbound.ts";
import { OutboundPolicy, type TrafficSpec } from "../../proto/gen/outbound.ts";
import { fromTcpAddress } from "../../proto/ip.ts";
import type { PolicyConfig } from "./config.ts";
import { inboundPolicy } from "./inbound_index.ts";
import { policyForTarget, resolveTarget, sourceNamespace } from "./outbound_index.ts";
import type { Server as ServerResource } from "./resources.ts";
import { selects } from "./selector.ts";
import { externalWorkload, externalWorkloadInboundPolicy } from "./external_workload_policy.ts";
import type { PolicyStore, StoreChange } from "./store.ts";

/** Receives a topic's encoded messages, or the error that ends it. */
export interface Subscriber {
  send(bytes: Uint8Array): void;
  fail(e: unknown): void;
}

interface Topic {
  key: string;
  direction: "inbound" | "outbound";
  /** Inbound: the pod's namespace; outbound: the client's namespace (consumer routes). */
  namespace: string;
  /** Inbound only: the pod name, so pod events touch only that pod's topics. */
  pod?: string;
  /** Inbound only, instead of `pod`: the ExternalWorkload's name. */
  externalWorkload?: string;
  /** Outbound only: namespace of the Service the target resolved to at the last compute. */
  targetNs?: string;
  compute: () => Uint8Array;
  last: Uint8Array | undefined;
  subscribers: Set<Subscriber>;
}

export interface HubStats {
  topics: number;
  subscribers: number;
  flushes: number;
  recomputed: number;
  published: number;
}

export class PolicyHub {
  readonly #store: PolicyStore;
  readonly #cfg: PolicyConfig;
  readonly #topics = new Map<string, Topic>();
  /** Inbound topics by namespace, and by `namespace/pod`. */
  readonly #inByNs = new Map<string, Set<Topic>>();
  readonly #inByPod = new Map<string, Set<Topic>>();
  readonly #outbound = new Set<Topic>();
  readonly #dirty = new Set<Topic>();
  #scheduled = false;
  #unlisten: () => void;
  readonly stats: HubStats = { topics: 0, subscribers: 0, flushes: 0, recomputed: 0, published: 0 };
  /** Called after each flush with the number of topics whose message changed (benchmarks, logs). */
  onFlush: ((changed: number) => void) | undefined;

  constructor(store: PolicyStore, cfg: PolicyConfig) {
    this.#store = store;
    this.#cfg = cfg;
    this.#unlisten = store.listen((c) => this.#onChange(c));
  }

  close(): void {
    this.#unlisten();
  }

  #onChange(c: StoreChange): void {
    switch (c.kind) {
      case "Pod":
        this.#mark(this.#inByPod.get(`${c.namespace}/${c.name}`));
        // Pod IPs resolve outbound addresses: a pod taking or leaving an address changes nothing
        // today (pods get the fallback either way), so outbound topics are left alone.
        return;
      case "Namespace":
        this.#mark(this.#inByNs.get(c.namespace ?? ""));
        return;
      case "ExternalWorkload":
        this.#mark(this.#inByPod.get(`ew:${c.namespace}/${c.name}`));
        return;
      case "Service":
        // A Service may take or leave any address a stream asked about.
        this.#mark(this.#outbound);
        return;
      case "Server": {
        // Only pods the Server selected before or selects now can change.
        const servers = [c.object, c.old] as (ServerResource | undefined)[];
        const sel = servers.map((o) => o?.spec?.podSelector);
        const ewSel = servers.map((o) => o?.spec?.externalWorkloadSelector);
        const topics = this.#inByNs.get(c.namespace ?? "");
        if (!topics) return;
        const hit: Topic[] = [];
        for (const t of topics) {
          const [labels, sels] = t.externalWorkload !== undefined
            ? [externalWorkload(this.#store, t.namespace, t.externalWorkload)?.metadata.labels, ewSel]
            : [this.#store.pod(t.namespace, t.pod!)?.metadata.labels, sel];
          if (sels.some((s) => s !== undefined && selects(s, labels))) hit.push(t);
        }
        this.#mark(hit);
        return;
      }
      case "MeshTLSAuthentication":
      case "NetworkAuthentication":
        // May be referenced from other namespaces.
        for (const set of this.#inByNs.values()) this.#mark(set);
        return;
      case "EgressNetwork":
        // Which EgressNetwork (if any) an address resolves to can change for any client.
        this.#mark(this.#outbound);
        return;
      case "TLSRoute":
      case "TCPRoute":
      case "HTTPRoute":
      case "GatewayHTTPRoute":
      case "GRPCRoute": {
        this.#mark(this.#inByNs.get(c.namespace ?? ""));
        // Producer routes live with their Service; consumer routes with the client.
        const hit: Topic[] = [];
        for (const t of this.#outbound) {
          if (t.targetNs === c.namespace || t.namespace === c.namespace) hit.push(t);
        }
        this.#mark(hit);
        return;
      }
      default:
        this.#mark(this.#inByNs.get(c.namespace ?? ""));
    }
  }

  #mark(topics: Iterable<Topic> | undefined): void {
    if (!topics) return;
    for (const t of topics) this.#dirty.add(t);
    if (this.#dirty.size > 0 && !this.#scheduled) {
      this.#scheduled = true;
      // A macrotask, so a burst of events (an informer re-list) coalesces into one flush.
      setTimeout(() => this.flush(), 0);
    }
  }

  /** Recomputes dirty topics and publishes the changed ones. */
  flush(): void {
    this.#scheduled = false;
    if (this.#dirty.size === 0) return;
    const dirty = [...this.#dirty];
    this.#dirty.clear();
    this.stats.flushes++;
    let changed = 0;
    for (const t of dirty) {
      if (t.subscribers.size === 0) continue;
      this.stats.recomputed++;
      let bytes: Uint8Array;
      try {
        bytes = t.compute();
      } catch (e) {
        // The target vanished (pod or Service deleted): end its streams; proxies retry.
        for (const s of t.subscribers) s.fail(e);
        this.#drop(t);
        continue;
      }
      if (sameBytes(t.last, bytes)) continue;
      t.last = bytes;
      changed++;
      for (const s of t.subscribers) {
        this.stats.published++;
        s.send(bytes);
      }
    }
    this.onFlush?.(changed);
  }

  /**
   * Subscribes to the inbound policy of a pod port. The current policy is sent before this
   * returns; throws (not_found, invalid_argument) when there is none.
   */
  watchInbound(ns: string, pod: string, port: number, sub: Subscriber): () => void {
    const key = `in|${ns}|${pod}|${port}`;
    let t = this.#topics.get(key);
    if (!t) {
      t = {
        key,
        direction: "inbound",
        namespace: ns,
        pod,
        compute: () => Server.encode(inboundPolicy(this.#store, this.#cfg, ns, pod, port)).finish(),
        last: undefined,
        subscribers: new Set(),
      };
      t.last = t.compute(); // throws before the topic is registered
      this.#register(t);
    }
    return this.#attach(t, sub);
  }

  /** As watchInbound, for a port of an ExternalWorkload (a proxy outside the cluster). */
  watchInboundExternal(ns: string, name: string, port: number, sub: Subscriber): () => void {
    const key = `in-ew|${ns}|${name}|${port}`;
    let t = this.#topics.get(key);
    if (!t) {
      t = {
        key,
        direction: "inbound",
        namespace: ns,
        externalWorkload: name,
        compute: () =>
          Server.encode(externalWorkloadInboundPolicy(this.#store, this.#cfg, ns, name, port)).finish(),
        last: undefined,
        subscribers: new Set(),
      };
      t.last = t.compute();
      this.#register(t);
    }
    return this.#attach(t, sub);
  }

  watchOutbound(spec: TrafficSpec, sub: Subscriber): () => void {
    const target = spec.target;
    const what = target?.$case === "addr"
      ? `addr:${target.value.ip ? fromTcpAddress(target.value) : "?"}`
      : target?.$case === "authority"
      ? `auth:${target.value}`
      : "none";
    const srcNs = sourceNamespace(spec.sourceWorkload) ?? "";
    const key = `out|${srcNs}|${what}`;
    let t = this.#topics.get(key);
    if (!t) {
      const frozen: TrafficSpec = { sourceWorkload: spec.sourceWorkload, target: spec.target };
      t = {
        key,
        direction: "outbound",
        namespace: srcNs,
        compute: () => {
          const target = resolveTarget(this.#store, this.#cfg, frozen);
          t!.targetNs = target.kind === "service"
            ? target.service.metadata.namespace
            : target.kind === "egress"
            ? target.network.metadata.namespace
            : undefined;
          return OutboundPolicy.encode(policyForTarget(this.#store, this.#cfg, target)).finish();
        },
        last: undefined,
        subscribers: new Set(),
      };
      t.last = t.compute();
      this.#register(t);
    }
    return this.#attach(t, sub);
  }

  #register(t: Topic): void {
    this.#topics.set(t.key, t);
    this.stats.topics++;
    if (t.direction === "inbound") {
      const add = (m: Map<string, Set<Topic>>, k: string) => {
        let s = m.get(k);
        if (!s) m.set(k, s = new Set());
        s.add(t);
      };
      add(this.#inByNs, t.namespace);
      add(this.#inByPod, workloadKey(t));
    } else this.#outbound.add(t);
  }

  #drop(t: Topic): void {
    if (this.#topics.get(t.key) !== t) return;
    this.#topics.delete(t.key);
    this.stats.topics--;
    this.stats.subscribers -= t.subscribers.size;
    t.subscribers.clear();
    this.#dirty.delete(t);
    if (t.direction === "inbound") {
      const del = (m: Map<string, Set<Topic>>, k: string) => {
        const s = m.get(k);
        s?.delete(t);
        if (s && s.size === 0) m.delete(k);
      };
      del(this.#inByNs, t.namespace);
      del(this.#inByPod, workloadKey(t));
    } else this.#outbound.delete(t);
  }

  #attach(t: Topic, sub: Subscriber): () => void {
    t.subscribers.add(sub);
    this.stats.subscribers++;
    sub.send(t.last!);
    return () => {
      if (!t.subscribers.delete(sub)) return;
      this.stats.subscribers--;
      if (t.subscribers.size === 0) this.#drop(t);
    };
  }
}

/** The key of an inbound topic's workload in `#inByPod` (ExternalWorkloads prefixed, never a pod name). */
function workloadKey(t: Topic): string {
  return t.externalWorkload !== undefined
    ? `ew:${t.namespace}/${t.externalWorkload}`
    : `${t.namespace}/${t.pod}`;
}
