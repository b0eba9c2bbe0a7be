/**
 * Level-triggered reconcile of one remote Service key (`ns/name`): from what the target cluster
 * has now (the remote cache) it makes the source cluster hold exactly this link's mirror objects
 * for it — the mirror Service (+ gateway Endpoints), and this link's entry in the shared federated
 * Service — or none of them. Writes that other links' service mirrors may race with (the federated
 * Service) are read-modify-write with the resourceVersion, retried on conflict, and remove only
 * this link's entry. Objects this link does not own (no `mirror.linkerd.io/cluster-name: <target>`)
 * are never changed.
 */
import type { MirrorApi } from "./mirror_api.ts";
import { Labels, type Link } from "./link.ts";
import {
  classify,
  desiredMirrorEndpoints,
  desiredMirrorService,
  discoveryEntry,
  endpointsUpToDate,
  federatedName,
  federatedWithMember,
  federatedWithoutMember,
  type MirrorMode,
  mirrorName,
  remoteDiscoveryEntries,
  remoteNameOf,
  type Service,
  serviceUpdated,
  serviceUpToDate,
} from "./mirror_objects.ts";

export interface ReconcilerDeps {
  api: MirrorApi;
  link: () => Link;
  /** The remote Service from the target cluster's cache. */
  remote: (namespace: string, name: string) => Service | undefined;
  namespaceExists: (namespace: string) => boolean;
  /** Whether the source cluster's own `<name>` is a federated member; undefined when unknown. */
  localFederatedMember: (namespace: string, name: string) => boolean | undefined;
  /** The gateway's IP addresses (the Link's gatewayAddress, names resolved). */
  gatewayIps: () => Promise<string[]>;
  /** The gateway's last probe result; gateway Endpoints are not ready while it is false. */
  gatewayAlive?: () => boolean;
  /** Whether the remote Service has no ready endpoints; undefined when not known (treated as not empty). */
  remoteEmpty?: (namespace: string, name: string) => boolean | undefined;
  log: (message: string) => void;
}

/** Attempts of one read-modify-write of a shared federated Service before the key is retried later. */
const RMW_ATTEMPTS = 8;

export class RetryLater extends Error {
  override name = "RetryLater";
}

export function splitKey(key: string): [string, string] {
  const i = key.indexOf("/");
  return [key.slice(0, i), key.slice(i + 1)];
}

export class Reconciler {
  readonly #d: ReconcilerDeps;
  /** Keys mirrored by this process, with their mode (for the mirrored-services gauge). */
  readonly mirrored = new Map<string, MirrorMode>();
  readonly federated = new Set<string>();
  /** Keys already logged as skipped, so a skip is logged once per cause. */
  readonly #skipLogged = new Map<string, string>();

  constructor(deps: ReconcilerDeps) {
    this.#d = deps;
  }

  counts(): Record<MirrorMode | "federated", number> {
    const out = { gateway: 0, flat: 0, federated: this.federated.size };
    for (const m of this.mirrored.values()) out[m]++;
    return out;
  }

  #skip(key: string, why: string | undefined): void {
    if (why === undefined) {
      this.#skipLogged.delete(key);
      return;
    }
    if (this.#skipLogged.get(key) === why) return;
    this.#skipLogged.set(key, why);
    this.#d.log(`skipping ${key}: ${why}`);
  }

  async reconcile(key: string): Promise<void> {
    const [ns, name] = splitKey(key);
    const link = this.#d.link();
    const remote = this.#d.remote(ns, name);
    const c = remote ? classify(remote, link) : { mode: undefined, federated: false };
    let mode = c.mode;
    let federated = c.federated;
    let skip: string | undefined;
    if (mode === "gateway" && !link.gatewayAddress) {
      skip = "exported in gateway mode but the link has no gateway address";
      mode = undefined;
    }
    if (federated && remote?.spec?.clusterIP === "None") {
      skip = "a headless service cannot join a federated service";
      federated = false;
    }
    if ((mode || federated) && !this.#d.namespaceExists(ns)) {
      // As Linkerd: mirrors are made only in namespaces that exist in the source cluster.
      skip = `namespace ${ns} does not exist in the source cluster`;
      mode = undefined;
      federated = false;
    }
    this.#skip(key, skip);
    if (mode && remote) await this.#ensureMirror(key, remote, link, mode);
    else await this.#removeMirror(key, ns, name, link.targetClusterName);
    if (federated && remote) await this.#join(key, remote, link);
    else await this.#leave(key, ns, name, link.targetClusterName);
  }

  async #ensureMirror(key: string, remote: Service, link: Link, mode: MirrorMode): Promise<void> {
    const { services, endpoints } = this.#d.api;
    const desired = desiredMirrorService(remote, link, mode);
    const ns = desired.metadata.namespace!;
    const name = desired.metadata.name!;
    const existing = await services.get(ns, name);
    if (!existing) {
      if (await services.create(desired) === "exists") {
        throw new RetryLater(`service ${ns}/${name} appeared meanwhile`);
      }
      this.#d.log(`created ${mode} mirror service ${ns}/${name}`);
    } else if (existing.metadata.labels?.[Labels.clusterName] !== link.targetClusterName) {
      this.#skip(key, `service ${ns}/${name} exists and is not a mirror of link ${link.name}`);
      return;
    } else if (!serviceUpToDate(existing, desired)) {
      const r = await services.update(serviceUpdated(existing, desired));
      if (r !== "ok") throw new RetryLater(`update of service ${ns}/${name}: ${r}`);
      this.#d.log(`updated ${mode} mirror service ${ns}/${name}`);
    }
    const ep = await endpoints.get(ns, name);
    if (mode === "gateway") {
      const want = desiredMirrorEndpoints(
        remote,
        link,
        await this.#d.gatewayIps(),
        this.#d.gatewayAlive?.() ?? true,
        this.#d.remoteEmpty?.(ns, remote.metadata.name!) ?? false,
      );
      if (!ep) {
        if (await endpoints.create(want) === "exists") {
          throw new RetryLater(`endpoints ${ns}/${name} appeared meanwhile`);
        }
      } else if (!endpointsUpToDate(ep, want)) {
        const r = await endpoints.update({
          ...ep,
          metadata: { ...ep.metadata, ...pick(want) },
          subsets: want.subsets,
        });
        if (r !== "ok") throw new RetryLater(`update of endpoints ${ns}/${name}: ${r}`);
      }
    } else if (ep && ep.metadata.labels?.[Labels.clusterName] === link.targetClusterName) {
      // Flat mode: destination resolves the remote cluster; gateway endpoints left from an earlier mode go.
      await endpoints.delete(ns, name);
    }
    this.mirrored.set(key, mode);
  }

  async #removeMirror(key: string, ns: string, remoteName: string, target: string): Promise<void> {
    const { services, endpoints } = this.#d.api;
    const name = mirrorName(remoteName, target);
    const svc = await services.get(ns, name);
    if (svc && svc.metadata.labels?.[Labels.clusterName] === target) {
      await services.delete(ns, name);
      this.#d.log(`deleted mirror service ${ns}/${name}`);
    }
    // Endpoints of a selector-less Service are not removed with it.
    const ep = await endpoints.get(ns, name);
    if (ep && ep.metadata.labels?.[Labels.clusterName] === target) await endpoints.delete(ns, name);
    this.mirrored.delete(key);
  }

  async #join(key: string, remote: Service, link: Link): Promise<void> {
    const { services } = this.#d.api;
    const ns = remote.metadata.namespace!;
    const name = federatedName(remote.metadata.name!);
    for (let i = 0; i < RMW_ATTEMPTS; i++) {
      const existing = await services.get(ns, name);
      if (existing && existing.metadata.labels?.[Labels.mirroredService] !== "true") {
        this.#skip(key, `service ${ns}/${name} exists and is not a federated service`);
        return;
      }
      const local = this.#d.localFederatedMember(ns, remote.metadata.name!);
      const next = federatedWithMember(existing, remote, link, local);
      if (!existing) {
        if (await services.create(next) === "created") {
          this.#d.log(`created federated service ${ns}/${name}`);
          this.federated.add(key);
          return;
        }
        continue;
      }
      if (sameAnnotations(existing, next)) {
        this.federated.add(key);
        return;
      }
      if (await services.update(next) === "ok") {
        this.#d.log(
          `joined federated service ${ns}/${name} as ${
            discoveryEntry(remote.metadata.name!, link.targetClusterName)
          }`,
        );
        this.federated.add(key);
        return;
      }
    }
    throw new RetryLater(`federated service ${ns}/${name} kept changing (${RMW_ATTEMPTS} conflicts)`);
  }

  async #leave(key: string, ns: string, remoteName: string, target: string): Promise<void> {
    const { services } = this.#d.api;
    const name = federatedName(remoteName);
    for (let i = 0; i < RMW_ATTEMPTS; i++) {
      const existing = await services.get(ns, name);
      if (!existing || existing.metadata.labels?.[Labels.mirroredService] !== "true") break;
      const result = federatedWithoutMember(
        existing,
        remoteName,
        target,
        this.#d.localFederatedMember(ns, remoteName),
      );
      if (result.delete) {
        // Only if nobody joined meanwhile: the delete carries the version that had no members.
        const r = await services.deleteAt(ns, name, existing.metadata.resourceVersion ?? "");
        if (r === "conflict") continue;
        this.#d.log(`deleted federated service ${ns}/${name} (no members left)`);
        break;
      }
      if (sameAnnotations(existing, result.service)) break;
      const r = await services.update(result.service);
      if (r === "conflict") continue;
      if (r === "ok") this.#d.log(`left federated service ${ns}/${name}`);
      break;
    }
    this.federated.delete(key);
  }

  /**
   * Keys of every object in the source cluster that this link may own (mirrors, stray Endpoints,
   * federated entries), so a resync reconciles — and so deletes — those whose remote Service is gone.
   */
  async ownedKeys(): Promise<Set<string>> {
    const target = this.#d.link().targetClusterName;
    const own = `${Labels.mirroredService}=true,${Labels.clusterName}=${target}`;
    const keys = new Set<string>();
    for (const o of [...await this.#d.api.services.list(own), ...await this.#d.api.endpoints.list(own)]) {
      const remote = remoteNameOf(o.metadata.name ?? "", target);
      if (remote) keys.add(`${o.metadata.namespace}/${remote}`);
    }
    for (const svc of await this.#d.api.services.list(`${Labels.mirroredService}=true`)) {
      for (const e of remoteDiscoveryEntries(svc)) {
        const at = e.lastIndexOf("@");
        if (e.slice(at + 1) === target) keys.add(`${svc.metadata.namespace}/${e.slice(0, at)}`);
      }
    }
    return keys;
  }

  /** Unlink: every mirror object of this link goes, and its entries leave the federated Services. */
  async removeAll(): Promise<number> {
    const target = this.#d.link().targetClusterName;
    let n = 0;
    for (const key of await this.ownedKeys()) {
      const [ns, name] = splitKey(key);
      await this.#removeMirror(key, ns, name, target);
      await this.#leave(key, ns, name, target);
      n++;
    }
    return n;
  }
}

function pick(e: { metadata: { labels?: Record<string, string>; annotations?: Record<string, string> } }) {
  return { labels: e.metadata.labels, annotations: e.metadata.annotations };
}

function sameAnnotations(a: Service, b: Service): boolean {
  const norm = (s: Service) => JSON.stringify(Object.entries(s.metadata.annotations ?? {}).sort());
  return norm(a) === norm(b);
}
