/** Median and range of repeated measurements, as the benchmarks print them. */

export interface Spread {
  median: number;
  min: number;
  max: number;
  n: number;
}

/** NaN values (a run that measured nothing) are left out; an empty input is an error naming what was measured. */
export function spread(what: string, values: readonly number[]): Spread {
  const v = values.filter((x) => !Number.isNaN(x)).sort((a, b) => a - b);
  if (v.length === 0) throw new Error(`no measurements of ${what}`);
  const mid = Math.floor(v.length / 2);
  const median = v.length % 2 === 1 ? v[mid] : (v[mid - 1] + v[mid]) / 2;
  return { median, min: v[0], max: v[v.length - 1], n: v.length };
}

/** "412 ms (380–455, n=5)" with `digits` decimals and the unit (none for a count). */
export function formatSpread(s: Spread, unit: string, digits = 0): string {
  const f = (x: number) => x.toFixed(digits);
  const u = unit ? ` ${unit}` : "";
  return `${f(s.median)}${u} (${f(s.min)}–${f(s.max)}, n=${s.n})`;
}
