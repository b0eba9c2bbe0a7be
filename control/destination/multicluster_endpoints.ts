/**
 * Get for multicluster Services: a flat-mode mirror (label `multicluster.linkerd.io/remote-discovery:
 * <cluster>` + `remote-service: <svc>`) streams `<svc>` of the same namespace in that cluster; a
 * federated Service (annotations `multicluster.linkerd.io/remote-discovery: svc@c1,svc@c2` and/or
 * `local-discovery: svc`) streams the union of its members. Each member is an ordinary subscription
 * to the local or a remote cluster's endpoint index; a stream keeps each member's current addresses
 * and sends its client the diff of the union, so members joining or leaving (annotation edits,
 * clusters added or removed, a cluster's endpoints all going away) reach the client as Adds and
 * Removes while the other members keep serving. An address in two members is sent once, from the
 * first member holding it (local first, then the annotation's order).
 */
import { sameBytes } from "../../proto/support/bytes.ts";
import { fromTcpAddress } from "../../proto/ip.ts";
import { RequestError } from "../grpc/request_error.ts";
import type { ClusterState } from "./cluster_state.ts";
import type { ClusterStore } from "./cluster_store.ts";
import type { EndpointIndex, EndpointRequest, Subscriber } from "./endpoint_index.ts";
import type { WeightedAddr } from "./endpoints.ts";
import {
  decodeUpdate,
  encodeAddMessages,
  encodeNoEndpoints,
  encodeRemove,
  encodeWeightedAddr,
} from "./frame.ts";
import type { Service } from "./k8s_types.ts";
import { Multicluster } from "./multicluster_names.ts";

/** One source of a union: a Service of the local cluster (`cluster` undefined) or of a remote one. */
export interface Member {
  cluster: string | undefined;
  service: string;
}

/** The members a Service names, or undefined when it is an ordinary (single-cluster) Service. */
export function membersOf(svc: Service, log: (m: string) => void = () => {}): Member[] | undefined {
  const ann = svc.metadata.annotations ?? {};
  const remote = ann[Multicluster.remoteDiscoveryAnnotation];
  const local = ann[Multicluster.localDiscoveryAnnotation];
  if (remote === undefined && local === undefined) return undefined;
  const out: Member[] = [];
  if (local?.trim()) out.push({ cluster: undefined, service: local.trim() });
  for (const part of (remote ?? "").split(",")) {
    const entry = part.trim();
    if (!entry) continue;
    const at = entry.lastIndexOf("@");
    if (at <= 0 || at === entry.length - 1) {
      log(
        `destination: Service ${svc.metadata.namespace}/${svc.metadata.name}: ignoring "${entry}" in ` +
          `${Multicluster.remoteDiscoveryAnnotation} (want <service>@<cluster>)`,
      );
      continue;
    }
    out.push({ cluster: entry.slice(at + 1), service: entry.slice(0, at) });
  }
  return out;
}

/** How long a new stream's first answer waits for its remote clusters' first list. */
export const REMOTE_SYNC_WAIT_MS = 1000;

const memberKey = (m: Member) => `${m.cluster ?? ""}/${m.service}`;

interface Held {
  addr: WeightedAddr;
  bytes: Uint8Array;
}

interface MemberSub {
  member: Member;
  /** The index subscribed to (a replaced cluster has a new one). */
  index: EndpointIndex | undefined;
  unsubscribe: (() => void) | undefined;
  addrs: Map<string, Held>;
}

/** One client stream's union of members. */
class UnionStream {
  readonly members = new Map<string, MemberSub>();
  #sent = new Map<string, Held>();
  #started = false;
  #closed = false;

  constructor(
    readonly serviceKey: string,
    readonly req: EndpointRequest,
    readonly sink: Subscriber,
    readonly owner: MulticlusterEndpoints,
  ) {}

  /** Sets the members (subscribing new ones, dropping gone ones) and sends the union's diff. */
  setMembers(members: Member[]): void {
    const want = new Map(members.map((m) => [memberKey(m), m]));
    for (const [k, sub] of this.members) {
      if (!want.has(k)) {
        sub.unsubscribe?.();
        sub.index = undefined;
        this.members.delete(k);
      }
    }
    // Keep the annotation's order (it decides which member's copy of a shared address is sent).
    const next = new Map<string, MemberSub>();
    for (const [k, m] of want) {
      let sub = this.members.get(k);
      if (!sub) {
        sub = { member: m, index: undefined, unsubscribe: undefined, addrs: new Map() };
        this.#attach(sub);
      }
      next.set(k, sub);
    }
    this.members.clear();
    for (const [k, v] of next) this.members.set(k, v);
    this.sync();
  }

  /**
   * Moves the members of `cluster` to its current index (or drops their addresses when it is gone).
   * A replacement still listing is waited for (boundedly): until then the members keep the
   * addresses they had, rather than sending removes and then the same adds again.
   */
  clusterChanged(cluster: string, waited = false): void {
    if (this.#closed) return;
    const affected = [...this.members.values()].some((sub) => sub.member.cluster === cluster);
    if (!affected) return;
    if (!waited) {
      const ready = this.owner.whenSynced(cluster);
      if (ready) {
        void ready.then(() => this.clusterChanged(cluster, true));
        return;
      }
    }
    let changed = false;
    for (const sub of this.members.values()) {
      if (sub.member.cluster !== cluster) continue;
      if (this.owner.indexFor(sub.member) === sub.index && sub.index !== undefined) continue;
      sub.unsubscribe?.();
      sub.unsubscribe = undefined;
      sub.index = undefined;
      sub.addrs = new Map();
      this.#attach(sub);
      changed = true;
    }
    if (changed) this.sync();
  }

  #attach(sub: MemberSub): void {
    const index = this.owner.indexFor(sub.member);
    sub.index = index;
    if (!index) return;
    const local = sub.member.cluster === undefined;
    sub.unsubscribe = index.subscribe(
      {
        service: sub.member.service,
        namespace: this.req.namespace,
        port: this.req.port,
        hostname: this.req.hostname,
        // Topology filtering is for local endpoints only, as Linkerd does.
        nodeName: local ? this.req.nodeName : undefined,
      },
      { push: (m) => this.#onMemberUpdate(sub, index, m) },
      { allowMissing: true },
    );
  }

  #onMemberUpdate(sub: MemberSub, from: EndpointIndex, message: Uint8Array): void {
    // A member dropped (or moved to a new index) may still hear from a pump already under way.
    if (this.#closed || sub.index !== from) return;
    const u = decodeUpdate(message).update;
    if (u?.$case === "add") {
      // The bytes tell a re-sent (changed) address from the one the client has.
      for (const a of u.value.addrs) {
        if (a.addr) sub.addrs.set(fromTcpAddress(a.addr), { addr: a, bytes: encodeWeightedAddr(a) });
      }
    } else if (u?.$case === "remove") {
      for (const a of u.value.addrs) sub.addrs.delete(fromTcpAddress(a));
    } else if (u?.$case === "noEndpoints") {
      sub.addrs.clear();
    }
    this.sync();
  }

  /** Sends the first message (the union so far); later calls send diffs. */
  start(): void {
    this.#started = true;
    const union = this.#union();
    if (union.size === 0) {
      this.sink.push(encodeNoEndpoints(true));
      return;
    }
    this.#sent = union;
    this.sink.push(this.#add([...union.values()]));
  }

  sync(): void {
    if (!this.#started || this.#closed) return;
    const union = this.#union();
    const removed = [];
    for (const [k, h] of this.#sent) if (!union.has(k)) removed.push(h.addr.addr!);
    const added: Held[] = [];
    for (const [k, h] of union) {
      const old = this.#sent.get(k);
      if (!old || !sameBytes(old.bytes, h.bytes)) added.push(h);
    }
    this.#sent = union;
    if (removed.length > 0) {
      this.sink.push(encodeRemove(removed));
    }
    if (added.length > 0) this.sink.push(this.#add(added));
  }

  #union(): Map<string, Held> {
    const out = new Map<string, Held>();
    for (const sub of this.members.values()) {
      for (const [k, h] of sub.addrs) if (!out.has(k)) out.set(k, h);
    }
    return out;
  }

  #add(held: Held[]): Uint8Array {
    const [namespace, service] = this.serviceKey.split("/");
    return encodeAddMessages(held.map((h) => h.addr), { service, namespace });
  }

  close(): void {
    this.#closed = true;
    for (const sub of this.members.values()) sub.unsubscribe?.();
    this.members.clear();
  }
}

export class MulticlusterEndpoints {
  readonly #state: ClusterState;
  readonly #local: EndpointIndex;
  readonly #clusters: ClusterStore | undefined;
  readonly #log: (m: string) => void;
  /** Federated streams by their Service's key, to follow annotation edits. */
  readonly #federated = new Map<string, Set<UnionStream>>();
  readonly #streams = new Set<UnionStream>();

  constructor(
    state: ClusterState,
    local: EndpointIndex,
    clusters: ClusterStore | undefined,
    log: (m: string) => void = console.error,
  ) {
    this.#state = state;
    this.#local = local;
    this.#clusters = clusters;
    this.#log = log;
    const edited = (svc: Service) => {
      const key = `${svc.metadata.namespace}/${svc.metadata.name}`;
      const streams = this.#federated.get(key);
      if (!streams) return;
      const members = membersOf(svc, this.#log) ?? [];
      for (const s of streams) s.setMembers(members);
    };
    state.services.onUpdate((_o, n) => edited(n));
    state.services.onAdd(edited);
    state.services.onDelete((svc) => edited({ ...svc, metadata: { ...svc.metadata, annotations: {} } }));
    clusters?.onChange((cluster) => {
      for (const s of this.#streams) s.clusterChanged(cluster);
    });
  }

  /**
   * Undefined when remote `cluster` is absent or synced; else a promise resolved once it has synced
   * (its endpoint index flushed, so what it listed has reached its subscribers) or after
   * REMOTE_SYNC_WAIT_MS, whichever is first.
   */
  whenSynced(cluster: string): Promise<void> | undefined {
    const remote = this.#clusters?.get(cluster);
    if (!remote || remote.state.unsynced().length === 0) return undefined;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const bound = new Promise<void>((r) => timer = setTimeout(r, REMOTE_SYNC_WAIT_MS));
    return Promise.race([remote.state.synced.then(() => remote.endpoints.flush()), bound]).then(() =>
      clearTimeout(timer)
    );
  }

  indexFor(m: Member): EndpointIndex | undefined {
    if (m.cluster === undefined) return this.#local;
    return this.#clusters?.get(m.cluster)?.endpoints;
  }

  /**
   * Subscribes a Get stream when the Service is a flat-mode mirror or federated; returns undefined
   * for ordinary Services (the caller uses the local index). Throws RequestError as Linkerd answers:
   * NotFound for an unknown remote cluster, FailedPrecondition for a mirror without its remote
   * Service's name.
   */
  subscribe(req: EndpointRequest, sink: Subscriber): (() => void) | undefined {
    const svc = this.#state.services.get(req.namespace, req.service);
    if (!svc) return undefined;
    const key = `${req.namespace}/${req.service}`;
    let members = membersOf(svc, this.#log);
    const federated = members !== undefined;
    if (!members) {
      const cluster = svc.metadata.labels?.[Multicluster.remoteDiscoveryLabel];
      if (cluster === undefined) return undefined;
      const remote = svc.metadata.labels?.[Multicluster.remoteServiceLabel];
      if (!remote) {
        throw new RequestError(
          "failed_precondition",
          `Remote discovery Service ${key} has no ${Multicluster.remoteServiceLabel} label`,
        );
      }
      if (!this.#clusters?.get(cluster)) {
        throw new RequestError("not_found", `Remote cluster not found: ${cluster}`);
      }
      members = [{ cluster, service: remote }];
    }
    const stream = new UnionStream(key, req, sink, this);
    stream.setMembers(members);
    this.#streams.add(stream);
    // A cluster just linked (or destination just started) is still listing: the first answer waits
    // for it, boundedly, so it is the union rather than NoEndpoints followed at once by an Add.
    const pending = members.flatMap((m) => {
      const p = m.cluster === undefined ? undefined : this.whenSynced(m.cluster);
      return p ? [p] : [];
    });
    if (pending.length === 0) stream.start();
    else {
      void Promise.all(pending).then(() => {
        if (this.#streams.has(stream)) stream.start();
      });
    }
    if (federated) {
      let set = this.#federated.get(key);
      if (!set) this.#federated.set(key, set = new Set());
      set.add(stream);
    }
    return () => {
      stream.close();
      this.#streams.delete(stream);
      const set = this.#federated.get(key);
      set?.delete(stream);
      if (set?.size === 0) this.#federated.delete(key);
    };
  }
}
