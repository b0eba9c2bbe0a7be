/**
 * Balancer options from the outbound policy: a `Backend`'s peak-EWMA parameters and queue, and the
 * protocol's `FailureAccrual`. Missing optional values take Linkerd's defaults.
 */
import type { Backend, ExponentialBackoff, FailureAccrual } from "../../proto/gen_messages/outbound.ts";
import type { Backoff } from "../config/config.ts";
import { durationMs } from "../core/duration.ts";
import { DEFAULT_QUEUE, type FailureAccrualConfig, type QueueConfig } from "./balancer.ts";
import { DEFAULT_PEAK_EWMA, type PeakEwmaConfig } from "./peak_ewma.ts";

/** Linkerd's failure-accrual annotation defaults: 1 s … 1 min, jitter 0.5. */
export const DEFAULT_ACCRUAL_BACKOFF: Readonly<Backoff> = { minMs: 1_000, maxMs: 60_000, jitter: 0.5 };

export function peakEwmaConfig(b: Backend): PeakEwmaConfig {
  const load = b.kind?.$case === "balancer" ? b.kind.value.load : undefined;
  if (!load) return DEFAULT_PEAK_EWMA;
  const v = load.value;
  return {
    defaultRttMs: durationMs(v.defaultRtt, "backend peak_ewma.default_rtt") ?? DEFAULT_PEAK_EWMA.defaultRttMs,
    decayMs: Math.max(1, durationMs(v.decay, "backend peak_ewma.decay") ?? DEFAULT_PEAK_EWMA.decayMs),
  };
}

export function queueConfig(b: Backend): QueueConfig {
  const q = b.queue;
  if (!q) return DEFAULT_QUEUE;
  return {
    capacity: q.capacity,
    failfastMs: durationMs(q.failfastTimeout, "backend queue.failfast_timeout") ?? DEFAULT_QUEUE.failfastMs,
  };
}

export function backoffConfig(b: ExponentialBackoff | undefined, fallback: Backoff, what: string): Backoff {
  if (!b) return fallback;
  const minMs = durationMs(b.minBackoff, `${what}.min_backoff`) ?? fallback.minMs;
  const maxMs = durationMs(b.maxBackoff, `${what}.max_backoff`) ?? fallback.maxMs;
  if (maxMs < minMs) {
    throw new RangeError(`${what}: max_backoff ${maxMs} ms is below min_backoff ${minMs} ms`);
  }
  const jitter = b.jitterRatio;
  if (!(jitter >= 0 && jitter <= 100)) {
    throw new RangeError(`${what}: jitter_ratio ${jitter} is not in [0, 100]`);
  }
  return { minMs, maxMs, jitter };
}

/**
 * The consecutive-failures breaker of a protocol's FailureAccrual, or undefined when there is none.
 * `unified` uses its consecutive-failure part only (its success-rate part is not implemented).
 */
export function failureAccrualConfig(fa: FailureAccrual | undefined): FailureAccrualConfig | undefined {
  const k = fa?.kind;
  if (!k) return undefined;
  const minReady = fa!.ejection?.minReadyEndpoints ?? 0;
  if (k.$case === "consecutiveFailures") {
    const maxFailures = k.value.maxFailures;
    if (maxFailures < 1) return undefined;
    return {
      maxFailures,
      backoff: backoffConfig(k.value.backoff, DEFAULT_ACCRUAL_BACKOFF, "failure_accrual.backoff"),
      minReady,
    };
  }
  const maxFailures = k.value.maxConsecutiveFailures;
  if (maxFailures < 1) return undefined;
  return {
    maxFailures,
    backoff: backoffConfig(k.value.backoff, DEFAULT_ACCRUAL_BACKOFF, "failure_accrual.backoff"),
    minReady,
  };
}
