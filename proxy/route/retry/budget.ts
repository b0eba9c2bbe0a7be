/**
 * Retry budget with Linkerd's (tower's) semantics: every request deposits `retry_ratio` of a
 * retry, every retry withdraws one, deposits and withdrawals expire after `ttl`, and a reserve of
 * `min_retries_per_second × ttl` retries is always available on top. So over any ttl window,
 * retries ≤ min_retries_per_second·ttl + retry_ratio·requests.
 *
 * Kept in integer thousandths of a retry over ten ttl/10 slots (deposits expire 0.9–1 ttl after
 * they were made), so there is no float drift and no per-request allocation.
 */
import type { RetryBudget as ProtoRetryBudget } from "../../../proto/gen_messages/destination.ts";
import type { Clock } from "../../../proto/support/clock.ts";
import { durationMs } from "../../core/duration.ts";

export interface RetryBudgetConfig {
  ttlMs: number;
  minRetriesPerSecond: number;
  retryRatio: number;
}

/** Linkerd's default when a service has no ServiceProfile: 20 %, 10/s, 10 s. */
export const DEFAULT_RETRY_BUDGET: Readonly<RetryBudgetConfig> = {
  ttlMs: 10_000,
  minRetriesPerSecond: 10,
  retryRatio: 0.2,
};

const UNIT = 1000;
const SLOTS = 10;

export class RetryBudget {
  readonly config: Readonly<RetryBudgetConfig>;
  readonly #clock: Clock;
  readonly #deposit: number;
  readonly #reserve: number;
  readonly #slotMs: number;
  readonly #slots = new Array<number>(SLOTS).fill(0);
  #current: number;

  constructor(config: RetryBudgetConfig, clock: Clock) {
    if (!(config.ttlMs >= 1_000 && config.ttlMs <= 60_000)) {
      throw new RangeError(`retry budget ttl ${config.ttlMs} ms is not within 1 s … 60 s`);
    }
    if (!(config.retryRatio >= 0 && config.retryRatio <= 1000)) {
      throw new RangeError(`retry budget ratio ${config.retryRatio} is not within 0 … 1000`);
    }
    if (!(config.minRetriesPerSecond >= 0) || config.minRetriesPerSecond > 2 ** 31) {
      throw new RangeError(`retry budget min_retries_per_second ${config.minRetriesPerSecond} is invalid`);
    }
    this.config = config;
    this.#clock = clock;
    this.#deposit = Math.round(config.retryRatio * UNIT);
    this.#reserve = Math.round(config.minRetriesPerSecond * config.ttlMs);
    this.#slotMs = config.ttlMs / SLOTS;
    this.#current = Math.floor(clock.now() / this.#slotMs);
  }

  /** Records a request (call once per original request, not per retry). */
  deposit(): void {
    this.#slots[this.#rotate()] += this.#deposit;
  }

  /** Takes one retry from the budget; false when the budget is exhausted (then do not retry). */
  withdraw(): boolean {
    const i = this.#rotate();
    if (this.#sum() < UNIT) return false;
    this.#slots[i] -= UNIT;
    return true;
  }

  /** Whole retries available now. */
  get available(): number {
    this.#rotate();
    return Math.max(0, Math.floor(this.#sum() / UNIT));
  }

  #sum(): number {
    let s = this.#reserve;
    for (const v of this.#slots) s += v;
    return s;
  }

  #rotate(): number {
    const slot = Math.floor(this.#clock.now() / this.#slotMs);
    if (slot > this.#current) {
      const n = Math.min(slot - this.#current, SLOTS);
      for (let k = 1; k <= n; k++) this.#slots[(this.#current + k) % SLOTS] = 0;
      this.#current = slot;
    }
    return this.#current % SLOTS;
  }
}

/** A ServiceProfile's budget, validated as Linkerd's proxy does (ttl 1–60 s, ratio 0–1000). */
export function retryBudgetConfig(b: ProtoRetryBudget | undefined): RetryBudgetConfig | undefined {
  if (!b) return undefined;
  const ttlMs = durationMs(b.ttl, "retry_budget.ttl");
  if (ttlMs === undefined) throw new RangeError("retry_budget has no ttl");
  if (!Number.isFinite(b.retryRatio)) {
    throw new RangeError(`retry_budget ratio ${b.retryRatio} is not finite`);
  }
  return { ttlMs, minRetriesPerSecond: b.minRetriesPerSecond, retryRatio: b.retryRatio };
}
