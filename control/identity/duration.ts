/** Parses durations as Linkerd writes them: `10s`, `500ms`, `24h`, `1d`, and Go's `24h0m0s`. */
const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

export function parseDuration(text: string, what: string): number {
  const s = text.trim();
  if (s === "0") return 0;
  const re = /(\d+(?:\.\d+)?)(ms|s|m|h|d)/gy;
  let total = 0;
  let pos = 0;
  for (let m = re.exec(s); m; m = re.exec(s)) {
    total += Number(m[1]) * UNIT_MS[m[2]];
    pos = re.lastIndex;
  }
  if (pos === 0 || pos !== s.length) {
    throw new Error(`${what}: "${text}" is not a duration (like 20s, 500ms, 24h, 24h0m0s, 90d)`);
  }
  return total;
}

export function formatDuration(ms: number): string {
  if (ms % UNIT_MS.d === 0 && ms >= UNIT_MS.d) return `${ms / UNIT_MS.d}d`;
  if (ms % UNIT_MS.h === 0 && ms >= UNIT_MS.h) return `${ms / UNIT_MS.h}h`;
  if (ms % UNIT_MS.m === 0 && ms >= UNIT_MS.m) return `${ms / UNIT_MS.m}m`;
  if (ms % 1000 === 0) return `${ms / 1000}s`;
  return `${ms}ms`;
}
