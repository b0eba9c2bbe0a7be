// Topology: who talks to whom, drawn from /api/topology (weft edges' edges with RPS and success rate, laid out
// on the server). Stroke width is RPS, colour is success rate, and failing edges are also dashed and labelled
// so they read without colour; an edge that is not mTLS is dotted and says why. Redrawn every few seconds until
// the page is left; the namespace and window live in the URL, so a view can be linked.
import { getJSON } from "../lib/api.js";
import { errorBox, h, s } from "../lib/dom.js";
import { fmtRps, fmtSuccess, workloadHref } from "../lib/format.js";
import { navigate } from "../app.js";
import { labelBox, placeLabels } from "../lib/label_place.js";

const REFRESH_MS = 5000;
const WINDOWS = ["1m", "5m", "15m", "1h"];
const NODE_W = 164;
const NODE_H = 38;

function ensureStyles() {
  if (document.querySelector("link[data-page-style=live]")) return;
  document.head.append(
    h("link", { rel: "stylesheet", href: "/assets/pages/live.css", dataset: { pageStyle: "live" } }),
  );
}

function short(text, max) {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

/** `said` holds the (source, reason) pairs already labelled: edges fanning out of one node say why once. */
function edgeLabel(e, said) {
  const parts = [];
  if (e.successRate !== undefined) parts.push(`${fmtRps(e.rps)} ${fmtSuccess(e.successRate)}`);
  if (e.failing) parts.push("failing");
  if (!e.mtls) {
    const k = `${e.from}\u0000${e.noTlsReason}`;
    parts.push(said.has(k) ? "no mTLS" : `no mTLS: ${e.noTlsText}`);
    said.add(k);
  }
  return parts.join(" · ");
}

function edgeTitle(e, from, to) {
  return [
    `${from.name} → ${to.name}`,
    e.successRate === undefined
      ? "no HTTP requests (TCP only)"
      : `${fmtRps(e.rps)}, success ${fmtSuccess(e.successRate)}`,
    e.mtls ? "mTLS" : `not mTLS: ${e.noTlsText} (${e.noTlsReason || "unknown"})`,
    e.clientId ? `client ${e.clientId}` : "",
    e.serverId ? `server ${e.serverId}` : "",
  ].filter(Boolean).join("\n");
}

/** Where along an edge (Bézier parameter) its label may sit, in preference order. */
const LABEL_SPOTS = [0.6, 0.45, 0.75, 0.3, 0.85, 0.2];
const LABEL_PX = 11;

function draw(data, showNs) {
  const byId = new Map(data.nodes.map((n) => [n.id, n]));
  const width = Math.max(data.width, 400);
  const height = Math.max(data.height, 120);
  const svg = s("svg", {
    class: "topology-graph",
    viewBox: `0 0 ${width} ${height}`,
    width,
    role: "group",
    "aria-label": `${data.nodes.length} workloads, ${data.edges.length} edges`,
    dataset: { test: "topology-graph" },
  });
  svg.append(
    s(
      "defs",
      {},
      ["good", "warn", "bad", "none"].map((t) =>
        s("marker", {
          id: `arrow-${t}`,
          viewBox: "0 0 10 10",
          refX: 10,
          refY: 5,
          markerWidth: 7,
          markerHeight: 7,
          orient: "auto-start-reverse",
          class: `tone-${t}`,
        }, s("path", { d: "M 0 0 L 10 5 L 0 10 z", fill: "currentColor" }))
      ),
    ),
  );
  const edges = s("g", { class: "edges" });
  const said = new Set();
  const pending = [];
  // What is drawn, so the viewBox holds all of it (a self-loop bows above its box).
  const extent = {
    x0: 0,
    y0: 0,
    x1: width,
    y1: height,
    add(x, y) {
      this.x0 = Math.min(this.x0, x - 8);
      this.y0 = Math.min(this.y0, y - 8);
      this.x1 = Math.max(this.x1, x + 8);
      this.y1 = Math.max(this.y1, y + 8);
    },
  };
  for (const n of data.nodes) {
    extent.add(n.x - NODE_W / 2, n.y - NODE_H / 2);
    extent.add(n.x + NODE_W / 2, n.y + NODE_H / 2);
  }
  for (const e of data.edges) {
    const a = byId.get(e.from), b = byId.get(e.to);
    if (!a || !b) continue;
    // Cubic Béziers [start, control, control, end]; labels sit 60% of the way, so edges that share a source
    // (the unmeshed clients) put theirs apart.
    let c;
    if (a.id === b.id) {
      const x = a.x, y = a.y - NODE_H / 2;
      c = [[x - 20, y], [x - 40, y - 50], [x + 40, y - 50], [x + 20, y]];
    } else if (b.layer > a.layer) {
      const x1 = a.x + NODE_W / 2, x2 = b.x - NODE_W / 2, mx = (x1 + x2) / 2;
      c = [[x1, a.y], [mx, a.y], [mx, b.y], [x2, b.y]];
    } else {
      // Same layer or backwards (a cycle): bow below both boxes so it does not cross them.
      const y1 = a.y + NODE_H / 2, y2 = b.y + NODE_H / 2, bow = Math.max(y1, y2) + 40;
      c = [[a.x, y1], [a.x, bow], [b.x, bow], [b.x, y2]];
    }
    for (const [x, y] of c) extent.add(x, y);
    const d = `M ${c[0].join(" ")} C ${c[1].join(" ")}, ${c[2].join(" ")}, ${c[3].join(" ")}`;
    const at = (t, k) => {
      const u = 1 - t;
      return u * u * u * c[0][k] + 3 * u * u * t * c[1][k] + 3 * u * t * t * c[2][k] + t * t * t * c[3][k];
    };
    const tone = e.tone;
    const label = edgeLabel(e, said);
    const g = s(
      "g",
      {
        class: `edge tone-${tone}${e.failing ? " failing" : ""}${e.mtls ? "" : " plaintext"}`,
        tabindex: 0,
        "aria-label": edgeTitle(e, a, b).replaceAll("\n", ", "),
        dataset: {
          test: "edge",
          from: a.name,
          fromNs: a.namespace,
          to: b.name,
          toNs: b.namespace,
          rps: e.rps,
          success: e.successRate ?? "",
          tone,
          mtls: e.mtls ? "true" : "false",
          noTlsReason: e.noTlsReason,
        },
      },
      s("title", {}, edgeTitle(e, a, b)),
      s("path", {
        d,
        fill: "none",
        stroke: "currentColor",
        "stroke-width": e.width,
        "stroke-dasharray": e.failing ? "8 5" : !e.mtls ? "2 4" : undefined,
        "marker-end": `url(#arrow-${tone})`,
      }),
    );
    edges.append(g);
    if (label) {
      const box = labelBox(label, LABEL_PX, !e.mtls);
      pending.push({
        g,
        label,
        id: pending.length,
        ...box,
        // Failing edges first, then the busiest: those are the labels worth the space.
        priority: (e.failing ? 1e6 : 0) + (e.rps ?? 0),
        spots: LABEL_SPOTS.map((t) => ({ x: at(t, 0), y: at(t, 1) - 9 })),
      });
    }
  }
  // Labels that would cover a box or another label are left out (the edge's tooltip, its aria-label and the
  // lists below still say it all), so a dense graph or a narrow window stays readable.
  const margin = 2;
  const boxes = data.nodes.map((n) => ({
    x: n.x - NODE_W / 2 - margin,
    y: n.y - NODE_H / 2 - margin,
    w: NODE_W + 2 * margin,
    h: NODE_H + 2 * margin,
  }));
  svg.setAttribute("viewBox", `${extent.x0} ${extent.y0} ${extent.x1 - extent.x0} ${extent.y1 - extent.y0}`);
  svg.setAttribute("width", String(extent.x1 - extent.x0));
  const at = placeLabels(pending, boxes, { width, height });
  for (const p of pending) {
    const pos = at.get(p.id);
    p.g.dataset.label = pos ? "shown" : "hidden";
    if (!pos) continue;
    // The text's baseline sits 4 units under the box's centre line for an 11 px font.
    p.g.append(
      s("text", { x: pos.x, y: pos.y + 4, "text-anchor": "middle", class: "edge-label" }, p.label),
    );
  }
  const nodes = s("g", { class: "nodes" });
  for (const n of data.nodes) {
    const inner = [
      s("title", {}, n.namespace ? `${n.namespace}/${n.name}` : n.name),
      s("rect", { x: n.x - NODE_W / 2, y: n.y - NODE_H / 2, width: NODE_W, height: NODE_H, rx: 6 }),
      s("text", {
        x: n.x,
        y: showNs && n.namespace ? n.y - 3 : n.y + 5,
        "text-anchor": "middle",
        class: "node-name",
      }, short(n.name, 22)),
      showNs && n.namespace
        ? s(
          "text",
          { x: n.x, y: n.y + 12, "text-anchor": "middle", class: "node-ns" },
          short(n.namespace, 24),
        )
        : null,
    ];
    const attrs = {
      class: `node node-${n.kind}`,
      dataset: { test: "node", name: n.name, namespace: n.namespace, kind: n.kind },
    };
    if (n.kind === "workload") {
      const href = workloadHref(n.namespace, "deployment", n.name);
      nodes.append(s("a", { ...attrs, href, "aria-label": `deployment ${n.namespace}/${n.name}` }, inner));
    } else {
      nodes.append(
        s("g", {
          ...attrs,
          tabindex: 0,
          role: "img",
          "aria-label": n.kind === "unmeshed" ? "unmeshed clients" : `${n.kind} ${n.name}`,
        }, inner),
      );
    }
  }
  svg.append(edges, nodes);
  // SVG links have no string href for the router's handler: navigate here, before it sees the click.
  svg.addEventListener("click", (ev) => {
    const a = ev.target instanceof Element ? ev.target.closest("a") : null;
    if (!a || ev.button !== 0 || ev.metaKey || ev.ctrlKey || ev.shiftKey || ev.altKey) return;
    ev.preventDefault();
    navigate(a.getAttribute("href"));
  });
  return svg;
}

function plaintextList(data) {
  const byId = new Map(data.nodes.map((n) => [n.id, n]));
  const plain = data.edges.filter((e) => !e.mtls);
  if (!plain.length) {
    return h("p", { class: "muted", dataset: { test: "no-plaintext" } }, "Every edge here is mTLS.");
  }
  return h(
    "ul",
    { class: "plaintext-list", dataset: { test: "plaintext-edges" } },
    plain.map((e) =>
      h("li", {
        dataset: {
          test: "plaintext-edge",
          from: byId.get(e.from)?.name ?? e.from,
          to: byId.get(e.to)?.name ?? e.to,
        },
      }, `${byId.get(e.from)?.name ?? e.from} → ${byId.get(e.to)?.name ?? e.to}: not mTLS, ${e.noTlsText}`)
    ),
  );
}

export async function render(root, params, signal) {
  ensureStyles();
  const ns = params.ns ?? "";
  const window = WINDOWS.includes(params.window) ? params.window : "1m";
  document.title = `Topology${ns ? ` · ${ns}` : ""} · weft`;
  const link = (o) => {
    const q = new URLSearchParams({ ns, window, ...o });
    for (const [k, v] of [...q]) if (!v || (k === "window" && v === "1m")) q.delete(k);
    return `/topology${q.size ? `?${q}` : ""}`;
  };
  root.append(h("h1", {}, "Topology"));
  const nsList = await getJSON("namespaces", {}, signal).catch(() => ({ namespaces: [] }));
  root.append(
    h(
      "div",
      { class: "controls" },
      h(
        "nav",
        { "aria-label": "Namespaces", class: "segmented", dataset: { test: "namespace-links" } },
        h("a", { href: link({ ns: "" }), "aria-current": ns === "" ? "true" : undefined }, "all"),
        nsList.namespaces.filter((n) => n.meshed > 0 || n.name === ns).map((n) =>
          h("a", { href: link({ ns: n.name }), "aria-current": n.name === ns ? "true" : undefined }, n.name)
        ),
      ),
      h(
        "nav",
        { "aria-label": "Window", class: "segmented" },
        WINDOWS.map((w) =>
          h("a", { href: link({ window: w }), "aria-current": w === window ? "true" : undefined }, w)
        ),
      ),
    ),
  );
  root.append(
    h(
      "p",
      { class: "legend muted", dataset: { test: "topology-legend" } },
      "Width: requests per second. Colour: success rate (green ≥ 99%, amber ≥ 95%, red below; grey: TCP only). ",
      "Dashed and labelled “failing”: below 99%. Dotted and labelled “no mTLS”: not mutually authenticated, with the reason. ",
      "Boxes link to the workload.",
    ),
  );
  const figure = h("figure", { class: "topology", dataset: { test: "topology" } });
  const status = h("p", {
    class: "muted",
    role: "status",
    "aria-live": "polite",
    dataset: { test: "topology-status" },
  });
  const plain = h("section", { "aria-label": "Edges that are not mTLS" });
  root.append(figure, status, h("h2", {}, "Not mTLS"), plain);

  const refresh = async () => {
    let data;
    try {
      data = await getJSON("topology", { ns, window }, signal);
    } catch (e) {
      if (signal.aborted) return;
      status.replaceChildren(errorBox(e.message, "topology-error"));
      return;
    }
    if (signal.aborted) return;
    // Keep keyboard focus on the same edge or node across a redraw.
    const focused = document.activeElement?.closest?.("[data-test=edge],[data-test=node]");
    const key = focused
      ? `${focused.dataset.test}|${focused.dataset.from ?? focused.dataset.name}|${
        focused.dataset.to ?? focused.dataset.namespace
      }`
      : "";
    figure.replaceChildren(
      data.nodes.length ? draw(data, ns === "") : h(
        "p",
        { dataset: { test: "topology-empty" } },
        `No edges seen in the last ${data.window}${ns ? ` in ${ns}` : ""}.`,
      ),
    );
    if (key) {
      for (const el of figure.querySelectorAll("[data-test=edge],[data-test=node]")) {
        const k = `${el.dataset.test}|${el.dataset.from ?? el.dataset.name}|${
          el.dataset.to ?? el.dataset.namespace
        }`;
        if (k === key) el.focus();
      }
    }
    plain.replaceChildren(plaintextList(data));
    status.replaceChildren(
      `${data.nodes.length} workloads, ${data.edges.length} edges over the last ${data.window}; updated ${
        new Date().toLocaleTimeString()
      }.`,
    );
  };
  // One refresh at a time: the next is scheduled after the last answered, however slow the store is.
  let timer;
  const loop = async () => {
    await refresh();
    if (!signal.aborted) timer = setTimeout(loop, REFRESH_MS);
  };
  signal.addEventListener("abort", () => clearTimeout(timer), { once: true });
  await loop();
}
