/**
 * Namespaces for admission, from an informer cache: an admission never calls the API server.
 * A namespace created moments before its first pod may not have reached the cache yet; such a
 * miss waits (bounded in time and in the number of waiters) for the watch event instead of
 * deciding without the namespace's annotations.
 */
import { Counter, type Registry } from "prom-client";
import type { Informer, KubeObject } from "../k8s/mod.ts";

export type NamespaceObject = KubeObject & { metadata: { annotations?: Record<string, string> } };

const MAX_WAITERS = 1000;

export class NamespaceCache<T extends NamespaceObject = NamespaceObject> {
  readonly #informer: Informer<T>;
  readonly #waitMs: number;
  readonly #waiters = new Map<string, Set<() => void>>();
  #waiting = 0;
  readonly #misses: Counter | undefined;

  /** Registers its handler on `informer`, so construct it before the informer starts. */
  constructor(informer: Informer<T>, opts: { waitMs: number; registry?: Registry }) {
    this.#informer = informer;
    this.#waitMs = opts.waitMs;
    this.#misses = opts.registry
      ? new Counter({
        name: "proxy_inject_namespace_cache_misses_total",
        help: "Admissions whose namespace was not cached yet, by whether it arrived within the wait.",
        labelNames: ["outcome"],
        registers: [opts.registry],
      })
      : undefined;
    informer.onAdd((ns) => {
      const name = ns.metadata.name ?? "";
      const waiters = this.#waiters.get(name);
      if (!waiters) return;
      this.#waiters.delete(name);
      for (const wake of waiters) wake();
    });
  }

  synced(): boolean {
    return this.#informer.isSynced();
  }

  get(name: string): T | undefined {
    return this.#informer.get(undefined, name);
  }

  /** The cached namespace, or after a miss the one the watch delivers within the wait; else undefined. */
  async lookup(name: string): Promise<T | undefined> {
    const hit = this.get(name);
    if (hit || this.#waitMs <= 0 || this.#waiting >= MAX_WAITERS) return hit;
    this.#waiting++;
    try {
      await new Promise<void>((resolve) => {
        let set = this.#waiters.get(name);
        if (!set) this.#waiters.set(name, set = new Set());
        const wake = () => {
          clearTimeout(timer);
          resolve();
        };
        const timer = setTimeout(() => {
          set!.delete(wake);
          if (set!.size === 0 && this.#waiters.get(name) === set) this.#waiters.delete(name);
          resolve();
        }, this.#waitMs);
        set.add(wake);
      });
    } finally {
      this.#waiting--;
    }
    const found = this.get(name);
    this.#misses?.inc({ outcome: found ? "arrived" : "absent" });
    return found;
  }
}
