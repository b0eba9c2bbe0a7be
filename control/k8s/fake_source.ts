/**
 * An in-memory `EventSource` for component tests: it keeps objects and a change history with
 * resourceVersions, serves paged lists and watches from any retained version, and lets a test
 * end watches, fail them, compact the history (so the next watch gets 410 Gone) or send
 * bookmarks, to drive an informer through every recovery path without an API server.
 */
import { type EventSource, GoneError, type ListOptions, type WatchOptions } from "./event_source.ts";
import { type KubeObject, type ListPage, objectKey, type WatchEvent } from "./types.ts";

interface ActiveWatch<T> {
  onEvent: (e: WatchEvent<T>) => void;
  end: (err?: Error) => void;
}

export class FakeEventSource<T extends KubeObject> implements EventSource<T> {
  readonly description: string;
  readonly #objects = new Map<string, T>();
  readonly #history: { rv: number; event: WatchEvent<T> }[] = [];
  readonly #watches = new Set<ActiveWatch<T>>();
  #rv = 0;
  /** Watches from versions below this get 410 Gone. */
  #oldestRetained = 0;
  #failLists: Error[] = [];
  #watchWaiters: (() => void)[] = [];
  /** Counts of calls, for tests asserting resume versus re-list. */
  listCalls = 0;
  watchCalls = 0;
  /** resourceVersions the watches were opened with, in order. */
  readonly watchVersions: string[] = [];
  /**
   * Events kept for watches resuming from an older version (unbounded by default); benchmarks that
   * churn for long bound it, so the history is not what their heap figures measure. Watches from
   * versions before the kept events get 410 Gone, as after a compaction.
   */
  historyLimit = Infinity;

  constructor(description = "fake", readonly now: () => number = Date.now) {
    this.description = description;
  }

  get resourceVersion(): string {
    return String(this.#rv);
  }

  /** Creates or replaces an object (by namespace/name), stamping resourceVersion and uid. */
  apply(obj: T): T {
    const key = objectKey(obj);
    const existed = this.#objects.get(key);
    const rv = ++this.#rv;
    const stored = {
      ...obj,
      metadata: {
        ...obj.metadata,
        resourceVersion: String(rv),
        uid: obj.metadata.uid ?? existed?.metadata.uid ?? crypto.randomUUID(),
        creationTimestamp: obj.metadata.creationTimestamp ?? existed?.metadata.creationTimestamp ??
          new Date(this.now()).toISOString(),
      },
    } as T;
    this.#objects.set(key, stored);
    this.#emit(rv, { type: existed ? "MODIFIED" : "ADDED", object: stored });
    return stored;
  }

  /** Deletes an object; returns false when it did not exist. */
  delete(namespace: string | undefined, name: string): boolean {
    const key = namespace ? `${namespace}/${name}` : name;
    const existed = this.#objects.get(key);
    if (!existed) return false;
    this.#objects.delete(key);
    const rv = ++this.#rv;
    const object = { ...existed, metadata: { ...existed.metadata, resourceVersion: String(rv) } } as T;
    this.#emit(rv, { type: "DELETED", object });
    return true;
  }

  get(namespace: string | undefined, name: string): T | undefined {
    return this.#objects.get(namespace ? `${namespace}/${name}` : name);
  }

  /** Moves the version on without an event here, as changes to other resources do. */
  advance(by = 1): void {
    this.#rv += by;
  }

  /** Sends a BOOKMARK carrying the current version to open watches. */
  bookmark(): void {
    const object = { metadata: { resourceVersion: String(this.#rv) } } as T;
    for (const w of this.#watches) w.onEvent({ type: "BOOKMARK", object });
  }

  /** Ends open watches as a server timeout would (the informer resumes from its version). */
  endWatches(): void {
    for (const w of [...this.#watches]) w.end();
  }

  /** Fails open watches as a broken connection would. */
  failWatches(message = "connection reset"): void {
    for (const w of [...this.#watches]) w.end(new Error(message));
  }

  /** Drops the history: open and future watches from older versions get 410 Gone. */
  compact(): void {
    this.#oldestRetained = this.#rv;
    this.#history.length = 0;
    for (const w of [...this.#watches]) w.end(new GoneError("too old resource version (compacted)"));
  }

  /** The next list calls fail with these errors, in order. */
  failNextLists(...errors: Error[]): void {
    this.#failLists.push(...errors);
  }

  get openWatches(): number {
    return this.#watches.size;
  }

  /** Resolves once at least one watch is open. */
  watching(): Promise<void> {
    if (this.#watches.size > 0) return Promise.resolve();
    return new Promise((resolve) => this.#watchWaiters.push(resolve));
  }

  list(opts: ListOptions): Promise<ListPage<T>> {
    this.listCalls++;
    const err = this.#failLists.shift();
    if (err) return Promise.reject(err);
    const all = [...this.#objects.values()];
    const start = opts.continue ? Number(opts.continue) : 0;
    const end = opts.limit ? Math.min(all.length, start + opts.limit) : all.length;
    return Promise.resolve({
      items: all.slice(start, end),
      resourceVersion: String(this.#rv),
      continue: end < all.length ? String(end) : undefined,
    });
  }

  watch(opts: WatchOptions, onEvent: (event: WatchEvent<T>) => void): Promise<void> {
    this.watchCalls++;
    this.watchVersions.push(opts.resourceVersion);
    const from = Number(opts.resourceVersion);
    if (from < this.#oldestRetained) {
      return Promise.reject(new GoneError(`too old resource version: ${from} (${this.#oldestRetained})`));
    }
    if (opts.signal.aborted) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const w: ActiveWatch<T> = {
        onEvent,
        end: (err) => {
          this.#watches.delete(w);
          opts.signal.removeEventListener("abort", onAbort);
          if (err) reject(err);
          else resolve();
        },
      };
      const onAbort = () => w.end();
      opts.signal.addEventListener("abort", onAbort, { once: true });
      for (const h of this.#history) if (h.rv > from) onEvent(h.event);
      this.#watches.add(w);
      for (const wake of this.#watchWaiters.splice(0)) wake();
    });
  }

  #emit(rv: number, event: WatchEvent<T>): void {
    this.#history.push({ rv, event });
    if (this.#history.length > this.historyLimit * 2) {
      // Trimmed in halves so the copy is amortized over many events.
      const dropped = this.#history.splice(0, this.#history.length - this.historyLimit);
      this.#oldestRetained = dropped[dropped.length - 1].rv;
    }
    for (const w of this.#watches) w.onEvent(event);
  }
}
