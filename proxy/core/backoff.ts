/** Jittered exponential backoff for control-plane reconnects. */
import type { Backoff } from "../config/config.ts";

/** Delay before reconnect attempt `attempt` (0-based): min·2^attempt capped at max, plus up to jitter·delay. */
export function backoffDelay(b: Backoff, attempt: number, random: () => number = Math.random): number {
  const base = Math.min(b.maxMs, b.minMs * 2 ** Math.min(attempt, 30));
  return Math.round(base * (1 + b.jitter * random()));
}
