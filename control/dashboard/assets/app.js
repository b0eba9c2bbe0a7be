// The single-page router. Every page path loads the same shell; this module maps the path to a page module
// (./pages/<name>.js, exporting `render(root, params, signal)`) and renders it into <main>. Links stay real
// links (they work opened in a new tab or without this router); same-origin clicks are handled here.
// Each navigation aborts the previous page's signal, so its fetches and streams stop.

/** Path shapes → page name and path parameters. The server answers the same shapes (server.ts). */
const ROUTES = [
  { re: /^\/(?:overview)?$/, page: "overview", nav: "overview" },
  { re: /^\/workloads$/, page: "workloads", nav: "workloads" },
  { re: /^\/topology$/, page: "topology", nav: "topology" },
  { re: /^\/tap$/, page: "tap", nav: "tap" },
  {
    re: /^\/namespaces\/([^/]+)\/(deployments|statefulsets|daemonsets|services|pods)\/([^/]+)$/,
    page: "workload",
    nav: "workloads",
    keys: ["ns", "kinds", "name"],
  },
  {
    re: /^\/namespaces\/([^/]+)\/(httproutes|grpcroutes|serviceprofiles)\/([^/]+)$/,
    page: "route",
    nav: "workloads",
    keys: ["ns", "kinds", "name"],
  },
];

/** The route of a location: page name, nav entry and params (path parameters, then the query's). */
export function match(pathname, search) {
  for (const r of ROUTES) {
    const m = r.re.exec(pathname);
    if (!m) continue;
    const params = {};
    for (const [k, v] of new URLSearchParams(search)) params[k] = v;
    (r.keys ?? []).forEach((k, i) => params[k] = decodeURIComponent(m[i + 1]));
    return { page: r.page, nav: r.nav, params };
  }
  return undefined;
}

let current;

async function show() {
  current?.abort();
  const ac = new AbortController();
  current = ac;
  const root = document.getElementById("main");
  const route = match(location.pathname, location.search);
  for (const a of document.querySelectorAll("nav a[data-nav]")) {
    if (route && a.dataset.nav === route.nav) a.setAttribute("aria-current", "page");
    else a.removeAttribute("aria-current");
  }
  root.replaceChildren();
  root.dataset.state = "loading";
  if (!route) {
    root.dataset.page = "";
    const h = document.createElement("h1");
    h.textContent = "Not found";
    root.append(h);
    root.dataset.state = "error";
    return;
  }
  root.dataset.page = route.page;
  try {
    const mod = await import(`./pages/${route.page}.js`);
    // Another navigation came while this page's module loaded: rendering now would add this page below it.
    if (ac.signal.aborted) return;
    // Each render gets its own element: a page still finishing (its awaits resolve after the viewer left)
    // writes into a detached element, never into the page shown now.
    const view = document.createElement("div");
    view.className = "view";
    root.replaceChildren(view);
    await mod.render(view, route.params, ac.signal);
    if (!ac.signal.aborted) root.dataset.state = "ready";
  } catch (e) {
    if (ac.signal.aborted) return;
    root.dataset.state = "error";
    const p = document.createElement("p");
    p.className = "error";
    p.dataset.test = "page-error";
    p.textContent = `This page failed: ${e?.message ?? e}`;
    root.append(p);
  }
}

/** Goes to a same-origin URL without reloading (pages call it for their own controls). */
export function navigate(href, { replace = false } = {}) {
  const url = new URL(href, location.href);
  if (replace) history.replaceState(null, "", url);
  else history.pushState(null, "", url);
  show().then(() => {
    if (!replace) document.getElementById("main")?.focus({ preventScroll: false });
  });
}

document.addEventListener("click", (ev) => {
  if (ev.defaultPrevented || ev.button !== 0 || ev.metaKey || ev.ctrlKey || ev.shiftKey || ev.altKey) return;
  const a = ev.target instanceof Element ? ev.target.closest("a[href]") : null;
  if (!a || a.target || a.hasAttribute("download")) return;
  const url = new URL(a.href, location.href);
  if (
    url.origin !== location.origin || url.pathname.startsWith("/api/") || url.pathname.startsWith("/assets/")
  ) return;
  if (url.hash && url.pathname === location.pathname && url.search === location.search) return;
  ev.preventDefault();
  navigate(url.href);
});

addEventListener("popstate", () => show());
show();
