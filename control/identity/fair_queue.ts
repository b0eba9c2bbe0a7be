/**
 * Round-robin admission to a RateLimiter across client keys, each with a bounded FIFO. A client
 * that sends many requests gets its turn like every other client instead of filling one shared
 * FIFO ahead of them; past its own bound it is refused at once (not made to wait), and a global
 * bound caps the memory all queues together may hold.
 *
 * Keys the caller marks low-priority (in identity: keys whose recent TokenReviews were refused)
 * are served only when no other key waits, and may not spend the last `lowPriorityReserve` slots
 * of the limiter's burst, so a flooder cannot take the turns or the burst that well-behaved
 * clients would have had; they still get every slot nobody else wants.
 */
import type { Clock } from "../../proto/support/clock.ts";
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
  /** Slots of the limiter that low-priority keys leave for the others (default 0). */
  lowPriorityReserve?: number;
}

interface Waiter {
  resolve: () => void;
  reject: (e: Error) => void;
  signal?: AbortSignal;
  onAbort?: () => void;
}

/** Keys in turn order: the head is served next, then moved to the back if it still waits. */
type Ring = Map<string, Waiter[]>;

export class FairQueue {
  readonly #normal: Ring = new Map();
  readonly #low: Ring = new Map();
  #total = 0;
  #pumping = false;
  #wake: (() => void) | undefined;
  #closed = false;

  constructor(
    readonly opts: FairQueueOptions,
    private readonly limiter: RateLimiter,
    private readonly clock: Clock,
  ) {
    if (!(opts.maxPerKey >= 1) || !(opts.maxTotal >= 1) || !((opts.lowPriorityReserve ?? 0) >= 0)) {
      throw new Error(
        `fair queue: need maxPerKey >= 1, maxTotal >= 1, lowPriorityReserve >= 0, got ${
          JSON.stringify(opts)
        }`,
      );
    }
  }

  /** Waiters across all keys. */
  get queued(): number {
    return this.#total;
  }

  /** Keys with at least one waiter. */
  get keys(): number {
    return this.#normal.size + this.#low.size;
  }

  #slotsNeeded(low: boolean): number {
    return low ? 1 + (this.opts.lowPriorityReserve ?? 0) : 1;
  }

  /**
   * Resolves when `key`'s turn comes and the limiter has a slot; rejects at once with
   * QueueFullError when `key`'s queue or all queues are full, or with the signal's reason.
   */
  acquire(key: string, signal?: AbortSignal, lowPriority = false): Promise<void> {
    if (this.#closed) return Promise.reject(new RateLimitedError("queue closed"));
    if (signal?.aborted) return Promise.reject(signal.reason ?? new Error("aborted"));
    // Nobody this request would overtake is waiting, and a slot is free for its class.
    const ahead = lowPriority ? this.#total : this.#normal.size;
    if (
      ahead === 0 && this.limiter.msUntil(this.#slotsNeeded(lowPriority)) === 0 && this.limiter.tryAcquire()
    ) {
      return Promise.resolve();
    }
    const ring = lowPriority ? this.#low : this.#normal;
    const q = ring.get(key);
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
          this.#remove(ring, key, w);
          reject(signal.reason ?? new Error("aborted"));
        };
        signal.addEventListener("abort", w.onAbort, { once: true });
      }
      if (q) q.push(w);
      else ring.set(key, [w]);
      this.#total++;
      // A sleeping pump may be waiting for the low-priority reserve; this one may need less.
      if (!lowPriority) this.#wake?.();
      void this.#pump();
    });
  }

  #remove(ring: Ring, key: string, w: Waiter): void {
    const q = ring.get(key);
    const i = q?.indexOf(w) ?? -1;
    if (i < 0) return;
    q!.splice(i, 1);
    this.#total--;
    if (q!.length === 0) ring.delete(key);
  }

  /** The head waiter of the key whose turn it is in `ring`; that key goes to the back. */
  #next(ring: Ring): Waiter | undefined {
    const head = ring.entries().next();
    if (head.done) return undefined;
    const [key, q] = head.value;
    ring.delete(key);
    const w = q.shift()!;
    if (q.length > 0) ring.set(key, q);
    this.#total--;
    if (w.onAbort) w.signal!.removeEventListener("abort", w.onAbort);
    return w;
  }

  #sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const cancel = this.clock.after(ms, () => {
        this.#wake = undefined;
        resolve();
      });
      this.#wake = () => {
        cancel();
        this.#wake = undefined;
        resolve();
      };
    });
  }

  /** One loop at a time waits for limiter slots and hands each to the next key in turn. */
  async #pump(): Promise<void> {
    if (this.#pumping) return;
    this.#pumping = true;
    try {
      while (this.#total > 0 && !this.#closed) {
        const low = this.#normal.size === 0;
        const waitMs = this.limiter.msUntil(this.#slotsNeeded(low));
        if (waitMs > 0 || !this.limiter.tryAcquire()) {
          await this.#sleep(Math.max(1, waitMs));
          continue;
        }
        const w = this.#next(low ? this.#low : this.#normal);
        if (w) w.resolve();
        else this.limiter.refund();
      }
    } finally {
      this.#pumping = false;
    }
  }

  /** Refuses every waiter (used at shutdown). */
  close(): void {
    this.#closed = true;
    this.#wake?.();
    for (const ring of [this.#normal, this.#low]) {
      for (const [key, q] of [...ring]) {
        for (const w of [...q]) {
          this.#remove(ring, key, w);
          if (w.onAbort) w.signal!.removeEventListener("abort", w.onAbort);
          w.reject(new RateLimitedError("queue closed"));
        }
      }
    }
  }
}
