/**
 * Durations as users write them in annotations and Gateway API fields (`10s`, `1m30s`, `250ms`,
 * `1h`), and as the proxy API carries them (google.protobuf.Duration).
 */
import type { Duration } from "../../proto/gen/google/protobuf/duration.ts";

const UNIT_MS: Record<string, number> = {
  h: 3_600_000,
  m: 60_000,
  s: 1_000,
  ms: 1,
  us: 0.001,
  µs: 0.001,
  ns: 1e-6,
};
const PART = /([0-9]+(?:\.[0-9]+)?)(h|ms|m|s|us|µs|ns)/y;

/** Parses a duration into milliseconds; throws naming the text when it is not one. */
export function parseDurationMs(text: string): number {
  const t = text.trim();
  if (t === "0") return 0;
  if (t === "") throw new Error(`"${text}" is not a duration: empty`);
  let ms = 0;
  PART.lastIndex = 0;
  let at = 0;
  while (at < t.length) {
    PART.lastIndex = at;
    const m = PART.exec(t);
    if (!m) throw new Error(`"${text}" is not a duration: want e.g. "10s", "1m30s", "250ms"`);
    ms += Number(m[1]) * UNIT_MS[m[2]];
    at = PART.lastIndex;
  }
  return ms;
}

export function durationFromMs(ms: number): Duration {
  const whole = Math.floor(ms / 1000);
  return { seconds: BigInt(whole), nanos: Math.round((ms - whole * 1000) * 1e6) };
}

export function durationMs(d: Duration | undefined): number | undefined {
  return d === undefined ? undefined : Number(d.seconds) * 1000 + d.nanos / 1e6;
}
