/**
 * Prometheus text format: parse a scrape into samples, select by name and labels, sum, and take quantiles of
 * histograms (from bucket counts, as Prometheus' histogram_quantile does: linear inside the bucket).
 */

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

const LINE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+\d+)?$/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"\s*,?\s*/y;

function unescape(v: string): string {
  return v.replace(/\\(.)/g, (_, c: string) => (c === "n" ? "\n" : c));
}

/** Parses the text exposition format; throws naming the line that is not a sample. */
export function parseMetrics(text: string): Sample[] {
  const out: Sample[] = [];
  for (const raw of text.split("\n")) {
    const line = raw.trim();
    if (line === "" || line.startsWith("#")) continue;
    const m = line.match(LINE);
    if (!m) throw new Error(`not a Prometheus sample line: ${JSON.stringify(line)}`);
    const labels: Record<string, string> = {};
    if (m[2]) {
      LABEL.lastIndex = 0;
      while (LABEL.lastIndex < m[2].length) {
        const start = LABEL.lastIndex;
        const l = LABEL.exec(m[2]);
        if (!l) throw new Error(`bad labels at ${start} in ${JSON.stringify(line)}`);
        labels[l[1]] = unescape(l[2]);
      }
    }
    const v = m[3] === "+Inf" ? Infinity : m[3] === "-Inf" ? -Infinity : Number(m[3]);
    out.push({ name: m[1], labels, value: v });
  }
  return out;
}

/** Label matcher: a string must equal; a function must accept the value (undefined when absent). */
export type Match = Record<string, string | ((v: string | undefined) => boolean)>;

export function matches(s: Sample, match: Match): boolean {
  for (const [k, want] of Object.entries(match)) {
    const got = s.labels[k];
    if (typeof want === "string" ? got !== want : !want(got)) return false;
  }
  return true;
}

export function select(samples: Sample[], name: string, match: Match = {}): Sample[] {
  return samples.filter((s) => s.name === name && matches(s, match));
}

export function sum(samples: Sample[], name: string, match: Match = {}): number {
  return select(samples, name, match).reduce((a, s) => a + s.value, 0);
}

/** Names of the metric families present (without _bucket/_sum/_count suffix folding). */
export function names(samples: Sample[]): Set<string> {
  return new Set(samples.map((s) => s.name));
}

/** Cumulative bucket counts by upper bound, summed over the selected series. */
export function buckets(samples: Sample[], histogram: string, match: Match = {}): Map<number, number> {
  const by = new Map<number, number>();
  for (const s of select(samples, `${histogram}_bucket`, match)) {
    const le = s.labels.le === "+Inf" ? Infinity : Number(s.labels.le);
    by.set(le, (by.get(le) ?? 0) + s.value);
  }
  return by;
}

/** Bucket counts of `after` minus `before` (counters reset → the after value alone). */
export function bucketDelta(after: Map<number, number>, before: Map<number, number>): Map<number, number> {
  const out = new Map<number, number>();
  for (const [le, v] of after) {
    const b = before.get(le) ?? 0;
    out.set(le, v >= b ? v - b : v);
  }
  return out;
}

/**
 * The q-quantile (0..1) from cumulative buckets; undefined when there are no observations. A quantile landing
 * in the +Inf bucket returns the largest finite bound (the most that can be said).
 */
export function quantile(q: number, cumulative: Map<number, number>): number | undefined {
  const bounds = [...cumulative.keys()].sort((a, b) => a - b);
  if (bounds.length === 0) return undefined;
  const total = cumulative.get(bounds[bounds.length - 1]) ?? 0;
  if (total <= 0) return undefined;
  const rank = q * total;
  let prevBound = 0;
  let prevCount = 0;
  for (const le of bounds) {
    const c = cumulative.get(le) ?? 0;
    if (c >= rank) {
      if (le === Infinity) return prevBound;
      if (c === prevCount) return le;
      return prevBound + (le - prevBound) * ((rank - prevCount) / (c - prevCount));
    }
    prevBound = le;
    prevCount = c;
  }
  return prevBound;
}

/** GETs http://ip:port/metrics with a timeout and parses it. */
export async function scrape(ip: string, port: number, timeoutMs = 5000): Promise<Sample[]> {
  const host = ip.includes(":") ? `[${ip}]` : ip;
  const res = await fetch(`http://${host}:${port}/metrics`, { signal: AbortSignal.timeout(timeoutMs) });
  const text = await res.text();
  if (!res.ok) throw new Error(`GET http://${host}:${port}/metrics: ${res.status} ${text.slice(0, 200)}`);
  return parseMetrics(text);
}
