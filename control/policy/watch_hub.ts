/**
 * Fans policy out to streams. Streams asking the same question share a topic, and topics whose
 * answers are equal share one computation and one encoding per flush (the answer's share key: a
 * Server and port, a Service port): the same bytes go to every stream. The watch path only records
 * the store change and schedules one flush at most `coalesceWindowMs` later (at once after a quiet
 * window), so a burst of events (an informer re-list, a rollout) coalesces and the event path does
 * no per-topic or per-stream work; the flush works out which topics the changes can affect (route changes only the topics
 * of the Servers and Services they name), recomputes each once and sends only what changed.
 * Streams that do not keep up are the sinks' business (bounded queue, then reset).
 */
import { sameBytes } from "../../proto/support/bytes.ts";
import { Server } from "../../proto/gen/inbound.ts";
import { OutboundPolicy, type TrafficSpec } from "../../proto/gen/outbound.ts";
import { fromIpAddress, fromTcpAddress } from "../../proto/ip.ts";
import type { PolicyConfig } from "./config.ts";
import { resolveInbound } from "./inbound_index.ts";
import { policyForTarget, resolveTarget, sourceNamespace, targetShareKey } from "./outbound_index.ts";
import type {
  AuthorizationPolicy,
  ObjectRef,
  Server as ServerResource,
  Service as ServiceResource,
} from "./resources.ts";
import {
  isMeshTlsAuthenticationRef,
  isNetworkAuthenticationRef,
  isServerRef,
  isServiceRef,
} from "./ref_kind.ts";
import { selects } from "./selector.ts";
import { externalWorkload, externalWorkloadInboundPolicy } from "./external_workload_policy.ts";
import { type PolicyStore, serviceIps, type StoreChange } from "./store.ts";

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
  /** Outbound only: the IP asked about, for an `addr` target. */
  addr?: string;
  /** Outbound only: namespace of the Service the target resolved to at the last compute. */
  targetNs?: string;
  /**
   * `namespace/name` of the Server (inbound) or Service (outbound) the topic's answer came from at
   * the last compute, indexed so a route change reaches only the topics of its parents.
   */
  parent?: string;
  /** Computes the encoded answer, taking it from `shared` when an equal answer was encoded this flush. */
  compute: (shared: Map<string, Uint8Array>) => Uint8Array;
  last: Uint8Array | undefined;
  subscribers: Set<Subscriber>;
}

export interface HubStats {
  topics: number;
  subscribers: number;
  flushes: number;
  /** Topics recomputed. */
  recomputed: number;
  /** Answers encoded; recomputed − encoded were shared with a topic of equal answer. */
  encoded: number;
  published: number;
}

export interface HubOptions {
  /**
   * The shortest time between two flushes (ms): changes within it of the last flush are merged and
   * sent at its end; a change after a quiet window goes out on the next macrotask. Bounded: later
   * changes never postpone a scheduled flush. 0 flushes on the next macrotask always.
   */
  coalesceWindowMs?: number;
}

/** Long enough to fold an informer burst into one flush, short against the 100 ms propagation goal. */
export const DEFAULT_COALESCE_WINDOW_MS = 5;

export class PolicyHub {
  readonly #store: PolicyStore;
  readonly #cfg: PolicyConfig;
  readonly #topics = new Map<string, Topic>();
  /** Inbound topics by namespace, and by `namespace/pod`. */
  readonly #inByNs = new Map<string, Set<Topic>>();
  readonly #inByPod = new Map<string, Set<Topic>>();
  readonly #outbound = new Set<Topic>();
  /** Topics by the `namespace/name` of their answer's Server (inbound) or Service (outbound). */
  readonly #inByServer = new Map<string, Set<Topic>>();
  readonly #outByService = new Map<string, Set<Topic>>();
  /** Outbound `addr` topics by the IP asked about. */
  readonly #outByAddr = new Map<string, Set<Topic>>();
  /** ExternalWorkload inbound topics by namespace (not indexed by Server: see watchInboundExternal). */
  readonly #inExternalByNs = new Map<string, Set<Topic>>();
  readonly #dirty = new Set<Topic>();
  /** Store changes since the last flush, expanded into dirty topics by the flush. */
  #changes: StoreChange[] = [];
  #timer: ReturnType<typeof setTimeout> | undefined;
  /** When the last flush ended (performance.now()). */
  #lastFlush = -Infinity;
  #unlisten: () => void;
  readonly coalesceWindowMs: number;
  readonly stats: HubStats = {
    topics: 0,
    subscribers: 0,
    flushes: 0,
    recomputed: 0,
    encoded: 0,
    published: 0,
  };
  /** Called after each flush with the number of topics whose message changed (benchmarks, logs). */
  onFlush: ((changed: number) => void) | undefined;

  constructor(store: PolicyStore, cfg: PolicyConfig, opts: HubOptions = {}) {
    const w = opts.coalesceWindowMs ?? DEFAULT_COALESCE_WINDOW_MS;
    if (!Number.isFinite(w) || w < 0 || w > 1000) {
      throw new RangeError(`policy hub: coalesce window must be 0..1000 ms, got ${w}`);
    }
    this.coalesceWindowMs = w;
    this.#store = store;
    this.#cfg = cfg;
    this.#unlisten = store.listen((c) => this.#onChange(c));
  }

  close(): void {
    this.#unlisten();
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#changes = [];
  }

  /**
   * The watch path: remember the change, schedule a flush; nothing per topic or per stream. After a
   * quiet window the flush runs on the next macrotask (what arrives in the same task still folds
   * into it); within `coalesceWindowMs` of the last flush it waits for the window's end, so a burst
   * costs one flush per window and no change waits longer than the window.
   */
  #onChange(c: StoreChange): void {
    this.#changes.push(c);
    if (this.#timer === undefined) {
      const wait = Math.max(0, this.#lastFlush + this.coalesceWindowMs - performance.now());
      this.#timer = setTimeout(() => this.flush(), wait);
    }
  }

  /** Marks the topics a change can affect. */
  #expand(c: StoreChange): void {
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
      case "Service": {
        if (c.type !== "modified") {
          // A Service appearing or vanishing changes every route naming it as a backend, anywhere.
          this.#mark(this.#outbound);
          return;
        }
        // Otherwise only the topics answered from it, and those asking about an address it took or left.
        this.#mark(this.#outByService.get(`${c.namespace ?? ""}/${c.name}`));
        for (
          const ip of [...serviceIps(c.object as ServiceResource), ...serviceIps(c.old as ServiceResource)]
        ) {
          this.#mark(this.#outByAddr.get(ip));
        }
        return;
      }
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
      case "NetworkAuthentication": {
        // Read only through AuthorizationPolicies requiring it, which may live in other namespaces
        // and apply to the inbound topics of their own.
        const isRef = c.kind === "MeshTLSAuthentication"
          ? isMeshTlsAuthenticationRef
          : isNetworkAuthenticationRef;
        const namespaces = new Set<string>();
        for (const ap of this.#store.list<AuthorizationPolicy>("AuthorizationPolicy")) {
          const apNs = ap.metadata.namespace ?? "";
          if (namespaces.has(apNs)) continue;
          const refs = ap.spec?.requiredAuthenticationRefs ?? [];
          if (refs.some((r) => isRef(r) && r.name === c.name && (r.namespace ?? apNs) === c.namespace)) {
            namespaces.add(apNs);
          }
        }
        for (const ns of namespaces) this.#mark(this.#inByNs.get(ns));
        return;
      }
      case "EgressNetwork":
        // Which EgressNetwork (if any) an address resolves to can change for any client.
        this.#mark(this.#outbound);
        return;
      case "TLSRoute":
      case "TCPRoute":
      case "HTTPRoute":
      case "GatewayHTTPRoute":
      case "GRPCRoute": {
        const routeNs = c.namespace ?? "";
        const refs = [c.object, c.old].flatMap((o) =>
          (o?.spec as { parentRefs?: ObjectRef[] })?.parentRefs ?? []
        );
        const target = (p: ObjectRef) => `${p.namespace ?? routeNs}/${p.name}`;
        if (!refs.every((p) => isServerRef(p) || isServiceRef(p))) {
          // A parent other than a Server or Service (an EgressNetwork, a typo): recompute broadly.
          this.#mark(this.#inByNs.get(routeNs));
          const hit: Topic[] = [];
          for (const t of this.#outbound) {
            if (t.targetNs === routeNs || t.namespace === routeNs) hit.push(t);
          }
          this.#mark(hit);
          return;
        }
        // A route attaches only to the Servers and Services it names (before or after the change).
        for (const p of refs) {
          if (isServerRef(p)) {
            this.#mark(this.#inByServer.get(target(p)));
            this.#mark(this.#inExternalByNs.get(p.namespace ?? routeNs));
          } else {
            const svcNs = p.namespace ?? routeNs;
            const topics = this.#outByService.get(target(p));
            // Producer routes (with their Service) reach every client; consumer routes their namespace's.
            if (topics) this.#mark([...topics].filter((t) => svcNs === routeNs || t.namespace === routeNs));
          }
        }
        return;
      }
      default:
        this.#mark(this.#inByNs.get(c.namespace ?? ""));
    }
  }

  #mark(topics: Iterable<Topic> | undefined): void {
    if (!topics) return;
    for (const t of topics) this.#dirty.add(t);
  }

  /** Applies the changes since the last flush: recomputes affected topics, publishes the changed ones. */
  flush(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    const changes = this.#changes;
    this.#changes = [];
    this.#lastFlush = performance.now();
    for (const c of changes) this.#expand(c);
    if (this.#dirty.size === 0) return;
    const dirty = [...this.#dirty];
    this.#dirty.clear();
    this.stats.flushes++;
    const shared = new Map<string, Uint8Array>();
    let changed = 0;
    for (const t of dirty) {
      if (t.subscribers.size === 0) continue;
      this.stats.recomputed++;
      let bytes: Uint8Array;
      try {
        bytes = t.compute(shared);
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
    this.#lastFlush = performance.now();
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
        compute: (shared) => {
          const answer = resolveInbound(this.#store, this.#cfg, ns, pod, port);
          this.#reparent(t!, answer.server, this.#inByServer);
          return this.#encode(shared, answer.shareKey, () => Server.encode(answer.build()).finish());
        },
        last: undefined,
        subscribers: new Set(),
      };
      t.last = t.compute(new Map()); // throws before the topic is registered
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
        // Never shared, never indexed by Server: ExternalWorkload topics are recomputed for any
        // change in their namespace (few of them, and their answers read the workload itself).
        compute: () =>
          Server.encode(externalWorkloadInboundPolicy(this.#store, this.#cfg, ns, name, port)).finish(),
        last: undefined,
        subscribers: new Set(),
      };
      t.last = t.compute(new Map());
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
        addr: target?.$case === "addr" && target.value.ip ? fromIpAddress(target.value.ip) : undefined,
        compute: (shared) => {
          const target = resolveTarget(this.#store, this.#cfg, frozen);
          t!.targetNs = target.kind === "service"
            ? target.service.metadata.namespace
            : target.kind === "egress"
            ? target.network.metadata.namespace
            : undefined;
          const parent = target.kind === "service"
            ? `${target.service.metadata.namespace ?? ""}/${target.service.metadata.name}`
            : undefined;
          this.#reparent(t!, parent, this.#outByService);
          return this.#encode(
            shared,
            targetShareKey(this.#store, target),
            () => OutboundPolicy.encode(policyForTarget(this.#store, this.#cfg, target)).finish(),
          );
        },
        last: undefined,
        subscribers: new Set(),
      };
      t.last = t.compute(new Map());
      this.#register(t);
    }
    return this.#attach(t, sub);
  }

  /** The answer for `key`, encoded at most once per flush. */
  #encode(shared: Map<string, Uint8Array>, key: string | undefined, encode: () => Uint8Array): Uint8Array {
    if (key !== undefined) {
      const hit = shared.get(key);
      if (hit) return hit;
    }
    const bytes = encode();
    this.stats.encoded++;
    if (key !== undefined) shared.set(key, bytes);
    return bytes;
  }

  /** Moves `t` in a by-parent index when its answer now comes from another Server or Service. */
  #reparent(t: Topic, parent: string | undefined, index: Map<string, Set<Topic>>): void {
    if (t.parent === parent) return;
    if (t.parent !== undefined) unindex(index, t.parent, t);
    t.parent = parent;
    // Registered topics only: a new topic is indexed by #register once its first compute succeeded.
    if (parent !== undefined && this.#topics.get(t.key) === t) addIndex(index, parent, t);
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
      if (t.parent !== undefined) addIndex(this.#inByServer, t.parent, t);
      if (t.externalWorkload !== undefined) addIndex(this.#inExternalByNs, t.namespace, t);
    } else {
      this.#outbound.add(t);
      if (t.parent !== undefined) addIndex(this.#outByService, t.parent, t);
      if (t.addr !== undefined) addIndex(this.#outByAddr, t.addr, t);
    }
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
      if (t.parent !== undefined) unindex(this.#inByServer, t.parent, t);
      if (t.externalWorkload !== undefined) unindex(this.#inExternalByNs, t.namespace, t);
    } else {
      this.#outbound.delete(t);
      if (t.parent !== undefined) unindex(this.#outByService, t.parent, t);
      if (t.addr !== undefined) unindex(this.#outByAddr, t.addr, t);
    }
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

function addIndex(m: Map<string, Set<Topic>>, k: string, t: Topic): void {
  let s = m.get(k);
  if (!s) m.set(k, s = new Set());
  s.add(t);
}

function unindex(m: Map<string, Set<Topic>>, k: string, t: Topic): void {
  const s = m.get(k);
  s?.delete(t);
  if (s && s.size === 0) m.delete(k);
}
