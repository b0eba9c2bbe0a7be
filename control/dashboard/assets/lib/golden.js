// One direction's golden-metric charts (success rate, RPS, p50/p95/p99), shared by the workload and route pages.
import { lineChart } from "./chart.js";
import { h } from "./dom.js";
import { fmtLatency, fmtRps, fmtSuccess } from "./format.js";

/** The chart windows the pages offer (the server's CHART_WINDOWS). */
export const CHART_WINDOWS = ["5m", "15m", "1h", "6h"];

/** The window picker: one link per window, `hrefOf(w)` its URL, the current one marked. */
export function windowControls(current, hrefOf) {
  return h(
    "div",
    { class: "controls" },
    h("span", { id: "win-label" }, "Window"),
    h(
      "nav",
      { class: "segmented", "aria-labelledby": "win-label", dataset: { test: "window-links" } },
      CHART_WINDOWS.map((w) =>
        h("a", {
          href: hrefOf(w),
          "aria-current": w === current ? "true" : undefined,
          dataset: { test: "window-link", window: w },
        }, w)
      ),
    ),
  );
}

/** `d`: { success, rps, p50, p95, p99 } point arrays; `data`: { start, step } of the grid. */
export function directionCharts(d, label, cls, data) {
  const at = { start: data.start, step: data.step, direction: label.toLowerCase() };
  return [
    lineChart({
      ...at,
      title: `${label} success rate`,
      metric: "success",
      yMax: 1,
      series: [{ label: "success", cls, points: d.success }],
      format: fmtSuccess,
    }),
    lineChart({
      ...at,
      title: `${label} requests per second`,
      metric: "rps",
      series: [{ label: "RPS", cls, points: d.rps }],
      format: fmtRps,
    }),
    lineChart({
      ...at,
      title: `${label} latency`,
      metric: "latency",
      format: fmtLatency,
      series: [{ label: "p50", cls: "p50", points: d.p50 }, { label: "p95", cls: "p95", points: d.p95 }, {
        label: "p99",
        cls: "p99",
        points: d.p99,
      }],
    }),
  ];
}
