// Building DOM without innerHTML: every text from the cluster goes in as a text node, never as markup.

/** h("td", { class: "num", dataset: { test: "x" } }, "text", child…) */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  setAttrs(el, attrs);
  append(el, children);
  return el;
}

const SVG_NS = "http://www.w3.org/2000/svg";

/** The same for SVG elements (the charts). */
export function s(tag, attrs = {}, ...children) {
  const el = document.createElementNS(SVG_NS, tag);
  setAttrs(el, attrs);
  append(el, children);
  return el;
}

function setAttrs(el, attrs) {
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "dataset") { for (const [dk, dv] of Object.entries(v)) el.dataset[dk] = String(dv); }
    else el.setAttribute(k, v === true ? "" : String(v));
  }
}

function append(el, children) {
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

/** A table in a horizontally scrolling wrapper (narrow windows scroll the table, not the page). */
export function table(headers, rows, attrs = {}) {
  return h(
    "div",
    { class: "table-wrap" },
    h(
      "table",
      attrs,
      h(
        "thead",
        {},
        h("tr", {}, headers.map((x) => typeof x === "string" ? h("th", { scope: "col" }, x) : x)),
      ),
      h("tbody", {}, rows),
    ),
  );
}

export function errorBox(message, test = "error") {
  return h("p", { class: "error", role: "alert", dataset: { test } }, message);
}

/** A page section: its heading (labelling it) and a placeholder paragraph until its data arrives. */
export function section(id, title, placeholder) {
  return h(
    "section",
    { "aria-labelledby": id },
    h("h2", { id }, title),
    h("p", { class: "muted" }, placeholder),
  );
}
