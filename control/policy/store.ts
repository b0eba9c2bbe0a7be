/**
 * The objects the policy index reads, by kind and `namespace/name`. Every change goes through
 * `apply`, which tells listeners (synchronously, never waiting on them) which namespace changed,
 * so the watch hub recomputes only the streams that can be affected.
 */
import type {
  AuthorizationPolicy,
  GrpcRoute,
  HttpRoute,
  Kind,
  MeshTLSAuthentication,
  Namespace,
  NetworkAuthentication,
  Obj,
  Pod,
  Server,
  ServerAuthorization,
  Service,
} from "./resources.ts";

export type EventType = "added" | "modified" | "deleted";

export interface ResourceEvent {
  type: EventType;
  kind: Kind;
  object: Obj;
}

/** Where resource events come from: the real informers, or a fake in tests. */
export interface PolicySource {
  /** Starts delivering events to `onEvent`; ends when `signal` aborts. */
  start(onEvent: (event: ResourceEvent) => void, signal: AbortSignal): void;
  /** Whether every kind has completed its initial list. */
  synced(): boolean;
}

export interface StoreChange {
  kind: Kind;
  /** Namespace of the changed object; undefined for cluster-scoped objects (Namespaces use their name). */
  namespace: string | undefined;
  name: string;
  type: EventType;
  /** The object after the change (before it, for deletions), and the one it replaced. */
  object: Obj;
  old: Obj | undefined;
}

export type StoreListener = (change: StoreChange) => void;

function key(ns: string | undefined, name: string): string {
  return ns ? `${ns}/${name}` : name;
}

export class PolicyStore {
  readonly #byKind = new Map<Kind, Map<string, Obj>>();
  /** Objects per kind per namespace, for the namespace-scoped lookups of the index. */
  readonly #byNs = new Map<Kind, Map<string, Map<string, Obj>>>();
  readonly #listeners = new Set<StoreListener>();
  /** Services by cluster IP, and pods by pod IP, for outbound address lookups. */
  readonly #serviceByIp = new Map<string, Service>();
  readonly #podByIp = new Map<string, Pod>();
  #version = 0;

  get version(): number {
    return this.#version;
  }

  listen(l: StoreListener): () => void {
    this.#listeners.add(l);
    return () => this.#listeners.delete(l);
  }

  apply(event: ResourceEvent): void {
    const { kind, object } = event;
    const ns = kind === "Namespace" ? undefined : object.metadata.namespace;
    const name = object.metadata.name;
    let all = this.#byKind.get(kind);
    if (!all) this.#byKind.set(kind, all = new Map());
    let perNs = this.#byNs.get(kind);
    if (!perNs) this.#byNs.set(kind, perNs = new Map());
    const k = key(ns, name);
    const old = all.get(k);
    const nsKey = ns ?? "";
    if (event.type === "deleted") {
      if (!old) return;
      all.delete(k);
      const m = perNs.get(nsKey);
      m?.delete(name);
      if (m && m.size === 0) perNs.delete(nsKey);
    } else {
      // Informer re-lists replay unchanged objects; skip them so streams are not recomputed.
      if (
        old && old.metadata.resourceVersion !== undefined &&
        old.metadata.resourceVersion === object.metadata.resourceVersion
      ) return;
      all.set(k, object);
      let m = perNs.get(nsKey);
      if (!m) perNs.set(nsKey, m = new Map());
      m.set(name, object);
    }
    this.#reindexIp(kind, old, event.type === "deleted" ? undefined : object);
    this.#version++;
    const change: StoreChange = {
      kind,
      namespace: kind === "Namespace" ? name : ns,
      name,
      type: old ? event.type : "added",
      object: event.type === "deleted" ? old! : object,
      old: event.type === "deleted" ? undefined : old,
    };
    for (const l of this.#listeners) l(change);
  }

  #reindexIp(kind: Kind, old: Obj | undefined, next: Obj | undefined): void {
    if (kind === "Service") {
      for (const ip of serviceIps(old as Service | undefined)) this.#serviceByIp.delete(ip);
      for (const ip of serviceIps(next as Service | undefined)) this.#serviceByIp.set(ip, next as Service);
    } else if (kind === "Pod") {
      for (const ip of podIps(old as Pod | undefined)) {
        if (this.#podByIp.get(ip) === old) this.#podByIp.delete(ip);
      }
      for (const ip of podIps(next as Pod | undefined)) this.#podByIp.set(ip, next as Pod);
    }
  }

  get<T extends Obj = Obj>(kind: Kind, namespace: string | undefined, name: string): T | undefined {
    return this.#byKind.get(kind)?.get(key(kind === "Namespace" ? undefined : namespace, name)) as
      | T
      | undefined;
  }

  /** Objects of `kind` in `namespace` (or all cluster-scoped objects when namespace is undefined). */
  list<T extends Obj = Obj>(kind: Kind, namespace?: string): Iterable<T> {
    if (namespace === undefined) return (this.#byKind.get(kind)?.values() ?? []) as Iterable<T>;
    return (this.#byNs.get(kind)?.get(namespace)?.values() ?? []) as Iterable<T>;
  }

  count(kind: Kind): number {
    return this.#byKind.get(kind)?.size ?? 0;
  }

  serviceByIp(ip: string): Service | undefined {
    return this.#serviceByIp.get(ip);
  }

  podByIp(ip: string): Pod | undefined {
    return this.#podByIp.get(ip);
  }

  // Typed shorthands.
  pod(ns: string, name: string): Pod | undefined {
    return this.get<Pod>("Pod", ns, name);
  }
  namespace(name: string): Namespace | undefined {
    return this.get<Namespace>("Namespace", undefined, name);
  }
  service(ns: string, name: string): Service | undefined {
    return this.get<Service>("Service", ns, name);
  }
  servers(ns: string): Iterable<Server> {
    return this.list<Server>("Server", ns);
  }
  serverAuthorizations(ns: string): Iterable<ServerAuthorization> {
    return this.list<ServerAuthorization>("ServerAuthorization", ns);
  }
  authorizationPolicies(ns: string): Iterable<AuthorizationPolicy> {
    return this.list<AuthorizationPolicy>("AuthorizationPolicy", ns);
  }
  meshTlsAuthentication(ns: string, name: string): MeshTLSAuthentication | undefined {
    return this.get<MeshTLSAuthentication>("MeshTLSAuthentication", ns, name);
  }
  networkAuthentication(ns: string, name: string): NetworkAuthentication | undefined {
    return this.get<NetworkAuthentication>("NetworkAuthentication", ns, name);
  }
  /** HTTPRoutes of both groups in a namespace, each with the group it came from. */
  *httpRoutes(ns: string): Iterable<{ group: string; route: HttpRoute }> {
    for (const r of this.list<HttpRoute>("HTTPRoute", ns)) yield { group: "policy.linkerd.io", route: r };
    for (const r of this.list<HttpRoute>("GatewayHTTPRoute", ns)) {
      yield { group: "gateway.networking.k8s.io", route: r };
    }
  }
  grpcRoutes(ns: string): Iterable<GrpcRoute> {
    return this.list<GrpcRoute>("GRPCRoute", ns);
  }
}

/** A Service's cluster IPs (none for a headless Service). */
export function serviceIps(svc: Service | undefined): string[] {
  if (!svc?.spec) return [];
  const ips = svc.spec.clusterIPs?.length
    ? svc.spec.clusterIPs
    : svc.spec.clusterIP
    ? [svc.spec.clusterIP]
    : [];
  return ips.filter((ip) => ip !== "None" && ip !== "");
}

function podIps(pod: Pod | undefined): string[] {
  if (!pod?.status) return [];
  if (pod.status.podIPs?.length) return pod.status.podIPs.map((p) => p.ip);
  return pod.status.podIP ? [pod.status.podIP] : [];
}

/** A source fed by hand: unit tests and the benchmark push events through it. */
export class FakePolicySource implements PolicySource {
  #onEvent: ((e: ResourceEvent) => void) | undefined;
  #synced = false;
  readonly #pending: ResourceEvent[] = [];

  start(onEvent: (event: ResourceEvent) => void, signal: AbortSignal): void {
    this.#onEvent = onEvent;
    signal.addEventListener("abort", () => this.#onEvent = undefined, { once: true });
    for (const e of this.#pending.splice(0)) onEvent(e);
  }

  synced(): boolean {
    return this.#synced;
  }

  markSynced(): void {
    this.#synced = true;
  }

  emit(type: EventType, kind: Kind, object: Obj): void {
    const e = { type, kind, object };
    if (this.#onEvent) this.#onEvent(e);
    else this.#pending.push(e);
  }
}
