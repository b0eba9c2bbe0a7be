// Hand-written SVG line charts for the workload page (no chart library). Geometry in chart_math.js.
import { h, s } from "./dom.js";
import { lastValue, linePath, niceMax, timeTicks } from "./chart_math.js";

const W = 320;
const H = 140;
/** Axis text size (user units) and a generous average glyph width for it, so a label is never cut. */
const AXIS_PX = 10;
const GLYPH = 0.65 * AXIS_PX;

/** The plot area: its left side leaves room for the widest y-axis label (e.g. "100.00%"). */
function plotBox(yLabels) {
  const widest = Math.max(...yLabels.map((t) => t.length));
  const x = Math.ceil(widest * GLYPH) + 8;
  return { x, y: 8, width: W - x - 8, height: H - 30 };
}

/**
 * A figure with one line per series: { title, metric, direction, series: [{ label, cls, points }], start,
 * step, format, axisFormat?, yMax? }. The first series' latest value is shown beside the title.
 */
export function lineChart(o) {
  const all = o.series.flatMap((x) => x.points);
  const yMax = o.yMax ?? niceMax(all);
  const fractions = [0, 0.5, 1];
  const yLabels = fractions.map((f) => (o.axisFormat ?? o.format)(yMax * f));
  const BOX = plotBox(yLabels);
  const svg = s("svg", {
    viewBox: `0 0 ${W} ${H}`,
    role: "img",
    "aria-label": `${o.title}: ${
      o.series.map((x) => `${x.label} ${o.format(lastValue(x.points))}`).join(", ")
    }`,
  });
  fractions.forEach((f, i) => {
    const y = BOX.y + BOX.height * (1 - f);
    svg.append(
      s("line", { class: "gridline", x1: BOX.x, x2: BOX.x + BOX.width, y1: y, y2: y }),
      s(
        "text",
        { class: "axis y-label", x: BOX.x - 4, y: y + 3, "text-anchor": "end" },
        yLabels[i],
      ),
    );
  });
  const n = o.series[0]?.points.length ?? 0;
  for (const t of timeTicks(o.start, o.step, n)) {
    const x = BOX.x + (n > 1 ? (t.i * BOX.width) / (n - 1) : 0);
    const anchor = t.i === 0 ? "start" : t.i === n - 1 ? "end" : "middle";
    svg.append(s("text", { class: "axis", x, y: H - 6, "text-anchor": anchor }, t.label));
  }
  for (const x of o.series) {
    svg.append(
      s("path", { class: `line ${x.cls}`, d: linePath(x.points, BOX, yMax), dataset: { series: x.label } }),
    );
  }
  const legend = h(
    "span",
    { class: "legend" },
    o.series.map((x) => h("span", { class: x.cls }, `${x.label} ${o.format(lastValue(x.points))}`)),
  );
  return h(
    "figure",
    { class: "chart", dataset: { test: "chart", metric: o.metric, direction: o.direction ?? "" } },
    h("figcaption", {}, h("span", {}, o.title), legend),
    svg,
  );
}
