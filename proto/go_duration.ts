/**
 * Durations written as text, in Go's `time.ParseDuration` grammar, which Kubernetes and Linkerd use
 * for annotations, CRD fields (ServiceProfile timeouts, Gateway API route timeouts) and flags:
 * an optional sign, then one or more `<number><unit>` with a decimal number (`1`, `1.5`, `.5`,
 * `1.`) and a unit of ns, us (µs, μs), ms, s, m or h: `300ms`, `1.5s`, `1h2m3.5s`. A bare number
 * is refused except `0`; there is no day unit. Values are nanoseconds in a signed 64-bit range,
 * rounded as Go rounds them. Every refusal carries the same message shape (DurationError).
 */

export class DurationError extends Error {
  override name = "DurationError";
  constructor(readonly what: string, readonly text: string, readonly reason: string) {
    super(`${what}: ${JSON.stringify(text)} is not a duration (${reason}); want e.g. 300ms, 1.5s or 1h30m`);
  }
}

const UNIT_NS: Record<string, bigint> = {
  ns: 1n,
  us: 1_000n,
  "µs": 1_000n, // U+00B5 micro sign
  "μs": 1_000n, // U+03BC Greek small mu
  ms: 1_000_000n,
  s: 1_000_000_000n,
  m: 60_000_000_000n,
  h: 3_600_000_000_000n,
};
const LIMIT = 1n << 63n;

function isDigit(c: string | undefined): boolean {
  return c !== undefined && c >= "0" && c <= "9";
}

/** Parses to signed nanoseconds exactly as Go does (fractions go through float64, as in Go). */
export function parseGoDuration(text: string, what = "duration"): bigint {
  const fail = (reason: string): never => {
    throw new DurationError(what, text, reason);
  };
  let s = text;
  let neg = false;
  if (s[0] === "-" || s[0] === "+") {
    neg = s[0] === "-";
    s = s.slice(1);
  }
  if (s === "0") return 0n;
  if (s === "") fail("empty");
  let total = 0n;
  let i = 0;
  while (i < s.length) {
    if (!(s[i] === "." || isDigit(s[i]))) fail(`unexpected ${JSON.stringify(s[i])}`);
    // Integer part; more than 2^63 is out of range.
    const intStart = i;
    let v = 0n;
    while (isDigit(s[i])) {
      v = v * 10n + BigInt(s.charCodeAt(i) - 48);
      if (v > LIMIT) fail("out of range");
      i++;
    }
    const pre = i > intStart;
    // Fraction: digits past what fits in 63 bits are dropped, as Go drops them.
    let f = 0n;
    let scale = 1;
    let post = false;
    if (s[i] === ".") {
      i++;
      const fracStart = i;
      let overflow = false;
      while (isDigit(s[i])) {
        if (!overflow) {
          const y = f * 10n + BigInt(s.charCodeAt(i) - 48);
          if (f > (LIMIT - 1n) / 10n || y > LIMIT) overflow = true;
          else {
            f = y;
            scale *= 10;
          }
        }
        i++;
      }
      post = i > fracStart;
    }
    if (!pre && !post) fail("a number has no digits");
    const unitStart = i;
    while (i < s.length && s[i] !== "." && !isDigit(s[i])) i++;
    if (i === unitStart) fail("a number has no unit");
    const u = s.slice(unitStart, i);
    const unit = UNIT_NS[u];
    if (unit === undefined) {
      fail(
        `unknown unit ${JSON.stringify(u)}${
          u === "d" ? ": Go durations have no days, write 24h for 1d" : ""
        }`,
      );
    }
    if (v > LIMIT / unit) fail("out of range");
    v *= unit;
    if (f > 0n) {
      // Go: v += uint64(float64(f) * (float64(unit) / scale)), truncated toward zero.
      v += BigInt(Math.trunc(Number(f) * (Number(unit) / scale)));
      if (v > LIMIT) fail("out of range");
    }
    total += v;
    if (total > LIMIT) fail("out of range");
  }
  if (neg) return -total;
  if (total > LIMIT - 1n) fail("out of range");
  return total;
}

/** A non-negative duration in milliseconds (fractions kept): the form timeouts and lifetimes take. */
export function parseDurationMs(text: string, what = "duration"): number {
  const ns = parseGoDuration(text, what);
  if (ns < 0n) throw new DurationError(what, text, "negative");
  return Number(ns) / 1e6;
}

/** Milliseconds as text the parser reads back: `1h30m`, `1440h`, `1.5s`, `250ms`, `0s`. */
export function formatDuration(ms: number): string {
  if (ms === 0) return "0s";
  const sign = ms < 0 ? "-" : "";
  let rest = Math.abs(ms);
  if (rest < 1000) return `${sign}${rest}ms`;
  const h = Math.floor(rest / 3_600_000);
  rest -= h * 3_600_000;
  const m = Math.floor(rest / 60_000);
  rest -= m * 60_000;
  const s = rest / 1000;
  return sign + (h ? `${h}h` : "") + (m ? `${m}m` : "") + (s ? `${Number(s.toFixed(6))}s` : "");
}
