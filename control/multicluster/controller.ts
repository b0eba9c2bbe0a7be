/**
 * The service mirror of one Link: watches the Link object, and for each version of its spec runs a
 * LinkSession against the target cluster built from the credentials Secret the Link names. A
 * changed spec or credentials Secret restarts the session (its resync keeps what still holds and
 * deletes the rest); a
 * deleted Link stops it and deletes every mirror object of the link, as Linkerd does. Watch
 * handlers only record the newest Link and wake the supervising loop.
 */
import { KubeConfig } from "@kubernetes/client-node";
import { type EventSource, Informer, kubeConfigFromText, type KubeObject, secretText } from "../k8s/mod.ts";
import { type Link, LinkError, type LinkObject, parseLink } from "./link.ts";
import type { ServiceMirrorMetrics } from "./metrics.ts";
import type { MirrorApi } from "./mirror_api.ts";
import { Reconciler } from "./reconciler.ts";
import { LinkSession, type LinkSessionOptions, sleep } from "./link_session.ts";

export type SecretObject = KubeObject & {
  type?: string;
  data?: Record<string, string>;
};

export interface ControllerOptions {
  linkName: string;
  namespace: string;
  api: MirrorApi;
  linkSource: EventSource<LinkObject>;
  /** The credentials Secrets of the namespace (watched: new credentials restart the session). */
  secretSource: EventSource<SecretObject>;
  /** The session's informer sources for a link and the target cluster's kubeconfig. */
  sources: (
    link: Link,
    remoteKc: KubeConfig,
  ) => Pick<LinkSessionOptions, "remoteServices" | "remoteEndpoints" | "localNamespaces" | "localFederated">;
  metrics: ServiceMirrorMetrics;
  log: (message: string) => void;
  resyncPeriodMs?: number;
  gatewayIps?: (address: string) => Promise<string[]>;
  fetch?: typeof fetch;
}

/** The target cluster's kubeconfig from the credentials Secret's `kubeconfig` key. */
export function remoteKubeConfig(secret: SecretObject, what: string): KubeConfig {
  const b64 = secret.data?.kubeconfig;
  if (!b64) throw new LinkError(`${what} has no kubeconfig key`);
  try {
    return kubeConfigFromText(secretText(b64), what);
  } catch (e) {
    throw new LinkError((e as Error).message);
  }
}

function sameSpec(a: Link, b: Link): boolean {
  return JSON.stringify({ ...a, resourceVersion: "" }) === JSON.stringify({ ...b, resourceVersion: "" });
}

export class ServiceMirrorController {
  readonly #o: ControllerOptions;
  readonly links: Informer<LinkObject>;
  readonly secrets: Informer<SecretObject>;
  #session:
    | { session: LinkSession; secretVersion: string; stop: AbortController; done: Promise<void> }
    | undefined;
  /** The last link a session ran for, until its mirrors are cleaned up after the Link goes. */
  #owed: Link | undefined;
  #wake: (() => void) | undefined;
  #linkError: string | undefined;

  constructor(o: ControllerOptions) {
    this.#o = o;
    this.links = new Informer<LinkObject>({
      name: "links",
      source: o.linkSource,
      log: (s) => o.log(`links: ${s}`),
    });
    this.secrets = new Informer<SecretObject>({
      name: "credentials_secrets",
      source: o.secretSource,
      log: (s) => o.log(`secrets: ${s}`),
    });
    const kick = () => this.#wake?.();
    for (const i of [this.links, this.secrets] as Informer<KubeObject>[]) {
      i.onAdd(kick);
      i.onUpdate(kick);
      i.onDelete(kick);
    }
  }

  get session(): LinkSession | undefined {
    return this.#session?.session;
  }

  ready(): string | undefined {
    if (!this.links.isSynced() || !this.secrets.isSynced()) return "links and secrets not listed yet";
    if (this.#linkError) return this.#linkError;
    if (!this.#session) return `link ${this.#o.namespace}/${this.#o.linkName} not found`;
    return this.#session.session.ready();
  }

  async #stopSession(): Promise<void> {
    const s = this.#session;
    if (!s) return;
    this.#session = undefined;
    s.stop.abort();
    await s.done;
  }

  /** One pass of the supervisor; returns whether something failed and must be retried. */
  async #step(signal: AbortSignal): Promise<boolean> {
    const { linkName, namespace, log } = this.#o;
    const obj = this.links.get(namespace, linkName);
    if (!obj) {
      this.#linkError = undefined;
      if (this.#session) {
        this.#owed = this.#session.session.link;
        await this.#stopSession();
      }
      if (!this.#owed) return false;
      const owed = this.#owed;
      try {
        const n = await cleanupLink(this.#o.api, owed, log);
        log(
          `link ${linkName} deleted: removed the mirrors of ${n} remote services of ${owed.targetClusterName}`,
        );
        this.#owed = undefined;
        return false;
      } catch (e) {
        log(`cleanup of link ${linkName} failed, will retry: ${e instanceof Error ? e.message : e}`);
        return true;
      }
    }
    let link: Link;
    try {
      link = parseLink(obj);
    } catch (e) {
      this.#linkError = `link ${linkName}: ${e instanceof Error ? e.message : e}`;
      log(this.#linkError);
      return false;
    }
    const secret = this.secrets.get(namespace, link.clusterCredentialsSecret);
    const secretVersion = secret?.metadata.resourceVersion ?? "";
    if (
      this.#session && sameSpec(this.#session.session.link, link) &&
      this.#session.secretVersion === secretVersion
    ) {
      return false;
    }
    if (this.#owed && this.#owed.targetClusterName !== link.targetClusterName) {
      // The link now names another cluster: the old cluster's mirrors go first.
      await cleanupLink(this.#o.api, this.#owed, log).then(() => this.#owed = undefined, () => {});
    }
    await this.#stopSession();
    const what = `secret ${namespace}/${link.clusterCredentialsSecret}`;
    let remoteKc: KubeConfig;
    try {
      if (!secret) throw new LinkError(`${what} not found`);
      remoteKc = remoteKubeConfig(secret, what);
    } catch (e) {
      // Not retried on a timer: a new Secret or Link wakes the loop.
      this.#linkError = `link ${linkName}: ${e instanceof Error ? e.message : e}`;
      log(this.#linkError);
      return false;
    }
    this.#linkError = undefined;
    const session = new LinkSession({
      link,
      api: this.#o.api,
      ...this.#o.sources(link, remoteKc),
      metrics: this.#o.metrics,
      log,
      resyncPeriodMs: this.#o.resyncPeriodMs,
      gatewayIps: this.#o.gatewayIps,
      fetch: this.#o.fetch,
    });
    const stop = new AbortController();
    const stopAll = () => stop.abort();
    signal.addEventListener("abort", stopAll, { once: true });
    const done = session.run(stop.signal)
      .catch((e) => log(`session of link ${linkName} failed: ${e instanceof Error ? e.message : e}`))
      .finally(() => signal.removeEventListener("abort", stopAll));
    this.#session = { session, secretVersion, stop, done };
    this.#owed = link;
    log(
      `mirroring ${link.targetClusterName} (gateway ${link.gatewayAddress || "none"}:${link.gatewayPort}, ` +
        `identity ${link.gatewayIdentity || "none"})`,
    );
    return false;
  }

  async run(signal: AbortSignal): Promise<void> {
    const informing = [this.links.start(signal), this.secrets.start(signal)];
    await Promise.race([
      Promise.all([this.links.synced, this.secrets.synced]),
      new Promise((r) => signal.addEventListener("abort", r, { once: true })),
    ]);
    let retryMs = 1000;
    while (!signal.aborted) {
      const woken = new Promise<void>((r) => this.#wake = r);
      const failed = await this.#step(signal).catch((e) => {
        this.#o.log(`link ${this.#o.linkName}: ${e instanceof Error ? e.message : e} (will retry)`);
        return true;
      });
      retryMs = failed ? Math.min(retryMs * 2, 30_000) : 1000;
      const timer = new AbortController();
      const both = AbortSignal.any([signal, timer.signal]);
      await Promise.race([
        woken,
        failed ? sleep(retryMs, both) : new Promise((r) => both.addEventListener("abort", r)),
      ]);
      timer.abort();
    }
    await this.#stopSession();
    await Promise.all(informing);
  }
}

/** Deletes every mirror object of `link` in the source cluster (the Link is gone or `--unlink`). */
export async function cleanupLink(api: MirrorApi, link: Link, log: (m: string) => void): Promise<number> {
  const r = new Reconciler({
    api,
    link: () => link,
    remote: () => undefined,
    namespaceExists: () => true,
    localFederatedMember: () => undefined,
    gatewayIps: () => Promise.resolve([]),
    log,
  });
  return await r.removeAll();
}
