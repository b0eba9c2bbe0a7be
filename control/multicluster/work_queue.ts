/**
 * A bounded, de-duplicating work queue with one worker: watch handlers only `add` keys (never
 * block), the worker reconciles one key at a time, a failed key comes back after jittered
 * exponential backoff up to `maxRetries` times (then it waits for the next resync). When the
 * queue is full a key is dropped and `onOverflow` runs once the queue drains, so the owner can
 * re-enqueue everything (a resync) instead of losing the change.
 */

export interface WorkQueueOptions {
  process: (key: string) => Promise<void>;
  maxSize: number;
  maxRetries: number;
  backoff: { initialMs: number; maxMs: number };
  onOverflow?: () => void;
  onError?: (key: string, error: unknown, attempt: number, willRetry: boolean) => void;
}

export class WorkQueue {
  readonly #opts: WorkQueueOptions;
  readonly #pending = new Set<string>();
  readonly #attempts = new Map<string, number>();
  readonly #timers = new Map<string, ReturnType<typeof setTimeout>>();
  #wake: (() => void) | undefined;
  #overflowed = false;
  #busy = false;
  dropped = 0;

  constructor(opts: WorkQueueOptions) {
    this.#opts = opts;
  }

  get depth(): number {
    return this.#pending.size;
  }

  /** True when nothing is queued, being processed or waiting for a retry. */
  idle(): boolean {
    return this.#pending.size === 0 && !this.#busy && this.#timers.size === 0;
  }

  /** True when nothing is queued or being processed (retries may still be waiting). */
  drained(): boolean {
    return this.#pending.size === 0 && !this.#busy;
  }

  add(key: string): void {
    if (this.#pending.has(key)) return;
    if (this.#pending.size >= this.#opts.maxSize) {
      this.dropped++;
      this.#overflowed = true;
      return;
    }
    this.#pending.add(key);
    this.#wake?.();
  }

  async run(signal: AbortSignal): Promise<void> {
    const onAbort = () => this.#wake?.();
    signal.addEventListener("abort", onAbort);
    try {
      while (!signal.aborted) {
        const next = this.#pending.values().next();
        if (next.done) {
          if (this.#overflowed) {
            this.#overflowed = false;
            this.#opts.onOverflow?.();
            continue;
          }
          await new Promise<void>((r) => this.#wake = r);
          this.#wake = undefined;
          continue;
        }
        const key = next.value;
        this.#pending.delete(key);
        this.#busy = true;
        try {
          await this.#opts.process(key);
          this.#attempts.delete(key);
        } catch (e) {
          if (signal.aborted) break;
          const attempt = (this.#attempts.get(key) ?? 0) + 1;
          const retry = attempt <= this.#opts.maxRetries;
          this.#opts.onError?.(key, e, attempt, retry);
          if (retry) {
            this.#attempts.set(key, attempt);
            this.#later(key, attempt);
          } else this.#attempts.delete(key);
        } finally {
          this.#busy = false;
        }
      }
    } finally {
      signal.removeEventListener("abort", onAbort);
      for (const t of this.#timers.values()) clearTimeout(t);
      this.#timers.clear();
    }
  }

  #later(key: string, attempt: number): void {
    const { initialMs, maxMs } = this.#opts.backoff;
    const base = Math.min(maxMs, initialMs * 2 ** (attempt - 1));
    const delay = base / 2 + Math.random() * base / 2;
    clearTimeout(this.#timers.get(key));
    this.#timers.set(
      key,
      setTimeout(() => {
        this.#timers.delete(key);
        this.add(key);
      }, delay),
    );
  }
}
