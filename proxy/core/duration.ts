/** `google.protobuf.Duration` → milliseconds, as route, balancer and retry configs need it. */
import type { Duration } from "../../proto/gen_messages/google/protobuf/duration.ts";

/** Milliseconds (fractional) of `d`, or undefined when unset. Negative durations are errors. */
export function durationMs(d: Duration | undefined, what: string): number | undefined {
  if (d === undefined) return undefined;
  const ms = Number(d.seconds) * 1000 + d.nanos / 1e6;
  if (!Number.isFinite(ms) || ms < 0) {
    throw new RangeError(`${what}: invalid duration ${d.seconds}s ${d.nanos}ns`);
  }
  return ms;
}

/** A Duration for `ms` milliseconds (tests and defaults). */
export function msDuration(ms: number): Duration {
  const seconds = Math.floor(ms / 1000);
  return { seconds: BigInt(seconds), nanos: Math.round((ms - seconds * 1000) * 1e6) };
}
