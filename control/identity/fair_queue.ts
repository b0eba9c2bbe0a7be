/**
 * Round-robin admission to a RateLimiter across client keys, each with a bounded FIFO. A client
 * that sends many requests gets its turn like every other client instead of filling one shared
 * FIFO ahead of them; past its own bound it is refused at once (not made to wait), and a global
 * bound caps the memory all queues together may hold.
 */
import { RateLimitedError, type RateLimiter } from "./rate_limiter.ts";

/** The request was refused without waiting: its client's queue (or all queues together) is full. */
export class QueueFullError extends Error {
  override name = "QueueFullError";
  constructor(readonly scope: "client" | "all", message: string) {
    super(message);
  }
}

export interface FairQueueOptions {
  /** Waiters one key may have queued; the next is refused. */
  maxPerKey: number;
  /** Waiters all keys together may have queued. */
  maxTotal: number;
}

interface Waiter {
  resolve: () => void;
  reject: (e: Error) => void;
  signal?: AbortSignal;
  onAbort?: () => void;
}

export class FairQueue {
  /** Keys in turn order: the head is served next, then moved to the back if it still waits. */
  readonly #queues = new Map<string, Waiter[]>();
  #total = 0;
  #pumping = false;
  readonly #closed = new AbortController();

  constructor(readonly opts: FairQueueOptions, private readonly limiter: RateLimiter) {
    if (!(opts.maxPerKey >= 1) || !(opts.maxTotal >= 1)) {
      throw new Error(`fair queue: need maxPerKey >= 1 and maxTotal >= 1, got ${JSON.stringify(opts)}`);
    }
  }

  /** Waiters across all keys. */
  get queued(): number {
    return this.#total;
  }

  /** Keys with at least one waiter. */
  get keys(): number {
    return this.#queues.size;
  }

  /**
   * Resolves when `key`'s turn comes and the limiter has a slot; rejects at once with
   * QueueFullError when `key`'s queue or all queues are full, or with the signal's reason.
   */
  acquire(key: string, signal?: AbortSignal): Promise<void> {
    if (this.#closed.signal.aborted) return Promise.reject(new RateLimitedError("queue closed"));
    if (signal?.aborted) return Promise.reject(signal.reason ?? new Error("aborted"));
    if (this.#total === 0 && this.limiter.tryAcquire()) return Promise.resolve();
    const q = this.#queues.get(key);
    if (q && q.length >= this.opts.maxPerKey) {
      return Promise.reject(
        new QueueFullError(
          "client",
          `${q.length} requests from ${key} already waiting (limit ${this.opts.maxPerKey} per client)`,
        ),
      );
    }
    if (this.#total >= this.opts.maxTotal) {
      return Promise.reject(
        new QueueFullError("all", `${this.#total} requests already waiting (limit ${this.opts.maxTotal})`),
      );
    }
    return new Promise<void>((resolve, reject) => {
      const w: Waiter = { resolve, reject, signal };
      if (signal) {
        w.onAbort = () => {
          this.#remove(key, w);
          reject(signal.reason ?? new Error("aborted"));
        };
        signal.addEventListener("abort", w.onAbort, { once: true });
      }
      if (q) q.push(w);
      else this.#queues.set(key, [w]);
      this.#total++;
      void this.#pump();
    });
  }

  #remove(key: string, w: Waiter): void {
    const q = this.#queues.get(key);
    const i = q?.indexOf(w) ?? -1;
    if (i < 0) return;
    q!.splice(i, 1);
    this.#total--;
    if (q!.length === 0) this.#queues.delete(key);
  }

  /** The head waiter of the key whose turn it is; that key goes to the back of the line. */
  #next(): Waiter | undefined {
    const head = this.#queues.entries().next();
    if (head.done) return undefined;
    const [key, q] = head.value;
    this.#queues.delete(key);
    const w = q.shift()!;
    if (q.length > 0) this.#queues.set(key, q);
    this.#total--;
    if (w.onAbort) w.signal!.removeEventListener("abort", w.onAbort);
    return w;
  }

  /** One loop at a time takes limiter slots and hands each to the next key in turn. */
  async #pump(): Promise<void> {
    if (this.#pumping) return;
    this.#pumping = true;
    try {
      while (this.#total > 0) {
        try {
          await this.limiter.acquire(this.#closed.signal);
        } catch {
          return; // closed: close() has refused every waiter
        }
        const w = this.#next();
        if (w) w.resolve();
        else this.limiter.refund(); // every waiter gave up while we waited for the slot
      }
    } finally {
      this.#pumping = false;
    }
  }

  /** Refuses every waiter (used at shutdown). */
  close(): void {
    this.#closed.abort();
    for (const [key, q] of [...this.#queues]) {
      for (const w of [...q]) {
        this.#remove(key, w);
        if (w.onAbort) w.signal!.removeEventListener("abort", w.onAbort);
        w.reject(new RateLimitedError("queue closed"));
      }
    }
  }
}
