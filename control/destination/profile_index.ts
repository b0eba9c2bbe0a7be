/**
 * GetProfile topics: one per (target, client namespace), recomputed when the ServiceProfiles,
 * Service, namespace or pod behind it change, and sent only when the encoded profile changed.
 */
import { sameBytes } from "../../proto/support/bytes.ts";
import { Annotations } from "../../proto/annotations.ts";
import { DestinationProfile } from "../../proto/gen/destination.ts";
import { RequestError } from "../grpc/request_error.ts";
import type { KubeObject } from "../k8s/mod.ts";
import type { ClusterState } from "./cluster_state.ts";
import type { DestinationConfig } from "./config.ts";
import { type Lookups, weightedAddr } from "./endpoints.ts";
import type { Pod, Service } from "./k8s_types.ts";
import { serviceFqn, type Target } from "./path.ts";
import { opaquePortList, portListHas } from "./port_list.ts";
import { DEFAULT_RETRY_BUDGET, defaultProfile, translateProfile } from "./profile_translate.ts";
import type { Subscriber } from "./endpoint_index.ts";
import { isOpaqueByAnnotation, isOpaqueByServer } from "./workload.ts";
import { type ExternalWorkload, externalWorkloadIps } from "../k8s/external_workload.ts";
import {
  externalWorkloadAddr,
  externalWorkloadOpaqueByAnnotation,
  externalWorkloadOpaqueByServer,
} from "./external_workload_endpoints.ts";

interface ProfileTopic {
  key: string;
  namespace: string;
  /** Service key `ns/name` for service targets. */
  serviceKey?: string;
  fqn?: string;
  ip?: string;
  target: Target;
  clientNs?: string;
  last: Uint8Array | undefined;
  subscribers: Set<Subscriber>;
}

export class ProfileIndex {
  readonly #state: ClusterState;
  readonly #config: DestinationConfig;
  readonly #lookups: Lookups;
  readonly #topics = new Map<string, ProfileTopic>();
  readonly #dirty = new Set<ProfileTopic>();
  #scheduled = false;
  readonly #log: (m: string) => void;

  constructor(state: ClusterState, config: DestinationConfig, log: (m: string) => void = console.error) {
    this.#state = state;
    this.#config = config;
    this.#log = log;
    this.#lookups = state.lookups();
    const byName = (o: KubeObject) => this.#markWhere((t) => t.fqn === o.metadata.name);
    const bySvc = (o: KubeObject) =>
      this.#markWhere((t) => t.serviceKey === `${o.metadata.namespace}/${o.metadata.name}`);
    const byNs = (o: KubeObject) =>
      this.#markWhere((t) => t.namespace === (o.metadata.namespace ?? o.metadata.name));
    const byPod = (o: Pod) => {
      const ips = new Set([o.status?.podIP, ...(o.status?.podIPs?.map((x) => x.ip) ?? [])]);
      this.#markWhere((t) => t.ip !== undefined && ips.has(t.ip));
    };
    const on = <T extends KubeObject>(
      inf: {
        onAdd(h: (o: T) => void): unknown;
        onUpdate(h: (o: T, n: T) => void): unknown;
        onDelete(h: (o: T) => void): unknown;
      } | undefined,
      h: (o: T) => void,
    ) => {
      if (!inf) return;
      inf.onAdd(h);
      inf.onUpdate((o, n) => {
        h(o);
        h(n);
      });
      inf.onDelete(h);
    };
    on(state.serviceProfiles, byName);
    on(state.services, (o: Service) => {
      bySvc(o);
      // A ClusterIP target follows whichever Service holds the IP.
      const ips = new Set(o.spec?.clusterIPs ?? [o.spec?.clusterIP]);
      this.#markWhere((t) => t.ip !== undefined && ips.has(t.ip));
    });
    on(state.namespaces, byNs);
    on(state.servers, byNs);
    on(state.pods, byPod);
    on(state.externalWorkloads, (o: ExternalWorkload) => {
      const ips = new Set(externalWorkloadIps(o, true));
      this.#markWhere((t) => t.ip !== undefined && ips.has(t.ip));
    });
  }

  #markWhere(pred: (t: ProfileTopic) => boolean): void {
    for (const t of this.#topics.values()) {
      if (!pred(t)) continue;
      this.#dirty.add(t);
      if (!this.#scheduled) {
        this.#scheduled = true;
        queueMicrotask(() => this.flush());
      }
    }
  }

  flush(): void {
    this.#scheduled = false;
    for (const t of this.#dirty) {
      if (this.#topics.get(t.key) !== t) continue;
      try {
        this.#publish(t, this.#compute(t));
      } catch (e) {
        this.#log(`profile ${t.key}: ${e instanceof Error ? e.message : e}`);
      }
    }
    this.#dirty.clear();
  }

  #publish(t: ProfileTopic, bytes: Uint8Array): void {
    if (sameBytes(t.last, bytes)) return;
    t.last = bytes;
    for (const s of t.subscribers) s.push(bytes);
  }

  /** Resolves what a target means now; throws RequestError for targets with no profile. */
  #resolve(target: Target): { service?: Service; pod?: Pod; ew?: ExternalWorkload; ip?: string } {
    if (target.kind === "service") {
      const svc = this.#state.services.get(target.namespace, target.service);
      if (svc?.spec?.type === "ExternalName") {
        throw new RequestError(
          "invalid_argument",
          `Service ${target.namespace}/${target.service} is of type ExternalName`,
        );
      }
      return { service: svc };
    }
    const svcs = this.#state.services.byIndex("clusterIP", target.ip);
    if (svcs.length > 1) {
      throw new RequestError(
        "failed_precondition",
        `IP ${target.ip} is the ClusterIP of ${svcs.length} Services: ${
          svcs.map((s) => `${s.metadata.namespace}/${s.metadata.name}`).join(", ")
        }`,
      );
    }
    if (svcs.length === 1) return { service: svcs[0], ip: target.ip };
    const pods = this.#state.pods.byIndex("ip", target.ip).filter((p) =>
      p.status?.phase === "Running" || p.status?.phase === "Pending"
    );
    if (pods.length > 0) return { pod: pods[0], ip: target.ip };
    // An ExternalWorkload's address (mesh expansion), as Linkerd resolves it after pods.
    return { ew: this.#state.externalWorkloads?.byIndex("ip", target.ip)[0], ip: target.ip };
  }

  #compute(t: ProfileTopic): Uint8Array {
    const target = t.target;
    const r = this.#resolve(target);
    const port = target.port;
    if (r.service && !(target.kind === "service" && target.hostname)) {
      const ns = r.service.metadata.namespace ?? "";
      const name = r.service.metadata.name ?? "";
      const fqn = serviceFqn(name, ns, this.#config.clusterDomain);
      t.fqn = fqn;
      t.serviceKey = `${ns}/${name}`;
      const sps = this.#state.serviceProfiles;
      // The client's own namespace may override the service owner's profile.
      const sp = (t.clientNs && t.clientNs !== ns ? sps?.get(t.clientNs, fqn) : undefined) ??
        sps?.get(ns, fqn);
      const problems: string[] = [];
      const profile = sp ? translateProfile(sp, fqn, problems) : defaultProfile(fqn);
      for (const p of problems) this.#log(p);
      profile.opaqueProtocol = this.#serviceOpaque(r.service, port);
      return DestinationProfile.encode(profile).finish();
    }
    if (target.kind === "service") {
      // Without the Service there is nothing but the name; a hostname target is an endpoint.
      const fqn = serviceFqn(target.service, target.namespace, this.#config.clusterDomain);
      t.fqn = fqn;
      if (target.hostname) {
        const pod = this.#podByHostname(target.namespace, target.service, target.hostname);
        if (pod?.status?.podIP) return this.#endpointProfile(pod.status.podIP, port, pod);
      }
      return DestinationProfile.encode(defaultProfile(fqn)).finish();
    }
    if (r.ew) return this.#externalWorkloadProfile(target.ip, port, r.ew);
    return this.#endpointProfile(target.ip, port, r.pod);
  }

  #externalWorkloadProfile(ip: string, port: number, ew: ExternalWorkload): Uint8Array {
    const servers = this.#lookups.servers(ew.metadata.namespace ?? "");
    const zone = ew.metadata.labels?.["topology.kubernetes.io/zone"];
    return DestinationProfile.encode({
      routes: [],
      retryBudget: DEFAULT_RETRY_BUDGET,
      dstOverrides: [],
      opaqueProtocol: externalWorkloadOpaqueByServer(ew, port, servers) ||
        externalWorkloadOpaqueByAnnotation(ew, port, this.#config),
      fullyQualifiedName: "",
      endpoint: externalWorkloadAddr(ew, ip, port, zone, servers, this.#config),
    }).finish();
  }

  #podByHostname(ns: string, svc: string, hostname: string): Pod | undefined {
    for (const slice of this.#state.endpointSlices.byIndex("service", `${ns}/${svc}`)) {
      for (const ep of slice.endpoints ?? []) {
        if (ep.hostname === hostname && ep.targetRef?.kind === "Pod" && ep.targetRef.name) {
          return this.#state.pods.get(ep.targetRef.namespace ?? ns, ep.targetRef.name);
        }
      }
    }
    return undefined;
  }

  #endpointProfile(ip: string, port: number, pod: Pod | undefined): Uint8Array {
    const ns = pod?.metadata.namespace ?? "";
    const zone = pod?.spec?.nodeName ? this.#state.nodeZone(pod.spec.nodeName) : undefined;
    const endpoint = weightedAddr(ip, port, pod, zone, this.#lookups, this.#config);
    const opaque = pod
      ? isOpaqueByServer(pod, port, this.#lookups.servers(ns)) ||
        isOpaqueByAnnotation(pod, port, this.#lookups.namespace(ns), this.#config)
      : this.#config.defaultOpaquePorts.includes(port);
    return DestinationProfile.encode({
      routes: [],
      retryBudget: DEFAULT_RETRY_BUDGET,
      dstOverrides: [],
      opaqueProtocol: opaque,
      fullyQualifiedName: "",
      endpoint,
    }).finish();
  }

  /** The Service's opaque-ports annotation, else its namespace's, else the default list. */
  #serviceOpaque(svc: Service, port: number): boolean {
    const ns = this.#state.namespaces.get(undefined, svc.metadata.namespace ?? "");
    const ann = svc.metadata.annotations?.[Annotations.opaquePorts] ??
      ns?.metadata.annotations?.[Annotations.opaquePorts];
    if (ann === undefined) return this.#config.defaultOpaquePorts.includes(port);
    return portListHas(
      opaquePortList(ann),
      port,
      (name) => svc.spec?.ports?.find((p) => p.name === name)?.port,
    );
  }

  subscribe(target: Target, clientNs: string | undefined, sub: Subscriber): () => void {
    const key = `${JSON.stringify(target)}|${clientNs ?? ""}`;
    let t = this.#topics.get(key);
    if (!t) {
      t = {
        key,
        namespace: target.kind === "service" ? target.namespace : "",
        ip: target.kind === "ip" ? target.ip : undefined,
        serviceKey: target.kind === "service" ? `${target.namespace}/${target.service}` : undefined,
        target,
        clientNs,
        last: undefined,
        subscribers: new Set(),
      };
      const bytes = this.#compute(t); // throws RequestError before the topic is kept
      t.last = bytes;
      this.#topics.set(key, t);
    }
    t.subscribers.add(sub);
    sub.push(t.last!);
    const topic = t;
    return () => {
      topic.subscribers.delete(sub);
      if (topic.subscribers.size === 0) {
        this.#topics.delete(topic.key);
        this.#dirty.delete(topic);
      }
    };
  }

  get size(): number {
    return this.#topics.size;
  }
}
