// Live tap: requests as the proxies see them, one row per request, from /api/tap/rows (weft tap through the
// dashboard). The filters are the URL's query, so a tap can be linked; `run=1` in a link starts it. Start and
// Stop write the URL without reloading the page; the table keeps the last MAX_ROWS rows; leaving the page
// (or Stop) aborts the request, which ends the tap on the proxies.
import { errorBox, h, table } from "../lib/dom.js";

const MAX_ROWS = 200;
const FIELDS = [
  ["ns", "Namespace", "emojivoto"],
  ["resource", "Resource", "deploy/web"],
  ["to", "To resource", "deploy/emoji"],
  ["path", "Path prefix", "/api"],
  ["method", "Method", "GET"],
  ["status", "Status", "200 or 5xx"],
  ["identity", "Identity contains", "web.emojivoto"],
];
const QUERY_KEYS = [...FIELDS.map(([k]) => k), "toNamespace", "authority", "limit", "duration"];

function ensureStyles() {
  if (document.querySelector("link[data-page-style=live]")) return;
  document.head.append(
    h("link", { rel: "stylesheet", href: "/assets/pages/live.css", dataset: { pageStyle: "live" } }),
  );
}

function tone(status) {
  if (status === undefined) return "bad";
  return status >= 500 ? "bad" : status >= 400 ? "warn" : "good";
}

function ms(us) {
  return us === undefined ? "-" : us >= 1e6 ? `${(us / 1e6).toFixed(2)}s` : `${(us / 1000).toFixed(1)}ms`;
}

function rowElement(r) {
  return h(
    "tr",
    {
      dataset: {
        test: "tap-row",
        id: r.id,
        pod: r.pod,
        direction: r.direction,
        method: r.method,
        path: r.path,
        status: r.status ?? "",
        srcIdentity: r.srcIdentity,
        dstIdentity: r.dstIdentity,
        latencyUs: r.latencyUs ?? "",
        done: r.done ? "true" : "false",
      },
    },
    h("td", {}, r.direction === "inbound" ? "in" : r.direction === "outbound" ? "out" : "?"),
    h("td", {}, r.method),
    h("td", { class: "wrap", title: r.authority }, r.path),
    h("td", { class: `num ${tone(r.status)}` }, r.status ?? "failed"),
    h("td", { class: "num" }, ms(r.latencyUs)),
    h("td", { class: "num" }, r.done ? ms(r.durationUs) : "…"),
    h("td", {}, r.src),
    h("td", {}, r.dst),
    h("td", { class: "wrap" }, r.srcIdentity || "-"),
    h("td", { class: "wrap" }, r.dstIdentity || "-"),
    h("td", {}, r.tls === "true" ? "mTLS" : r.tls || "-"),
    h("td", {}, r.pod),
  );
}

function endText(e) {
  const why = {
    limit: "the request limit was reached",
    "pods-ended": "every pod's tap ended",
    duration: "the time limit was reached",
    refused: `the tap API refused it (HTTP ${e.status}): ${e.message}`,
    error: `it failed: ${e.message ?? "error"}`,
  }[e.reason] ?? e.reason;
  return `Stopped: ${why}. ${e.rows} row update(s)${
    e.dropped ? `, ${e.dropped} dropped because the page was slow` : ""
  }.`;
}

export function render(root, params, signal) {
  ensureStyles();
  document.title = "Live tap · weft";
  root.append(h("h1", {}, "Live tap"));
  const inputs = {};
  const form = h(
    "form",
    { class: "tap-form", dataset: { test: "tap-form" }, role: "search" },
    FIELDS.map(([k, label, example]) => {
      inputs[k] = h("input", {
        name: k,
        value: params[k] ?? "",
        placeholder: example,
        autocomplete: "off",
        spellcheck: "false",
        dataset: { test: `tap-filter-${k}` },
      });
      return h("label", {}, label, inputs[k]);
    }),
  );
  const button = h("button", { type: "submit", dataset: { test: "tap-toggle" } }, "Start");
  form.append(button);
  const status = h("p", {
    class: "muted",
    role: "status",
    "aria-live": "polite",
    dataset: { test: "tap-status" },
  }, "Name a resource (deploy/NAME, po/NAME or ns/NAME) and start.");
  const problems = h("ul", { class: "error-list", dataset: { test: "tap-errors" } });
  const tbody = h("tbody", {});
  const tableWrap = table(
    [
      "Dir",
      "Method",
      "Path",
      h("th", { scope: "col", class: "num" }, "Status"),
      h("th", { scope: "col", class: "num" }, "Latency"),
      h("th", { scope: "col", class: "num" }, "Duration"),
      "Source",
      "Destination",
      "Source identity",
      "Destination identity",
      "TLS",
      "Seen by",
    ],
    [],
    { class: "tap-table", dataset: { test: "tap-table" } },
  );
  tableWrap.querySelector("tbody").replaceWith(tbody);
  root.append(form, status, problems, tableWrap);

  let running;
  const byKey = new Map();

  const upsert = (r) => {
    const key = `${r.pod} ${r.id}`;
    const el = rowElement(r);
    const old = byKey.get(key);
    if (old) old.replaceWith(el);
    else {
      tbody.prepend(el);
      while (tbody.childElementCount > MAX_ROWS) {
        const last = tbody.lastElementChild;
        byKey.delete(`${last.dataset.pod} ${last.dataset.id}`);
        last.remove();
      }
    }
    byKey.set(key, el);
  };

  const query = () => {
    const q = new URLSearchParams();
    for (const [k] of FIELDS) if (inputs[k].value.trim()) q.set(k, inputs[k].value.trim());
    // Keep what a link carried that has no field here (limit, duration, authority, toNamespace).
    for (const k of QUERY_KEYS) {
      if (!q.has(k) && params[k] && !FIELDS.some(([f]) => f === k)) q.set(k, params[k]);
    }
    return q;
  };

  const setUrl = (q, run) => {
    if (signal.aborted) return; // the viewer went to another page: its URL is not ours to rewrite
    const u = new URLSearchParams(q);
    if (run) u.set("run", "1");
    history.replaceState(null, "", `/tap${u.size ? `?${u}` : ""}`);
  };

  const stop = (why) => {
    if (!running) return;
    running.abort();
    running = undefined;
    button.textContent = "Start";
    if (why) status.textContent = why;
    setUrl(query(), false);
  };

  const start = async () => {
    const q = query();
    setUrl(q, true);
    const ac = new AbortController();
    running = ac;
    button.textContent = "Stop";
    problems.replaceChildren();
    tbody.replaceChildren();
    byKey.clear();
    status.textContent = `Tapping ${q.get("resource") ?? "?"}${
      q.get("ns") ? ` in ${q.get("ns")}` : ""
    }… waiting for requests.`;
    let res;
    try {
      res = await fetch(`/api/tap/rows?${q}`, {
        signal: ac.signal,
        headers: { Accept: "application/x-ndjson" },
      });
    } catch (e) {
      if (!ac.signal.aborted) stop(`The tap could not start: ${e.message}`);
      return;
    }
    if (!res.ok) {
      const text = await res.text().catch(() => "");
      let msg = text;
      try {
        msg = JSON.parse(text).error ?? text;
      } catch { /* plain text */ }
      problems.replaceChildren(errorBox(msg, "tap-error"));
      stop(`The tap was refused (HTTP ${res.status}).`);
      return;
    }
    const reader = res.body.getReader();
    const dec = new TextDecoder();
    let buf = "";
    let rows = 0;
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buf += dec.decode(value, { stream: true });
        let nl;
        while ((nl = buf.indexOf("\n")) >= 0) {
          const line = buf.slice(0, nl).trim();
          buf = buf.slice(nl + 1);
          if (!line) continue;
          const msg = JSON.parse(line);
          if (msg.row) {
            upsert(msg.row);
            rows++;
            status.textContent = `Tapping: ${byKey.size} request(s) shown (the last ${MAX_ROWS} are kept).`;
          } else if (msg.error) {
            problems.append(
              h(
                "li",
                { class: "bad", dataset: { test: "tap-pod-error" } },
                `${msg.error.pod}: ${msg.error.message}`,
              ),
            );
          } else if (msg.end) {
            if (msg.end.reason === "refused") {
              problems.replaceChildren(errorBox(msg.end.message, "tap-error"));
            }
            stop(endText(msg.end));
            return;
          }
        }
      }
      stop(`The stream ended after ${rows} row update(s).`);
    } catch (e) {
      if (!ac.signal.aborted) stop(`The tap failed: ${e.message}`);
    }
  };

  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    if (running) stop("Stopped.");
    else start();
  });
  signal.addEventListener("abort", () => running?.abort(), { once: true });
  if (params.run === "1" && params.resource) start();
}
