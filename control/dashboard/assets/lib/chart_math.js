// The geometry of the workload page's charts: pure, no DOM (tested from Deno: chart_math_test.ts).

/** A "nice" upper bound for the y axis: 1, 2 or 5 × 10^n at or above the largest value (1 when none). */
export function niceMax(values) {
  let max = 0;
  for (const v of values) if (v !== null && Number.isFinite(v) && v > max) max = v;
  if (max <= 0) return 1;
  const p = 10 ** Math.floor(Math.log10(max));
  for (const m of [1, 2, 5, 10]) if (m * p >= max) return m * p;
  return 10 * p;
}

/**
 * The SVG path of a series over a box: `M` starts a run, `L` continues it; a null point ends the run (a
 * gap stays open). A lone point between gaps is drawn as a short dash so it is still seen.
 */
export function linePath(points, box, yMax) {
  const n = points.length;
  if (n === 0) return "";
  const dx = n > 1 ? box.width / (n - 1) : 0;
  const x = (i) => box.x + i * dx;
  const y = (v) => box.y + box.height - (Math.min(Math.max(v, 0), yMax) / yMax) * box.height;
  const parts = [];
  let open = false;
  for (let i = 0; i < n; i++) {
    const v = points[i];
    if (v === null || v === undefined || !Number.isFinite(v)) {
      open = false;
      continue;
    }
    const alone = !open && (i + 1 >= n || points[i + 1] === null || points[i + 1] === undefined);
    parts.push(`${open ? "L" : "M"}${r(x(i))} ${r(y(v))}`);
    if (alone) parts.push(`L${r(x(i) + Math.max(dx / 2, 1))} ${r(y(v))}`);
    open = true;
  }
  return parts.join(" ");
}

function r(v) {
  return Math.round(v * 10) / 10;
}

/** Tick labels for the time axis: `count` evenly spaced times (unix seconds) as HH:MM. */
export function timeTicks(start, step, n, count = 4) {
  if (n < 2) return [];
  const out = [];
  for (let k = 0; k < count; k++) {
    const i = Math.round((k * (n - 1)) / (count - 1));
    const d = new Date((start + i * step) * 1000);
    out.push({
      i,
      label: `${String(d.getHours()).padStart(2, "0")}:${String(d.getMinutes()).padStart(2, "0")}`,
    });
  }
  return out;
}

/** The latest value that is not a gap (the figure shown beside a chart's title). */
export function lastValue(points) {
  for (let i = points.length - 1; i >= 0; i--) {
    if (points[i] !== null && points[i] !== undefined) return points[i];
  }
  return null;
}
