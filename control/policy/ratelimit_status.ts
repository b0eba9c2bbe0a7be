/**
 * Writes the `Accepted` status of HTTPLocalRateLimitPolicies (see `rateLimitStatus`), off the watch
 * path: a change to a policy or a Server marks its namespace, and after a short delay each policy of
 * the marked namespaces whose status differs is patched, one patch at a time.
 */
import type { HttpLocalRateLimitPolicy } from "./resources.ts";
import { rateLimitStatus, statusUpdate } from "./ratelimit.ts";
import { canWrite, type StatusClient, type StatusWriterOptions } from "./route_status.ts";
import type { PolicyStore, StoreChange } from "./store.ts";

export class RateLimitStatusWriter {
  readonly #dirty = new Set<string>();
  #timer: ReturnType<typeof setTimeout> | undefined;
  #running = false;
  readonly #unlisten: () => void;
  errors = 0;
  writes = 0;

  constructor(
    readonly store: PolicyStore,
    readonly client: StatusClient,
    readonly opts: StatusWriterOptions = {},
  ) {
    this.#unlisten = store.listen((c) => this.#onChange(c));
  }

  close(): void {
    this.#unlisten();
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  /** Rechecks every policy (on gaining leadership: the followers wrote nothing meanwhile). */
  resync(): void {
    for (const p of this.store.list<HttpLocalRateLimitPolicy>("HTTPLocalRateLimitPolicy")) {
      this.#dirty.add(p.metadata.namespace ?? "");
    }
    this.#schedule();
  }

  #onChange(c: StoreChange): void {
    if (c.kind !== "HTTPLocalRateLimitPolicy" && c.kind !== "Server") return;
    this.#dirty.add(c.namespace ?? "");
    this.#schedule();
  }

  #schedule(): void {
    if (!this.#timer) this.#timer = setTimeout(() => this.#run(), this.opts.delayMs ?? 50);
  }

  async #run(): Promise<void> {
    this.#timer = undefined;
    if (this.#running) return this.#schedule();
    this.#running = true;
    try {
      const namespaces = [...this.#dirty];
      this.#dirty.clear();
      // A follower forgets what changed: resync() on gaining leadership rechecks everything.
      if (!canWrite(this.opts)) return;
      for (const ns of namespaces) await this.syncNamespace(ns);
    } finally {
      this.#running = false;
    }
  }

  async syncNamespace(ns: string): Promise<void> {
    const now = (this.opts.now?.() ?? new Date()).toISOString().replace(/\.[0-9]+Z$/, "Z");
    const list = [...this.store.list<HttpLocalRateLimitPolicy>("HTTPLocalRateLimitPolicy", ns)];
    for (const p of list) {
      const next = rateLimitStatus(this.store, p, now);
      if (!next) continue;
      const status = statusUpdate(p.status, next);
      if (!status) continue;
      if (!canWrite(this.opts)) return;
      try {
        await this.client.patchStatus("HTTPLocalRateLimitPolicy", ns, p.metadata.name, status);
        this.writes++;
      } catch (e) {
        this.errors++;
        this.opts.log?.(`rate limit policy status: ${(e as Error).message}`);
      }
    }
  }
}
