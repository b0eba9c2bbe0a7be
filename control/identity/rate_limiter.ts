/**
 * Token-bucket limiter for calls to the API server, with a bounded FIFO of waiters: when
 * thousands of pods start at once, callers queue up to `maxQueued` and the rest are refused at
 * once rather than piling up memory and latency.
 */
import type { Clock } from "../../proto/support/clock.ts";

export class RateLimitedError extends Error {
  override name = "RateLimitedError";
}

export interface RateLimiterOptions {
  /** Sustained rate, calls per second. */
  ratePerSecond: number;
  /** Calls allowed at once after an idle period. */
  burst: number;
  maxQueued: number;
}

interface Waiter {
  resolve: () => void;
  reject: (e: Error) => void;
  onAbort?: () => void;
  signal?: AbortSignal;
}

export class RateLimiter {
  #tokens: number;
  #last: number;
  #queue: Waiter[] = [];
  #cancelTimer: (() => void) | undefined;

  constructor(readonly opts: RateLimiterOptions, private readonly clock: Clock) {
    if (!(opts.ratePerSecond > 0) || !(opts.burst >= 1)) {
      throw new Error(`rate limiter: need ratePerSecond > 0 and burst >= 1, got ${JSON.stringify(opts)}`);
    }
    this.#tokens = opts.burst;
    this.#last = clock.now();
  }

  get queued(): number {
    return this.#queue.length;
  }

  #refill(): void {
    const now = this.clock.now();
    this.#tokens = Math.min(
      this.opts.burst,
      this.#tokens + ((now - this.#last) * this.opts.ratePerSecond) / 1000,
    );
    this.#last = now;
  }

  /** Takes a slot if one is free now and nobody is waiting; never queues. */
  tryAcquire(): boolean {
    this.#refill();
    if (this.#queue.length > 0 || this.#tokens < 1) return false;
    this.#tokens -= 1;
    return true;
  }

  /** Milliseconds until `n` slots are free (0 when they are now), for callers that schedule themselves. */
  msUntil(n: number): number {
    this.#refill();
    if (this.#tokens >= n) return 0;
    return Math.max(1, Math.ceil(((n - this.#tokens) * 1000) / this.opts.ratePerSecond));
  }

  /** Gives back a slot taken but not used (its caller went away meanwhile). */
  refund(): void {
    this.#tokens = Math.min(this.opts.burst, this.#tokens + 1);
  }

  /** Resolves when a call may proceed; rejects with RateLimitedError when the queue is full. */
  acquire(signal?: AbortSignal): Promise<void> {
    this.#refill();
    if (this.#queue.length === 0 && this.#tokens >= 1) {
      this.#tokens -= 1;
      return Promise.resolve();
    }
    if (this.#queue.length >= this.opts.maxQueued) {
      return Promise.reject(
        new RateLimitedError(`${this.#queue.length} TokenReviews already waiting for the rate limit`),
      );
    }
    return new Promise<void>((resolve, reject) => {
      const w: Waiter = { resolve, reject, signal };
      if (signal) {
        w.onAbort = () => {
          const i = this.#queue.indexOf(w);
          if (i >= 0) this.#queue.splice(i, 1);
          reject(signal.reason ?? new Error("aborted"));
        };
        signal.addEventListener("abort", w.onAbort, { once: true });
      }
      this.#queue.push(w);
      this.#schedule();
    });
  }

  #schedule(): void {
    if (this.#cancelTimer || this.#queue.length === 0) return;
    const waitMs = Math.max(1, Math.ceil(((1 - this.#tokens) * 1000) / this.opts.ratePerSecond));
    this.#cancelTimer = this.clock.after(waitMs, () => {
      this.#cancelTimer = undefined;
      this.#refill();
      while (this.#queue.length > 0 && this.#tokens >= 1) {
        this.#tokens -= 1;
        const w = this.#queue.shift()!;
        if (w.onAbort) w.signal!.removeEventListener("abort", w.onAbort);
        w.resolve();
      }
      this.#schedule();
    });
  }

  /** Refuses every waiter (used at shutdown). */
  close(): void {
    this.#cancelTimer?.();
    this.#cancelTimer = undefined;
    for (const w of this.#queue.splice(0)) w.reject(new RateLimitedError("rate limiter closed"));
  }
}
