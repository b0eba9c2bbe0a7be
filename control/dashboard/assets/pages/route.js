// A route's page (HTTPRoute, GRPCRoute — Gateway API's or Linkerd's policy ones — or a ServiceProfile): golden
// metrics per direction over a chosen window from the route-labelled families the proxies export, its parents,
// matches, backends and filters, and the policy that applies.
import { getJSON, sectionData } from "../lib/api.js";
import { CHART_WINDOWS, directionCharts, windowControls } from "../lib/golden.js";
import { every } from "../lib/refresh.js";
import { errorBox, h, section, table } from "../lib/dom.js";
import { workloadHref } from "../lib/format.js";

const KIND_OF = { httproutes: "HTTPRoute", grpcroutes: "GRPCRoute", serviceprofiles: "ServiceProfile" };
const DIRECTION_TEXT = {
  outbound: [
    "Outbound",
    "As the clients' proxies sent it through the route (Linkerd's outbound route families).",
  ],
  inbound: ["Inbound", "As the Server's proxies answered it on this route."],
  profile: ["Profile", "As the clients' proxies sent it (the ServiceProfile's route families)."],
};

export async function render(root, params, signal) {
  const kind = KIND_OF[params.kinds];
  const { ns, name } = params;
  const window = CHART_WINDOWS.includes(params.window) ? params.window : "15m";
  const rtRoute = kind === "ServiceProfile" ? params.route : undefined;
  document.title = `${rtRoute ?? name} · ${ns} · weft`;
  const query = (extra) => {
    const q = new URLSearchParams();
    if (params.group) q.set("group", params.group);
    if (rtRoute !== undefined) q.set("route", rtRoute);
    for (const [k, v] of Object.entries(extra)) q.set(k, v);
    return `?${q}`;
  };
  const base = `/namespaces/${encodeURIComponent(ns)}/${params.kinds}/${encodeURIComponent(name)}`;
  root.append(
    h("p", { class: "muted" }, h("a", { href: `/workloads?ns=${encodeURIComponent(ns)}` }, ns), ` / ${kind}`),
    h("h1", { dataset: { test: "route-title" } }, rtRoute ?? name),
    rtRoute !== undefined
      ? h("p", { class: "muted" }, "A route of ServiceProfile ", h("a", { href: base }, name))
      : "",
    windowControls(window, (w) => `${base}${query({ window: w })}`),
  );
  const charts = section("h-charts", "Golden metrics", "Querying…");
  const spec = section("h-spec", "Definition", "Reading…");
  const policy = section("h-policy", "Policy", "Reading…");
  root.append(charts, spec, policy);
  const q = { ns, kind: params.kinds, name, group: params.group };
  let view;
  try {
    view = await getJSON("route", q, signal);
  } catch (e) {
    if (signal.aborted) return;
    spec.replaceChildren(spec.firstChild, errorBox(e.message, "route-error"));
    charts.replaceChildren(charts.firstChild, h("p", { class: "muted" }, "No route object: no charts."));
    policy.remove();
    return;
  }
  showSpec(spec, view, base);
  showPolicy(policy, view);
  const sq = { ...q, group: view.group, route: rtRoute, dir: view.directions.join(","), window };
  await loadCharts(charts, sq, signal);
  every(15_000, signal, charts, () => loadCharts(charts, sq, signal));
}

async function loadCharts(section, q, signal) {
  const data = await sectionData(section, "route/series", q, signal, "series-error");
  if (!data) return;
  const parts = [
    section.firstChild,
    h(
      "p",
      { class: "muted" },
      `Each point: the ${data.rateWindow}s before it; gaps are steps with no requests.`,
    ),
  ];
  for (const [dir, d] of Object.entries(data.directions)) {
    const [label, how] = DIRECTION_TEXT[dir] ?? [dir, ""];
    parts.push(
      h("h3", {}, label),
      h("p", { class: "muted" }, how),
      h(
        "div",
        { class: "charts", dataset: { test: "route-charts", direction: dir } },
        directionCharts(d, label, dir === "inbound" ? "inbound" : "outbound", data),
      ),
    );
  }
  section.replaceChildren(...parts);
}

function targetLink(kind, ns, name, text) {
  return kind === "Service" ? h("a", { href: workloadHref(ns, "service", name) }, text) : text;
}

function showSpec(section, v, base) {
  const parts = [section.firstChild];
  const facts = [
    ["API group", v.group + (v.otherGroups.length ? ` (also in ${v.otherGroups.join(", ")})` : "")],
  ];
  if (v.hostnames.length) facts.push(["Hostnames", v.hostnames.join(", ")]);
  for (const [k, val] of Object.entries(v.annotations)) facts.push([k, val]);
  parts.push(h("dl", { class: "kv" }, facts.flatMap(([k, val]) => [h("dt", {}, k), h("dd", {}, val)])));
  if (v.otherGroups.length) {
    parts.push(h(
      "p",
      {},
      "Also: ",
      v.otherGroups.map((g) =>
        h("a", { href: `${base}?group=${encodeURIComponent(g)}` }, `${v.kind} in ${g}`)
      ),
    ));
  }
  if (v.kind !== "ServiceProfile") {
    parts.push(
      h("h3", {}, "Parents"),
      v.parents.length
        ? table(
          ["Parent", "Namespace", "Accepted"],
          v.parents.map((p) =>
            h(
              "tr",
              { dataset: { test: "route-parent", kind: p.kind, name: p.name, namespace: p.namespace } },
              h("td", {}, targetLink(p.kind, p.namespace, p.name, p.text)),
              h("td", {}, p.namespace),
              h(
                "td",
                { class: p.accepted && p.accepted.status !== "True" ? "warn" : "" },
                p.accepted
                  ? `${p.accepted.status}${p.accepted.reason ? ` (${p.accepted.reason})` : ""}`
                  : "-",
              ),
            )
          ),
        )
        : h("p", {}, "No parentRefs: the route applies nowhere."),
      h("h3", {}, "Rules"),
      v.rules.length
        ? table(
          ["#", "Matches", "Backends", "Filters and timeouts"],
          v.rules.map((r, i) =>
            h(
              "tr",
              { dataset: { test: "route-rule", index: i } },
              h("td", {}, String(i + 1)),
              h(
                "td",
                { class: "wrap" },
                r.matches.map((m) => h("div", { dataset: { test: "route-match" } }, m)),
              ),
              h(
                "td",
                { class: "wrap" },
                r.backends.length
                  ? r.backends.map((b) =>
                    h(
                      "div",
                      {
                        dataset: {
                          test: "route-backend",
                          name: b.name,
                          namespace: b.namespace,
                          weight: b.weight,
                        },
                      },
                      targetLink(b.kind, b.namespace, b.name, b.text),
                      ` weight ${b.weight}`,
                    )
                  )
                  : "the parent itself",
              ),
              h("td", { class: "wrap" }, [...r.filters, ...r.timeouts].join("; ") || "-"),
            )
          ),
        )
        : h("p", {}, "No rules."),
    );
  } else {
    parts.push(
      h("h3", {}, "Routes"),
      v.profileRoutes.length
        ? table(
          ["Route", "Condition", "Retryable", "Timeout"],
          v.profileRoutes.map((r) =>
            h(
              "tr",
              { dataset: { test: "route-rule", name: r.name } },
              h("td", {}, h("a", { href: `${base}?route=${encodeURIComponent(r.name)}` }, r.name)),
              h("td", { class: "wrap" }, r.condition),
              h("td", {}, r.retryable ? "yes" : "no"),
              h("td", {}, r.timeout ?? "-"),
            )
          ),
        )
        : h("p", {}, "The profile defines no routes."),
    );
  }
  section.replaceChildren(...parts);
}

function showPolicy(section, v) {
  const p = v.policy;
  const parts = [section.firstChild];
  if (p.note) parts.push(h("p", { dataset: { test: "route-policy-note" } }, p.note));
  if (p.servers.length) {
    parts.push(table(
      ["Server", "Port", "Protocol"],
      p.servers.map((s) =>
        h(
          "tr",
          { dataset: { test: "policy-server", name: s.name, port: s.port } },
          h("td", {}, s.name),
          h("td", {}, s.port),
          h("td", {}, s.proxyProtocol),
        )
      ),
    ));
  }
  if (p.authorizations.length) {
    parts.push(table(
      ["AuthorizationPolicy", "Targets", "Required authentications"],
      p.authorizations.map((a) =>
        h(
          "tr",
          { dataset: { test: "route-authorization", name: a.name } },
          h("td", {}, a.name),
          h("td", {}, a.target),
          h("td", {}, a.authentications.join(", ") || "-"),
        )
      ),
    ));
  } else if (p.servers.length) {
    parts.push(
      h("p", { class: "warn" }, "No AuthorizationPolicy targets this route, its Servers or the namespace."),
    );
  }
  section.replaceChildren(...parts);
}
