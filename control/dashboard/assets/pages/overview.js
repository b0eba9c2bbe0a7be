// Overview: control-plane health (mesh:check's read-only checks), certificate expiry, meshed vs unmeshed
// pods per namespace, and every namespace's Deployments with success rate, RPS and p99.
import { getJSON } from "../lib/api.js";
import { every } from "../lib/refresh.js";
import { errorBox, h, table } from "../lib/dom.js";
import { fmtDays, fmtLatency, fmtRps, fmtSuccess, successTone, workloadHref } from "../lib/format.js";

const MARK = { ok: "✓", warn: "!", fail: "✗" };
const TONE = { ok: "good", warn: "warn", fail: "bad" };

export async function render(root, _params, signal) {
  document.title = "Overview · weft";
  const health = h(
    "section",
    { "aria-labelledby": "h-health" },
    h("h2", { id: "h-health" }, "Control plane"),
    h("p", { class: "muted" }, "Checking…"),
  );
  const workloads = h(
    "section",
    { "aria-labelledby": "h-workloads" },
    h("h2", { id: "h-workloads" }, "Deployments"),
    h("p", { class: "muted" }, "Querying the metrics store…"),
  );
  root.append(h("h1", {}, "Overview"), workloads, health);
  // The two halves load apart: the metrics table does not wait for the checks, nor they for it.
  await Promise.all([
    loadStat(workloads, signal),
    loadHealth(health, signal),
  ]);
  every(10_000, signal, workloads, () => loadStat(workloads, signal));
  every(30_000, signal, health, () => loadHealth(health, signal));
}

async function loadStat(section, signal) {
  let data;
  try {
    data = await getJSON("stat", { kind: "deployment", window: "1m" }, signal);
  } catch (e) {
    if (signal.aborted) return;
    section.replaceChildren(section.firstChild, errorBox(`Metrics: ${e.message}`, "stat-error"));
    return;
  }
  const byNs = new Map();
  for (const r of data.rows) {
    if (!byNs.has(r.namespace)) byNs.set(r.namespace, []);
    byNs.get(r.namespace).push(r);
  }
  const blocks = [];
  for (const [ns, rows] of [...byNs].sort(([a], [b]) => a.localeCompare(b))) {
    blocks.push(
      h("h3", {}, h("a", { href: `/workloads?ns=${encodeURIComponent(ns)}` }, ns)),
      table(
        [
          "Name",
          "Meshed",
          h("th", { scope: "col", class: "num" }, "Success"),
          h("th", { scope: "col", class: "num" }, "RPS"),
          h("th", { scope: "col", class: "num" }, "P99"),
        ],
        rows.map((r) =>
          h(
            "tr",
            {
              dataset: {
                test: "service-row",
                name: r.name,
                namespace: r.namespace,
                kind: "deployment",
                rps: r.rps ?? 0,
                success: r.success ?? "",
                p99: r.latency_ms_p99 ?? "",
              },
            },
            h("td", {}, h("a", { href: workloadHref(r.namespace, "deployment", r.name) }, r.name)),
            h("td", {}, r.meshed),
            h("td", { class: `num ${successTone(r.success)}` }, fmtSuccess(r.success)),
            h("td", { class: "num" }, fmtRps(r.rps)),
            h("td", { class: "num" }, fmtLatency(r.latency_ms_p99)),
          )
        ),
        { dataset: { test: "stat-table", namespace: ns } },
      ),
    );
  }
  section.replaceChildren(
    section.firstChild,
    h(
      "p",
      { class: "muted" },
      `Inbound traffic over the last ${data.window}, as weft stat deploy -A shows it.`,
    ),
    ...(blocks.length ? blocks : [h("p", {}, "No Deployments.")]),
  );
}

async function loadHealth(section, signal) {
  let o;
  try {
    o = await getJSON("overview", {}, signal);
  } catch (e) {
    if (signal.aborted) return;
    section.replaceChildren(section.firstChild, errorBox(`Health: ${e.message}`, "overview-error"));
    return;
  }
  const failing = o.checks.filter((c) => c.outcome === "fail").length;
  const summary = h(
    "p",
    { dataset: { test: "health-summary", failing } },
    h("span", { class: `badge ${failing ? "bad" : "good"}` }, failing ? "✗" : "✓"),
    " ",
    failing ? `${failing} of ${o.checks.length} checks fail` : `all ${o.checks.length} checks pass`,
  );
  const checks = table(
    ["", "Group", "Check", "Detail"],
    o.checks.map((c) =>
      h(
        "tr",
        { dataset: { test: "check-row", outcome: c.outcome, group: c.group, name: c.name } },
        h("td", { class: `badge ${TONE[c.outcome]}`, "aria-label": c.outcome }, MARK[c.outcome]),
        h("td", {}, c.group),
        h("td", {}, c.name),
        h("td", { class: "wrap" }, c.detail),
      )
    ),
  );
  const skipped = h(
    "details",
    { dataset: { test: "skipped-checks" } },
    h("summary", {}, `${o.skipped.length} checks of mesh:check not run here (read-only access)`),
    h("ul", {}, o.skipped.map((x) => h("li", {}, h("strong", {}, `${x.group}: ${x.name}`), ` — ${x.why}`))),
  );
  const pods = table(
    ["Pod", "Component", "Ready", h("th", { scope: "col", class: "num" }, "Restarts")],
    o.controlPlanePods.map((p) =>
      h(
        "tr",
        { dataset: { test: "control-plane-pod", name: p.name, ready: p.ready } },
        h("td", {}, p.name),
        h("td", {}, p.component),
        h("td", { class: p.ready ? "good" : "bad" }, p.ready ? "ready" : "not ready"),
        h("td", { class: "num" }, String(p.restarts)),
      )
    ),
  );
  const certs = table(
    ["Certificate", "Subject", "Expires", h("th", { scope: "col", class: "num" }, "Left")],
    o.certificates.map((c) =>
      h(
        "tr",
        { dataset: { test: "cert-row", role: c.role, daysLeft: c.daysLeft } },
        h("td", {}, c.role === "anchor" ? "trust anchor" : "issuer"),
        h("td", { class: "wrap" }, c.subject),
        h("td", {}, c.notAfter.slice(0, 10)),
        h(
          "td",
          { class: `num ${c.daysLeft < 7 ? "bad" : c.daysLeft < 30 ? "warn" : "good"}` },
          fmtDays(c.daysLeft),
        ),
      )
    ),
  );
  const meshing = table(
    [
      "Namespace",
      h("th", { scope: "col", class: "num" }, "Meshed"),
      h("th", { scope: "col", class: "num" }, "Unmeshed"),
      "Injection",
    ],
    o.namespaces.map((n) =>
      h(
        "tr",
        { dataset: { test: "namespace-row", name: n.name, meshed: n.meshed, unmeshed: n.unmeshed } },
        h("td", {}, h("a", { href: `/workloads?ns=${encodeURIComponent(n.name)}` }, n.name)),
        h("td", { class: "num" }, String(n.meshed)),
        h("td", { class: `num ${n.injected && n.unmeshed ? "warn" : ""}` }, String(n.unmeshed)),
        h("td", {}, n.injected ? "enabled" : "-"),
      )
    ),
  );
  section.replaceChildren(
    section.firstChild,
    summary,
    h(
      "div",
      { class: "grid" },
      h("div", { class: "panel" }, h("h3", {}, "Checks"), checks, skipped),
      h(
        "div",
        {},
        h(
          "div",
          { class: "panel" },
          h("h3", {}, "Certificates"),
          certs,
          ...o.certificateProblems.map((p) => errorBox(p, "cert-problem")),
        ),
        h("div", { class: "panel" }, h("h3", {}, "Control-plane pods"), pods),
        h("div", { class: "panel" }, h("h3", {}, "Meshed pods per namespace"), meshing),
      ),
    ),
  );
}
