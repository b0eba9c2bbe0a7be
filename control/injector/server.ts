/**
 * The running proxy injector: the HTTPS webhook (`/inject`) on control/webhook's reloadable
 * server, the admin server (/live, /ready, /metrics) and the namespace cache, wired together.
 * Everything Kubernetes-facing is passed in (the namespace informer, the event sink), so tests
 * run it in-process against a FakeEventSource over real TLS.
 */
import type { Registry } from "prom-client";
import { serveAdmin } from "../admin/admin_server.ts";
import type { Informer } from "../k8s/mod.ts";
import { AdmissionError } from "../webhook/admission_review.ts";
import { serveWebhook, type WebhookServer } from "../webhook/https_server.ts";
import { type InjectorDeps, review } from "./admission.ts";
import type { InjectorConfig } from "./config.ts";
import type { EventSink } from "./events.ts";
import { InjectorMetrics } from "./metrics.ts";
import { NamespaceCache, type NamespaceObject } from "./namespace_cache.ts";
import { describe, type TrustAnchors, watchTrustAnchors } from "./trust_anchors.ts";
import type { TrustRootsCopier } from "./trust_roots_copy.ts";

export const INJECT_PATH = "/inject";

export interface InjectorServerOptions {
  webhook: {
    hostname: string;
    port: number;
    certFile: string;
    keyFile: string;
    reloadIntervalMs?: number;
    maxBodyBytes?: number;
  };
  admin: { hostname: string; port: number };
  config: InjectorConfig;
  /** Not started yet: the namespace cache registers its handler first. */
  namespaces: Informer<NamespaceObject>;
  namespaceWaitMs: number;
  /** When given, the file is re-read and new pods get the new bundle. */
  trustAnchors?: { file: string; current: TrustAnchors; reloadIntervalMs: number };
  events?: EventSink;
  /** Keeps namespace copies of the trust-roots ConfigMap (issue 21); synced every `intervalMs`. */
  trustRootsCopy?: { copier: TrustRootsCopier; intervalMs: number };
  registry: Registry;
  signal: AbortSignal;
  log: (m: string) => void;
}

export interface InjectorServer {
  webhook: WebhookServer;
  adminPort: number;
  /** The config admissions use now (it changes when the trust anchors do). */
  config(): InjectorConfig;
  finished: Promise<void>;
}

export async function startInjector(opts: InjectorServerOptions): Promise<InjectorServer> {
  const cache = new NamespaceCache(opts.namespaces, {
    waitMs: opts.namespaceWaitMs,
    registry: opts.registry,
  });
  const informerDone = opts.namespaces.start(opts.signal);
  const deps: InjectorDeps = {
    config: opts.config,
    namespace: (name) => cache.lookup(name),
    metrics: new InjectorMetrics(opts.registry),
    events: opts.events,
  };
  if (opts.trustRootsCopy) {
    const { copier, intervalMs } = opts.trustRootsCopy;
    deps.trustRootsCopy = (ns) => copier.ensure(ns);
    copier.run(intervalMs, opts.signal).catch((e) =>
      opts.log(`trust roots copier stopped: ${(e as Error).message}`)
    );
  }
  if (opts.trustAnchors) {
    watchTrustAnchors({
      file: opts.trustAnchors.file,
      current: opts.trustAnchors.current,
      intervalMs: opts.trustAnchors.reloadIntervalMs,
      onChange: (a) => deps.config = { ...deps.config, trustAnchorsPem: a.pem },
      log: opts.log,
      signal: opts.signal,
    });
  }

  const webhook = await serveWebhook({
    ...opts.webhook,
    signal: opts.signal,
    registry: opts.registry,
    paths: [INJECT_PATH],
    log: opts.log,
    handler: async (path, body) => {
      if (path !== INJECT_PATH) {
        return { status: 404, body: { error: `no webhook at ${path}; use ${INJECT_PATH}` } };
      }
      // Before the first full list the cache cannot tell which namespaces inject; the API server's
      // failurePolicy then decides, as for an unreachable webhook.
      if (!cache.synced()) return { status: 503, body: { error: "namespace cache not synced yet" } };
      try {
        return { status: 200, body: await review(body, deps) };
      } catch (e) {
        if (e instanceof AdmissionError) {
          return { status: 400, body: { error: `bad AdmissionReview: ${e.message}` } };
        }
        throw e;
      }
    },
  });
  const admin = serveAdmin({
    ...opts.admin,
    registry: opts.registry,
    signal: opts.signal,
    readiness: [{
      name: "namespaces",
      check: () => cache.synced() ? undefined : "namespace cache not synced",
    }],
  });
  opts.log(
    `webhook on ${opts.webhook.hostname}:${webhook.port}${INJECT_PATH} (certificate until ${webhook.certificateExpiry().toISOString()}), ` +
      `admin on ${admin.addr.hostname}:${admin.addr.port}, native sidecars ${opts.config.nativeSidecars}` +
      (opts.trustAnchors ? `, trust anchors ${describe(opts.trustAnchors.current)}` : ""),
  );
  return {
    webhook,
    adminPort: admin.addr.port,
    config: () => deps.config,
    finished: Promise.all([webhook.closed, admin.finished, informerDone]).then(() => {}),
  };
}
