/**
 * The data behind the workload page's charts, shaped from Prometheus range answers. The queries are
 * `weft stat`'s (cli/stat_plan.ts) evaluated at every step of the window: `increase(response_total[rw])` by
 * classification gives RPS and success rate, `histogram_quantile` gives p50/p95/p99. Pure.
 *
 * Every series is put on one grid (start + i·step); a step with no sample is `null`, a gap the chart leaves
 * open instead of drawing a line through a time nothing was measured.
 */
import type { PromRangeSeries } from "../../cli/prometheus.ts";

/** A chart window the page offers: its length, step and the rate window each point is taken over. */
export interface ChartWindow {
  name: string;
  seconds: number;
  step: number;
  /** At least three scrapes (10 s apart) so one late scrape does not empty a point. */
  rateWindow: number;
}

export const CHART_WINDOWS: readonly ChartWindow[] = [
  { name: "5m", seconds: 300, step: 10, rateWindow: 30 },
  { name: "15m", seconds: 900, step: 15, rateWindow: 30 },
  { name: "1h", seconds: 3600, step: 30, rateWindow: 60 },
  { name: "6h", seconds: 21600, step: 120, rateWindow: 240 },
];

export interface Grid {
  start: number;
  step: number;
  count: number;
}

/** The grid ending at `now` (rounded down to the step so successive loads line up). */
export function gridFor(w: ChartWindow, nowS: number): Grid {
  const end = Math.floor(nowS / w.step) * w.step;
  return { start: end - w.seconds, step: w.step, count: w.seconds / w.step + 1 };
}

/** What every chart answer starts with: the window's name, the grid and the rate window each point covers. */
export function gridHeader(w: ChartWindow, g: Grid) {
  return { window: w.name, start: g.start, step: g.step, count: g.count, rateWindow: w.rateWindow };
}

export function gridEnd(g: Grid): number {
  return g.start + (g.count - 1) * g.step;
}

/** One series' values on the grid: null where it has no sample or a value that is not a finite number. */
export function toPoints(values: readonly [number, number][], g: Grid): (number | null)[] {
  const out: (number | null)[] = new Array(g.count).fill(null);
  for (const [t, v] of values) {
    const i = Math.round((t - g.start) / g.step);
    if (i < 0 || i >= g.count || Math.abs(t - (g.start + i * g.step)) >= g.step / 2) continue;
    out[i] = Number.isFinite(v) ? v : null;
  }
  return out;
}

/** Several series summed per step; a step is null only when none of them has a value there. */
export function sumPoints(series: readonly (readonly (number | null)[])[], count: number): (number | null)[] {
  const out: (number | null)[] = new Array(count).fill(null);
  for (const s of series) {
    for (let i = 0; i < count; i++) {
      const v = s[i];
      if (v !== null && v !== undefined) out[i] = (out[i] ?? 0) + v;
    }
  }
  return out;
}

export interface TrafficPoints {
  rps: (number | null)[];
  /** success / (success + failure); null where nothing was answered. */
  success: (number | null)[];
}

/**
 * RPS and success rate from `increase(response_total[rw])` series split by classification (other labels,
 * such as tls, are summed away). RPS is the increase over the rate window divided by its length.
 */
export function trafficPoints(
  series: readonly PromRangeSeries[],
  g: Grid,
  rateWindowS: number,
): TrafficPoints {
  const ok = sumPoints(
    series.filter((s) => s.metric.classification === "success").map((s) => toPoints(s.values, g)),
    g.count,
  );
  const bad = sumPoints(
    series.filter((s) => s.metric.classification === "failure").map((s) => toPoints(s.values, g)),
    g.count,
  );
  const rps: (number | null)[] = [];
  const success: (number | null)[] = [];
  for (let i = 0; i < g.count; i++) {
    if (ok[i] === null && bad[i] === null) {
      rps.push(null);
      success.push(null);
      continue;
    }
    const total = (ok[i] ?? 0) + (bad[i] ?? 0);
    rps.push(total / rateWindowS);
    success.push(total > 0 ? (ok[i] ?? 0) / total : null);
  }
  return { rps, success };
}

/**
 * A latency quantile's points (ms). The query groups by the resource, so one series is expected; with
 * several (a resource's series split by a label the query kept) the highest is shown — the chart is a
 * bound, never an average of quantiles, which would mean nothing. `+Inf` (every request in the top
 * bucket) is a gap with the rest: there is no number to draw.
 */
export function quantilePoints(series: readonly PromRangeSeries[], g: Grid): (number | null)[] {
  const out: (number | null)[] = new Array(g.count).fill(null);
  for (const s of series) {
    toPoints(s.values, g).forEach((v, i) => {
      if (v !== null && (out[i] === null || v > out[i]!)) out[i] = v;
    });
  }
  return out;
}

/** What one direction of a chart set holds. */
export interface DirectionSeries {
  rps: (number | null)[];
  success: (number | null)[];
  p50: (number | null)[];
  p95: (number | null)[];
  p99: (number | null)[];
}

export function directionSeries(
  answers: {
    responses: PromRangeSeries[];
    p50: PromRangeSeries[];
    p95: PromRangeSeries[];
    p99: PromRangeSeries[];
  },
  g: Grid,
  rateWindowS: number,
): DirectionSeries {
  return {
    ...trafficPoints(answers.responses, g, rateWindowS),
    p50: quantilePoints(answers.p50, g),
    p95: quantilePoints(answers.p95, g),
    p99: quantilePoints(answers.p99, g),
  };
}
