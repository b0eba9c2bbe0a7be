/**
 * A list+watch informer: lists once, then watches from the listed resourceVersion, resumes from
 * the last seen version (events and bookmarks) after the stream ends or fails, and lists again
 * only when the API server says that version is gone (410). It keeps a typed in-memory cache
 * with secondary indexes and calls handlers synchronously; handlers must not block (they may
 * only enqueue work), because they run on the single path that applies every change.
 */
import { Counter, Gauge, Histogram, type Registry } from "prom-client";
import { type EventSource, GoneError } from "./event_source.ts";
import { changeTime, type InformerEventKind } from "./lag.ts";
import { keyOf, type KubeObject, objectKey, type WatchEvent } from "./types.ts";

export type Indexer<T> = (obj: T) => readonly string[];

export interface InformerOptions<T extends KubeObject> {
  /** Metric prefix, plural and lower case: `services` → `services_informer_lag_seconds`. */
  name: string;
  source: EventSource<T>;
  /** Secondary indexes: name → function returning the index values of an object. */
  indexers?: Record<string, Indexer<T>>;
  /**
   * Applied to every object before it is cached and handed to handlers, e.g. to drop
   * managedFields or fields the component never reads (the lag is measured before this).
   */
  transform?: (obj: T) => T;
  registry?: Registry;
  /** Wall clock in ms since the epoch; compared with the API server's timestamps. */
  now?: () => number;
  /** Retry delays after a failed list or watch: jittered exponential between these bounds. */
  backoff?: { initialMs: number; maxMs: number };
  pageSize?: number;
  /** Server-side watch timeout range; each watch picks a random value in it. */
  watchTimeoutSeconds?: [number, number];
  log?: (message: string) => void;
}

const LAG_BUCKETS = [0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 1000];

class InformerMetrics {
  readonly lag: Histogram;
  readonly events: Counter;
  readonly lists: Counter;
  readonly watchErrors: Counter;
  readonly handlerErrors: Counter;

  constructor(name: string, registry: Registry, size: () => number) {
    const registers = [registry];
    this.lag = new Histogram({
      name: `${name}_informer_lag_seconds`,
      help:
        `Time from a change of a ${name} object (its newest metadata timestamp) to the informer seeing it.`,
      labelNames: ["event"],
      buckets: LAG_BUCKETS,
      registers,
    });
    this.events = new Counter({
      name: `${name}_informer_events_total`,
      help: `Changes of ${name} applied to the cache.`,
      labelNames: ["event"],
      registers,
    });
    this.lists = new Counter({
      name: `${name}_informer_lists_total`,
      help: `Full lists of ${name}: the initial one, and re-lists after the watch version expired.`,
      labelNames: ["reason"],
      registers,
    });
    this.watchErrors = new Counter({
      name: `${name}_informer_watch_errors_total`,
      help: `Failed lists or watches of ${name} (each followed by a retry with backoff).`,
      registers,
    });
    this.handlerErrors = new Counter({
      name: `${name}_informer_handler_errors_total`,
      help: `Exceptions thrown by ${name} event handlers (caught so the informer keeps going).`,
      registers,
    });
    new Gauge({
      name: `${name}_informer_cache_size`,
      help: `Objects in the ${name} cache.`,
      registers,
      collect() {
        this.set(size());
      },
    });
  }
}

function abortableSleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener("abort", done, { once: true });
  });
}

export class Informer<T extends KubeObject> {
  readonly name: string;
  /** Resolves after the first complete list has been applied; never rejects. */
  readonly synced: Promise<void>;
  #resolveSynced!: () => void;
  #synced = false;
  readonly #opts: InformerOptions<T>;
  readonly #store = new Map<string, T>();
  /** Newest known change time per key, kept apart because `transform` may strip managedFields. */
  readonly #changedAt = new Map<string, number>();
  readonly #indexers: [string, Indexer<T>][];
  readonly #indexes = new Map<string, Map<string, Set<string>>>();
  readonly #onAdd: ((obj: T) => void)[] = [];
  readonly #onUpdate: ((old: T, obj: T) => void)[] = [];
  readonly #onDelete: ((obj: T) => void)[] = [];
  readonly #metrics: InformerMetrics | undefined;
  readonly #now: () => number;
  #resourceVersion = "";
  #running = false;

  constructor(opts: InformerOptions<T>) {
    this.name = opts.name;
    this.#opts = opts;
    this.#now = opts.now ?? Date.now;
    this.#indexers = Object.entries(opts.indexers ?? {});
    for (const [name] of this.#indexers) this.#indexes.set(name, new Map());
    this.synced = new Promise((resolve) => this.#resolveSynced = resolve);
    this.#metrics = opts.registry
      ? new InformerMetrics(opts.name, opts.registry, () => this.size)
      : undefined;
  }

  isSynced(): boolean {
    return this.#synced;
  }

  /** Last resourceVersion applied (from a list, an event or a bookmark). */
  get resourceVersion(): string {
    return this.#resourceVersion;
  }

  get size(): number {
    return this.#store.size;
  }

  get(namespace: string | undefined, name: string): T | undefined {
    return this.#store.get(keyOf(namespace, name));
  }

  getByKey(key: string): T | undefined {
    return this.#store.get(key);
  }

  values(): IterableIterator<T> {
    return this.#store.values();
  }

  list(): T[] {
    return [...this.#store.values()];
  }

  /** Objects whose indexer `index` returned `value`. */
  byIndex(index: string, value: string): T[] {
    const idx = this.#indexes.get(index);
    if (!idx) throw new Error(`informer ${this.name} has no index "${index}"`);
    const keys = idx.get(value);
    if (!keys) return [];
    const out: T[] = [];
    for (const k of keys) out.push(this.#store.get(k)!);
    return out;
  }

  /** Handlers run synchronously on the event path; register them before `start`. */
  onAdd(handler: (obj: T) => void): () => void {
    return this.#register(this.#onAdd, handler);
  }

  onUpdate(handler: (old: T, obj: T) => void): () => void {
    return this.#register(this.#onUpdate, handler);
  }

  onDelete(handler: (obj: T) => void): () => void {
    return this.#register(this.#onDelete, handler);
  }

  #register<H>(list: H[], handler: H): () => void {
    list.push(handler);
    return () => {
      const i = list.indexOf(handler);
      if (i >= 0) list.splice(i, 1);
    };
  }

  /** Runs until `signal` aborts; the returned promise settles then. */
  start(signal: AbortSignal): Promise<void> {
    if (this.#running) throw new Error(`informer ${this.name} already started`);
    this.#running = true;
    return this.#run(signal).finally(() => this.#running = false);
  }

  async #run(signal: AbortSignal): Promise<void> {
    const { initialMs, maxMs } = this.#opts.backoff ?? { initialMs: 250, maxMs: 30_000 };
    let delay = initialMs;
    let needList = true;
    let listReason = "initial";
    while (!signal.aborted) {
      try {
        if (needList) {
          await this.#list(signal, listReason);
          needList = false;
          delay = initialMs;
        }
        const before = this.#resourceVersion;
        const [lo, hi] = this.#opts.watchTimeoutSeconds ?? [300, 600];
        await this.#opts.source.watch(
          {
            resourceVersion: this.#resourceVersion,
            timeoutSeconds: Math.round(lo + Math.random() * (hi - lo)),
            signal,
          },
          (event) => this.#apply(event),
        );
        // A watch that made progress proves the connection healthy again.
        if (this.#resourceVersion !== before) delay = initialMs;
      } catch (e) {
        if (signal.aborted) break;
        if (e instanceof GoneError) {
          needList = true;
          listReason = "expired";
          this.#log(`resourceVersion ${this.#resourceVersion} expired; listing again`);
          continue;
        }
        this.#metrics?.watchErrors.inc();
        this.#log(`${needList ? "list" : "watch"} failed: ${e instanceof Error ? e.message : e}`);
        await abortableSleep(delay * (0.5 + Math.random() / 2), signal);
        delay = Math.min(maxMs, delay * 2);
      }
    }
  }

  async #list(signal: AbortSignal, reason: string): Promise<void> {
    const fresh = new Map<string, T>();
    let cont: string | undefined;
    let rv = "";
    do {
      const page = await this.#opts.source.list({
        limit: this.#opts.pageSize ?? 500,
        continue: cont,
        signal,
      });
      for (const raw of page.items) fresh.set(objectKey(raw), raw);
      rv = page.resourceVersion;
      cont = page.continue || undefined;
    } while (cont);
    this.#metrics?.lists.inc({ reason });
    const initial = !this.#synced;
    // Diff against the cache so handlers see exactly what changed while the watch was gone.
    for (const [key, old] of this.#store) {
      if (!fresh.has(key)) this.#delete(key, old, undefined);
    }
    for (const [key, raw] of fresh) {
      const old = this.#store.get(key);
      if (!old) this.#add(key, raw, !initial);
      else if (old.metadata.resourceVersion !== raw.metadata.resourceVersion) this.#update(key, old, raw);
    }
    this.#resourceVersion = rv;
    if (initial) {
      this.#synced = true;
      this.#resolveSynced();
    }
  }

  #apply(event: WatchEvent<T>): void {
    const raw = event.object;
    const rv = raw.metadata?.resourceVersion;
    if (event.type === "BOOKMARK") {
      if (rv) this.#resourceVersion = rv;
      return;
    }
    const key = objectKey(raw);
    const old = this.#store.get(key);
    switch (event.type) {
      case "ADDED":
      case "MODIFIED":
        if (!old) this.#add(key, raw, true);
        else if (old.metadata.resourceVersion !== rv) this.#update(key, old, raw);
        break;
      case "DELETED":
        if (old) this.#delete(key, old, raw);
        break;
    }
    if (rv) this.#resourceVersion = rv;
  }

  #observeLag(kind: InformerEventKind, key: string, raw: KubeObject, measure: boolean): void {
    if (!this.#metrics) return;
    this.#metrics.events.inc({ event: kind });
    const now = this.#now();
    const t = changeTime(kind, raw, this.#changedAt.get(key), now);
    if (t === undefined) return;
    if (kind !== "delete") this.#changedAt.set(key, t);
    if (measure) this.#metrics.lag.observe({ event: kind }, Math.max(0, now - t) / 1000);
  }

  #add(key: string, raw: T, measure: boolean): void {
    this.#observeLag("add", key, raw, measure);
    const obj = this.#opts.transform ? this.#opts.transform(raw) : raw;
    this.#store.set(key, obj);
    this.#index(key, obj);
    for (const h of this.#onAdd) this.#call(() => h(obj));
  }

  #update(key: string, old: T, raw: T): void {
    this.#observeLag("update", key, raw, true);
    const obj = this.#opts.transform ? this.#opts.transform(raw) : raw;
    this.#unindex(key, old);
    this.#store.set(key, obj);
    this.#index(key, obj);
    for (const h of this.#onUpdate) this.#call(() => h(old, obj));
  }

  /** `raw` is the final state from a DELETED event, undefined when a re-list found it gone. */
  #delete(key: string, old: T, raw: T | undefined): void {
    if (raw) this.#observeLag("delete", key, raw, true);
    else this.#metrics?.events.inc({ event: "delete" });
    this.#unindex(key, old);
    this.#store.delete(key);
    this.#changedAt.delete(key);
    for (const h of this.#onDelete) this.#call(() => h(old));
  }

  #index(key: string, obj: T): void {
    for (const [name, fn] of this.#indexers) {
      const idx = this.#indexes.get(name)!;
      for (const v of fn(obj)) {
        let keys = idx.get(v);
        if (!keys) idx.set(v, keys = new Set());
        keys.add(key);
      }
    }
  }

  #unindex(key: string, obj: T): void {
    for (const [name, fn] of this.#indexers) {
      const idx = this.#indexes.get(name)!;
      for (const v of fn(obj)) {
        const keys = idx.get(v);
        if (!keys) continue;
        keys.delete(key);
        if (keys.size === 0) idx.delete(v);
      }
    }
  }

  #call(fn: () => void): void {
    try {
      fn();
    } catch (e) {
      this.#metrics?.handlerErrors.inc();
      this.#log(`event handler threw: ${e instanceof Error ? e.stack ?? e.message : e}`);
    }
  }

  #log(message: string): void {
    (this.#opts.log ?? ((m: string) => console.error(m)))(`informer ${this.name}: ${message}`);
  }
}
