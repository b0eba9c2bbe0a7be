/**
 * Durations as the proxy API carries them (google.protobuf.Duration). Text durations (annotations,
 * Gateway API fields) are parsed with the shared Go grammar in proto/go_duration.ts.
 */
import type { Duration } from "../../proto/gen/google/protobuf/duration.ts";

export function durationFromMs(ms: number): Duration {
  const whole = Math.floor(ms / 1000);
  return { seconds: BigInt(whole), nanos: Math.round((ms - whole * 1000) * 1e6) };
}

export function durationMs(d: Duration | undefined): number | undefined {
  return d === undefined ? undefined : Number(d.seconds) * 1000 + d.nanos / 1e6;
}
