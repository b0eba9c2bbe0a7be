/**
 * control/k8s: Kubernetes list+watch informers with typed caches, shared by destination, policy
 * and identity. Import from this file only; the API below is kept stable.
 *
 * ```ts
 * import { Informer, KubeApiSource, loadKubeConfig, metadataOnly, Resources } from "../k8s/mod.ts";
 *
 * const kc = loadKubeConfig(config.kubeconfig);          // file path, or in-cluster when undefined
 * const services = new Informer<Service>({
 *   name: "services",                                    // metric prefix: services_informer_lag_seconds
 *   source: new KubeApiSource(kc, Resources.services),  // or metadataOnly(Resources.namespaces)
 *   indexers: { clusterIP: (s) => s.spec.clusterIP ? [s.spec.clusterIP] : [] },
 *   transform: stripManagedFields,                       // optional: shrink what is cached
 *   registry,                                            // optional prom-client Registry
 * });
 * services.onAdd((svc) => ...);                          // synchronous, must not block: enqueue only
 * services.onUpdate((old, svc) => ...);
 * services.onDelete((svc) => ...);                       // the last cached state
 * const done = services.start(signal);                   // runs until the AbortSignal aborts
 * await services.synced;                                 // first full list applied (never rejects)
 * services.isSynced(); services.get(ns, name); services.getByKey("ns/name");
 * services.list(); services.values(); services.byIndex("clusterIP", ip); services.size;
 * ```
 *
 * Behaviour:
 * - Lists in pages (`pageSize`, default 500), then watches from the list's resourceVersion with
 *   bookmarks; a watch that ends (server timeout, 5–10 min) or fails resumes from the last
 *   version seen in an event or bookmark, after jittered exponential backoff on failures.
 * - 410 Gone (HTTP status or a watch ERROR event) → a full re-list, diffed against the cache so
 *   handlers get exactly the adds, updates and deletes missed while disconnected.
 * - During the initial list, handlers get `onAdd` for every object before `synced` resolves.
 *   Updates whose resourceVersion did not change are not reported.
 * - Handler exceptions are caught, logged and counted; they never stop the informer.
 * - Metrics (when `registry` is given), `<name>` being the informer's name:
 *   `<name>_informer_lag_seconds{event=add|update|delete}` (histogram: observation time minus the
 *   object's newest metadata timestamp — creation, managedFields, or deletion — see lag.ts; not
 *   recorded for the initial list), `<name>_informer_events_total{event}`,
 *   `<name>_informer_cache_size`, `<name>_informer_lists_total{reason=initial|expired}`,
 *   `<name>_informer_watch_errors_total`, `<name>_informer_handler_errors_total`.
 * - `EventSource<T>` is the seam for tests: `FakeEventSource` keeps objects and history in
 *   memory (`apply`, `delete`, `bookmark`, `endWatches`, `failWatches`, `compact` → 410,
 *   `failNextLists`, `watching()`), so component tests drive informers without an API server.
 */
export {
  ApiError,
  type EventSource,
  GoneError,
  type ListOptions,
  type WatchOptions,
} from "./event_source.ts";
export { FakeEventSource } from "./fake_source.ts";
export { type Indexer, Informer, type InformerOptions } from "./informer.ts";
export { KubeApiSource, resourcePath, type ResourceRef } from "./api_source.ts";
export { kubeConfigFromText, loadKubeConfig } from "./kubeconfig.ts";
export { secretText } from "./secret_text.ts";
export {
  type LeaderElectionOptions,
  LeaderElector,
  type Lease,
  type LeaseApi,
  LeaseConflictError,
} from "./leader_election.ts";
export { kubeLeaderElector, KubeLeaseApi } from "./lease_client.ts";
export { metadataOnly, Resources } from "./resources.ts";
export { changeTime, type InformerEventKind, newestManagedFieldsTime } from "./lag.ts";
export { stripManagedFields } from "./strip.ts";
export {
  keyOf,
  type KubeObject,
  type ListPage,
  type ManagedFieldsEntry,
  objectKey,
  type ObjectMeta,
  type OwnerReference,
  type WatchEvent,
  type WatchEventType,
} from "./types.ts";
