// Workloads: one namespace's workloads of a kind with `weft stat`'s figures, each linking to its page.
import { getJSON } from "../lib/api.js";
import { errorBox, h, table } from "../lib/dom.js";
import { fmtLatency, fmtRps, fmtSuccess, successTone, workloadHref } from "../lib/format.js";

const KINDS = [["deployment", "Deployments"], ["statefulset", "StatefulSets"], ["daemonset", "DaemonSets"], [
  "service",
  "Services",
], ["pod", "Pods"]];

export async function render(root, params, signal) {
  const kind = KINDS.some(([k]) => k === params.kind) ? params.kind : "deployment";
  const window = ["1m", "5m", "15m", "1h"].includes(params.window) ? params.window : "1m";
  document.title = `Workloads${params.ns ? ` · ${params.ns}` : ""} · weft`;
  root.append(h("h1", {}, "Workloads"));
  const nsList = await getJSON("namespaces", {}, signal).catch((e) => ({ error: e.message, namespaces: [] }));
  if (signal.aborted) return;
  const ns = params.ns ?? "";
  const link = (o) => {
    const q = new URLSearchParams({ ...(ns ? { ns } : {}), kind, window, ...o });
    for (const [k, v] of [...q]) if (!v) q.delete(k);
    return `/workloads?${q}`;
  };
  const nsNav = h(
    "nav",
    { "aria-label": "Namespaces", class: "segmented", dataset: { test: "namespace-links" } },
    h("a", { href: link({ ns: "" }), "aria-current": ns === "" ? "true" : undefined }, "all"),
    nsList.namespaces.filter((n) => n.meshed > 0 || n.name === ns).map((n) =>
      h("a", { href: link({ ns: n.name }), "aria-current": n.name === ns ? "true" : undefined }, n.name)
    ),
  );
  const kindNav = h(
    "nav",
    { "aria-label": "Kind", class: "segmented" },
    KINDS.map(([k, label]) =>
      h("a", { href: link({ kind: k }), "aria-current": k === kind ? "true" : undefined }, label)
    ),
  );
  const winNav = h(
    "nav",
    { "aria-label": "Window", class: "segmented" },
    ["1m", "5m", "15m", "1h"].map((w) =>
      h("a", { href: link({ window: w }), "aria-current": w === window ? "true" : undefined }, w)
    ),
  );
  root.append(h("div", { class: "controls" }, nsNav), h("div", { class: "controls" }, kindNav, winNav));
  let data;
  try {
    data = await getJSON("stat", { ns, kind, window }, signal);
  } catch (e) {
    if (!signal.aborted) root.append(errorBox(e.message, "stat-error"));
    return;
  }
  root.append(table(
    [
      ...(ns ? [] : ["Namespace"]),
      "Name",
      "Meshed",
      h("th", { scope: "col", class: "num" }, "Success"),
      h("th", { scope: "col", class: "num" }, "RPS"),
      h("th", { scope: "col", class: "num" }, "P50"),
      h("th", { scope: "col", class: "num" }, "P95"),
      h("th", { scope: "col", class: "num" }, "P99"),
      h("th", { scope: "col", class: "num" }, "TCP"),
    ],
    data.rows.map((r) =>
      h(
        "tr",
        {
          dataset: {
            test: "service-row",
            name: r.name,
            namespace: r.namespace,
            kind,
            rps: r.rps ?? 0,
            success: r.success ?? "",
            p99: r.latency_ms_p99 ?? "",
          },
        },
        ...(ns ? [] : [h("td", {}, r.namespace)]),
        h(
          "td",
          {},
          kind === "pod" || !r.namespace
            ? r.name
            : h("a", { href: workloadHref(r.namespace, kind, r.name) }, r.name),
        ),
        h("td", {}, r.meshed),
        h("td", { class: `num ${successTone(r.success)}` }, fmtSuccess(r.success)),
        h("td", { class: "num" }, fmtRps(r.rps)),
        h("td", { class: "num" }, fmtLatency(r.latency_ms_p50)),
        h("td", { class: "num" }, fmtLatency(r.latency_ms_p95)),
        h("td", { class: "num" }, fmtLatency(r.latency_ms_p99)),
        h("td", { class: "num" }, r.tcp_open_connections ?? "-"),
      )
    ),
    { dataset: { test: "stat-table" } },
  ));
  if (!data.rows.length) root.append(h("p", {}, "Nothing of this kind here."));
}
