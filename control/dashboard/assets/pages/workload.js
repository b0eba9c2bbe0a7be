// A workload's (or Service's) page: golden metrics as charts over a chosen window, inbound and outbound,
// its route table (weft routes) and the inbound policy on its ports (Servers and their authorizations).
import { sectionData } from "../lib/api.js";
import { CHART_WINDOWS, directionCharts, windowControls } from "../lib/golden.js";
import { every } from "../lib/refresh.js";
import { policyRouteHref, routeHref } from "../lib/route_links.js";
import { h, section, table } from "../lib/dom.js";
import { fmtLatency, fmtRps, fmtSuccess, successTone, workloadHref } from "../lib/format.js";

const KIND_OF = {
  deployments: "deployment",
  statefulsets: "statefulset",
  daemonsets: "daemonset",
  services: "service",
  pods: "pod",
};
/** Route and policy figures over this window: the chart window, capped at what /api/routes takes. */
const ROUTE_WINDOW = { "5m": "5m", "15m": "15m", "1h": "1h", "6h": "1h" };

export async function render(root, params, signal) {
  const kind = KIND_OF[params.kinds] ?? "deployment";
  const { ns, name } = params;
  const window = CHART_WINDOWS.includes(params.window) ? params.window : "15m";
  document.title = `${name} · ${ns} · weft`;
  const base = `/namespaces/${encodeURIComponent(ns)}/${params.kinds}/${encodeURIComponent(name)}`;
  root.append(
    h("p", { class: "muted" }, h("a", { href: `/workloads?ns=${encodeURIComponent(ns)}` }, ns), ` / ${kind}`),
    h("h1", { dataset: { test: "workload-title" } }, name),
    windowControls(window, (w) => `${base}?window=${w}`),
  );
  const charts = section("h-charts", "Golden metrics", "Querying…");
  const routes = section("h-routes", "Routes", "Querying…");
  const policy = section("h-policy", "Inbound policy", "Reading…");
  const podList = section("h-pods", "Pods", "Listing…");
  root.append(charts, routes, ...(kind === "service" ? [] : [policy]), ...(kind === "pod" ? [] : [podList]));
  const q = { ns, kind, name };
  await Promise.all([
    kind === "pod" ? undefined : loadPods(podList, q, signal),
    loadCharts(charts, { ...q, window }, signal),
    loadRoutes(routes, { ...q, window: ROUTE_WINDOW[window] }, signal),
    kind === "service" ? undefined : loadPolicy(policy, q, signal),
  ]);
  // New points arrive every step; the route table follows the same beat.
  every(15_000, signal, charts, () => loadCharts(charts, { ...q, window }, signal));
  every(15_000, signal, routes, () => loadRoutes(routes, { ...q, window: ROUTE_WINDOW[window] }, signal));
}

async function loadCharts(section, q, signal) {
  const data = await sectionData(section, "series", q, signal, "series-error");
  if (!data) return;
  const parts = [
    section.firstChild,
    h(
      "p",
      { class: "muted" },
      `Each point: the ${data.rateWindow}s before it; gaps are steps with no requests. ` +
        (q.kind === "service"
          ? "As the Service's clients saw it."
          : "Inbound as this workload's proxies answered it; outbound as they sent it."),
    ),
    h("h3", {}, q.kind === "service" ? "Requests to the Service" : "Inbound"),
    h("div", { class: "charts" }, directionCharts(data.inbound, "Inbound", "inbound", data)),
  ];
  if (data.outbound) {
    parts.push(
      h("h3", {}, "Outbound"),
      h("div", { class: "charts" }, directionCharts(data.outbound, "Outbound", "outbound", data)),
    );
  }
  section.replaceChildren(...parts);
}

async function loadRoutes(section, q, signal) {
  const data = await sectionData(section, "routes", q, signal, "routes-error");
  if (!data) return;
  if (!data.rows.length) {
    section.replaceChildren(
      section.firstChild,
      h("p", {}, `No route saw requests in the last ${data.window}.`),
    );
    return;
  }
  section.replaceChildren(
    section.firstChild,
    h("p", { class: "muted" }, `Over the last ${data.window}, as weft routes shows it.`),
    table(
      [
        "Route",
        "Kind",
        "Parent",
        h("th", { scope: "col", class: "num" }, "Success"),
        h("th", { scope: "col", class: "num" }, "RPS"),
        h("th", { scope: "col", class: "num" }, "P50"),
        h("th", { scope: "col", class: "num" }, "P95"),
        h("th", { scope: "col", class: "num" }, "P99"),
      ],
      data.rows.map((r) =>
        h(
          "tr",
          { dataset: { test: "route-row", route: r.route, source: r.source, rps: r.rps ?? 0 } },
          h(
            "td",
            {},
            routeHref(r) ? h("a", { href: routeHref(r), dataset: { test: "route-link" } }, r.route) : r.route,
          ),
          h("td", {}, r.kind),
          h("td", {}, r.parent),
          h("td", { class: `num ${successTone(r.success)}` }, fmtSuccess(r.success)),
          h("td", { class: "num" }, fmtRps(r.rps)),
          h("td", { class: "num" }, fmtLatency(r.latency_ms_p50)),
          h("td", { class: "num" }, fmtLatency(r.latency_ms_p95)),
          h("td", { class: "num" }, fmtLatency(r.latency_ms_p99)),
        )
      ),
    ),
  );
}

async function loadPods(section, q, signal) {
  const data = await sectionData(section, "pods", q, signal, "pods-error");
  if (!data) return;
  section.replaceChildren(
    section.firstChild,
    data.pods.length
      ? table(
        ["Pod", "Phase", "Ready", "Meshed", h("th", { scope: "col", class: "num" }, "Restarts")],
        data.pods.map((p) =>
          h(
            "tr",
            { dataset: { test: "pod-row", name: p.name, meshed: p.meshed } },
            h(
              "td",
              {},
              h("a", { href: workloadHref(q.ns, "pod", p.name), dataset: { test: "pod-link" } }, p.name),
            ),
            h("td", {}, p.phase),
            h("td", {}, p.ready),
            h("td", { class: p.meshed ? "" : "warn" }, p.meshed ? "yes" : "no"),
            h("td", { class: "num" }, String(p.restarts)),
          )
        ),
      )
      : h("p", {}, "No running pods."),
  );
}

async function loadPolicy(section, q, signal) {
  const p = await sectionData(section, "policy", q, signal, "policy-error");
  if (!p) return;
  const servers = p.servers.length
    ? table(
      ["Server", "Port", "Protocol", "Authorizations", "Routes"],
      p.servers.map((s) =>
        h(
          "tr",
          { dataset: { test: "policy-server", name: s.name, port: s.port } },
          h("td", {}, s.name),
          h("td", {}, s.port),
          h("td", {}, s.proxyProtocol),
          h(
            "td",
            { class: "wrap" },
            s.authorizations.length
              ? s.authorizations.map((a) =>
                h(
                  "div",
                  { dataset: { test: "policy-authorization", name: a.name } },
                  `${a.kind} ${a.name}`,
                  a.authentications.length ? ` ← ${a.authentications.join(", ")}` : "",
                )
              )
              : h("span", { class: "warn" }, "none: every request to this port is denied"),
          ),
          h(
            "td",
            { class: "wrap" },
            s.routes.length
              ? s.routes.map((r) =>
                h(
                  "div",
                  { dataset: { test: "policy-route", kind: r.kind, group: r.group, name: r.name } },
                  h("a", { href: policyRouteHref(q.ns, r) }, `${r.kind} ${r.name}`),
                )
              )
              : "default",
          ),
        )
      ),
    )
    : h("p", {}, "No Server selects these pods: every port takes the default policy.");
  section.replaceChildren(
    section.firstChild,
    servers,
    h(
      "p",
      { dataset: { test: "default-policy", value: p.defaultPolicy.value } },
      "Ports without a Server: ",
      h("strong", {}, p.defaultPolicy.value),
      h("span", { class: "muted" }, ` (${p.defaultPolicy.from})`),
    ),
  );
}
