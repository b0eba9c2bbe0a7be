// Cluster e2e: the dashboard in a real headless Chromium (Debian's package) against the local cluster with the demo
// running, reached through `weft dashboard --port 0` (its port-forward). Each page is loaded at 1280×800 and at a narrow
// 400×800 window and judged on its rendered DOM: the demo's services with non-zero RPS, the demo's edges on the
// topology, tap rows arriving, the workload page's charts drawn, deep links, keyboard focus and dark mode.
// Screenshots (PNG) go to $WEFT_ARTIFACTS, else a temporary directory; the test prints where.
import assert from "node:assert/strict";
import { type BrowserSession, launchBrowser, type Page, pageEval, waitForExpr } from "./lib/browser.ts";
import {
  type DashboardAccess,
  dashboardRestarts,
  DEMO_EDGES,
  DEMO_NS,
  DEMO_SERVICES,
  ensureDemo,
  openDashboard,
  Pages,
  Sel,
} from "./lib/dashboard.ts";
import { requireMesh } from "./lib/kube.ts";
import {
  INBOUND_AUTHZ,
  INBOUND_ROUTE,
  INBOUND_SERVER,
  ROUTE_MATCH,
  ROUTE_NAME,
  ROUTE_SERVICE,
  type RouteFixture,
  startRouteFixture,
} from "./lib/dashboard_route.ts";

const opts = { sanitizeOps: false, sanitizeResources: false };
/** A dashboard run by hand (tests/e2e/lib/dashboard.ts) has no pod to watch. */
const DASHBOARD_URL_SET = !!Deno.env.get("WEFT_DASHBOARD_URL");
const VIEWPORTS = [{ name: "wide", width: 1280, height: 800 }, { name: "narrow", width: 400, height: 800 }];
/** The dashboard refreshes from Prometheus; RPS needs a couple of scrapes after a page opens. */
const DATA_MS = 30_000;

/** `value` names the demo deployment `name` whatever the page's id form ("web", "weft-demo/web", "deployment/web"). */
const NAMES_EXPR = `((v, name) => v === name || v.endsWith('/' + name))`;

async function artefactDir(): Promise<string> {
  const fromEnv = Deno.env.get("WEFT_ARTIFACTS");
  const dir = fromEnv ? `${fromEnv}/dashboard` : await Deno.makeTempDir({ prefix: "weft-dashboard-shots-" });
  await Deno.mkdir(dir, { recursive: true });
  return dir;
}

async function open(page: Page, base: string, path: string): Promise<void> {
  const res = await page.goto(base + path, { waitUntil: "domcontentloaded", timeout: 20_000 });
  assert.ok(res, `no response for ${path}`);
  assert.equal(res.status(), 200, `${path}: HTTP ${res.status()}`);
}

async function shot(page: Page, dir: string, name: string): Promise<void> {
  await page.screenshot({ path: `${dir}/${name}.png`, fullPage: false });
}

/** Page-side errors (uncaught exceptions, CSP refusals logged as console errors) fail the test. */
function collectErrors(page: Page): string[] {
  const errors: string[] = [];
  page.on("pageerror", (e) => errors.push(`pageerror: ${e instanceof Error ? e.message : String(e)}`));
  page.on("console", (m) => {
    if (m.type() === "error") errors.push(`console: ${m.text()}`);
  });
  // The console line of a failed load does not name the URL; this does.
  page.on("requestfailed", (r) => {
    const why = r.failure()?.errorText ?? "failed";
    // A navigation or a page leaving aborts its own fetches and streams: not an error.
    if (why !== "net::ERR_ABORTED") errors.push(`request: ${r.method()} ${r.url()}: ${why}`);
  });
  return errors;
}

Deno.test({
  name: "dashboard in headless Chromium: pages, data, deep links, keyboard, dark mode, narrow window",
  ...opts,
  async fn(t) {
    await requireMesh();
    const missing = await ensureDemo();
    assert.deepEqual(missing, [], `the demo is not running in ${DEMO_NS} (run \`deno task demo\`)`);
    const dir = await artefactDir();
    console.log(`dashboard screenshots: ${dir}`);
    // The pages' load must not push the dashboard over its memory limit (it was OOM-killed once, which the
    // browser saw as empty responses).
    const restartsBefore = DASHBOARD_URL_SET ? undefined : await dashboardRestarts();

    const abort = AbortSignal.timeout(300_000);
    let pf: DashboardAccess | undefined;
    let session: BrowserSession | undefined;
    let route: RouteFixture | undefined;
    try {
      // The demo has no route: one of the test's own, started first so its traffic is in the store by its step.
      route = await startRouteFixture();
      pf = await openDashboard(abort);
      console.log(`dashboard at ${pf.url} (${pf.via})`);
      session = await launchBrowser({ signal: abort });
      const base = pf.url;
      const browser = session.browser;

      for (const vp of VIEWPORTS) {
        const page = await browser.newPage();
        const errors = collectErrors(page);
        await page.setViewport({ width: vp.width, height: vp.height });

        for (const [label, path] of [["overview", Pages.overview], ["workloads", Pages.workloads]]) {
          await t.step(
            `${vp.name}: ${label} lists ${DEMO_SERVICES.join(", ")} with non-zero RPS`,
            async () => {
              await open(page, base, path);
              const want = JSON.stringify(DEMO_SERVICES);
              await waitForExpr(
                page,
                `${want}.every((n) => [...document.querySelectorAll('${Sel.serviceRow}')].some((r) =>
                 r.dataset.namespace === '${DEMO_NS}' && ${NAMES_EXPR}(r.dataset.name || '', n) &&
                 Number(r.dataset.rps) > 0))`,
                DATA_MS,
                `service rows for ${want} with data-rps > 0`,
              );
              const rows = await pageEval<{ name: string; rps: number; visible: boolean }[]>(
                page,
                `[...document.querySelectorAll('${Sel.serviceRow}')]
                 .filter((r) => r.dataset.namespace === '${DEMO_NS}').map((r) => ({ name: r.dataset.name,
                 rps: Number(r.dataset.rps), visible: r.getClientRects().length > 0 }))`,
              );
              for (const n of DEMO_SERVICES) {
                const row = rows.find((r) => r.name === n || r.name.endsWith(`/${n}`));
                assert.ok(row?.visible, `${n}'s row is not rendered visibly: ${JSON.stringify(rows)}`);
              }
              await shot(page, dir, `${label}-${vp.name}`);
            },
          );
        }

        await t.step(`${vp.name}: topology draws the demo's edges`, async () => {
          await open(page, base, Pages.topology);
          const want = JSON.stringify(DEMO_EDGES);
          await waitForExpr(
            page,
            `${want}.every(([f, to]) => [...document.querySelectorAll('${Sel.edge}')].some((e) =>
               e.dataset.fromNs === '${DEMO_NS}' && e.dataset.toNs === '${DEMO_NS}' &&
               ${NAMES_EXPR}(e.dataset.from || '', f) && ${NAMES_EXPR}(e.dataset.to || '', to) &&
               Number(e.dataset.rps) > 0))`,
            DATA_MS,
            `edges ${want} with data-rps > 0`,
          );
          const edges = await pageEval<{ from: string; to: string; mtls: string; drawn: boolean }[]>(
            page,
            `[...document.querySelectorAll('${Sel.edge}')].filter((e) => e.dataset.fromNs === '${DEMO_NS}' &&
               e.dataset.toNs === '${DEMO_NS}').map((e) => ({ from: e.dataset.from, to: e.dataset.to,
               mtls: e.dataset.mtls, drawn: e.getBoundingClientRect().width + e.getBoundingClientRect().height > 0 }))`,
          );
          for (const [from, to] of DEMO_EDGES) {
            const e = edges.find((x) =>
              (x.from === from || x.from.endsWith(`/${from}`)) && (x.to === to || x.to.endsWith(`/${to}`))
            );
            assert.ok(e?.drawn, `edge ${from} → ${to} has no drawn shape: ${JSON.stringify(edges)}`);
            // The demo is meshed end to end: every one of its edges is mTLS.
            assert.equal(e.mtls, "true", `edge ${from} → ${to} is not marked mTLS: ${JSON.stringify(e)}`);
          }
          const nodes = await pageEval<string[]>(
            page,
            `[...document.querySelectorAll('${Sel.node}')].filter((n) => n.dataset.namespace === '${DEMO_NS}')
               .map((n) => n.dataset.name)`,
          );
          for (const name of new Set(DEMO_EDGES.flat())) {
            assert.ok(nodes.includes(name), `no node for ${DEMO_NS}/${name}: ${nodes}`);
          }
          await shot(page, dir, `topology-${vp.name}`);
        });

        await t.step(`${vp.name}: the tap table receives rows within a few seconds`, async () => {
          await open(page, base, Pages.tap);
          const t0 = Date.now();
          await waitForExpr(
            page,
            `document.querySelectorAll('${Sel.tapRow}').length >= 3`,
            15_000,
            "3 tap rows",
          );
          console.log(`  tap: 3 rows after ${Date.now() - t0} ms`);
          await shot(page, dir, `tap-${vp.name}`);
        });

        await t.step(`${vp.name}: a deep link opens the workload page with its charts drawn`, async () => {
          // Loaded directly, not navigated to: the shell must route the URL it was opened at. A line needs two
          // data points (a lone point is drawn as a short stub: two x values, so three distinct x values mean
          // two points); right after a deploy the store may hold one step only, so the page is reloaded until
          // it has more (the page draws its charts once per load).
          const twoPointLines = `[...document.querySelectorAll('${Sel.chart} path')].filter((p) =>
               new Set(((p.getAttribute('d') || '').match(/[ML][\\d.-]+/g) || []).map((c) => c.slice(1))).size >= 3)
               .length >= 2`;
          const deadline = Date.now() + 120_000;
          for (;;) {
            await open(page, base, Pages.workload("web"));
            try {
              await waitForExpr(page, twoPointLines, 15_000, "2 chart lines with 2 or more points");
              break;
            } catch (e) {
              if (Date.now() > deadline) throw e;
            }
          }
          const view = await pageEval<{ path: string; title: string; current: string }>(
            page,
            `({ path: location.pathname,
                title: (document.querySelector('${Sel.workloadTitle}') || {}).textContent || '',
                current: (document.querySelector('${Sel.navLink}[aria-current=page]') || {}).textContent || '' })`,
          );
          assert.equal(view.path, Pages.workload("web"), "the shell rewrote the deep link");
          assert.equal(view.title.trim(), "web", "the workload page's title does not name the workload");
          assert.equal(
            view.current.trim(),
            "Workloads",
            "the nav does not mark Workloads as the current page",
          );
          await shot(page, dir, `workload-${vp.name}`);
        });

        await t.step(
          `${vp.name}: the route page shows the route's charts, rule, parent and policy`,
          async () => {
            await routePageStep(page, base, route!, dir, vp.name);
          },
        );

        await t.step(
          `${vp.name}: a Gateway API route on a Server: in the workload's policy, inbound route page`,
          async () => {
            await inboundRouteStep(page, base, route!, dir, vp.name);
          },
        );

        await t.step(`${vp.name}: graph and charts fit their boxes, edge labels do not crowd`, async () => {
          await fitStep(page, base, dir, vp.name);
        });

        await t.step(`${vp.name}: no horizontal scrolling of the page`, async () => {
          await open(page, base, Pages.overview);
          await waitForExpr(page, `document.querySelector('${Sel.serviceRow}')`, DATA_MS, "a service row");
          const w = await pageEval<number>(page, `document.documentElement.scrollWidth`);
          assert.ok(w <= vp.width + 1, `the page is ${w} px wide in a ${vp.width} px window`);
        });

        assert.deepEqual(errors, [], `errors in the page at ${vp.name}`);
        await page.close();
      }

      const page = await browser.newPage();
      await page.setViewport({ width: 1280, height: 800 });

      await t.step("keyboard: Tab reaches the nav links and the focus is visible", async () => {
        await open(page, base, Pages.overview);
        await waitForExpr(page, `document.querySelector('${Sel.navLink}')`, 10_000, "nav links");
        const navCount = await pageEval<number>(page, `document.querySelectorAll('${Sel.navLink}').length`);
        const reached = new Set<string>();
        for (let i = 0; i < 30 && reached.size < navCount; i++) {
          await page.keyboard.press("Tab");
          const f = await pageEval<{ nav: boolean; href: string; visible: boolean }>(
            page,
            `(() => { const a = document.activeElement; const s = getComputedStyle(a);
               return { nav: !!a.closest('nav') && a.matches('a'), href: a.getAttribute('href') || '',
                 visible: a.matches(':focus-visible') &&
                   ((s.outlineStyle !== 'none' && parseFloat(s.outlineWidth) > 0) || s.boxShadow !== 'none') }; })()`,
          );
          if (!f.nav) continue;
          assert.ok(f.visible, `focus on nav link ${f.href} is not visible (no outline or shadow)`);
          reached.add(f.href);
        }
        assert.equal(reached.size, navCount, `Tab reached ${[...reached]} of ${navCount} nav links`);
        // Enter on the focused link (the last one reached) opens its page.
        const last = [...reached].at(-1) ?? "";
        await page.keyboard.press("Enter");
        await waitForExpr(
          page,
          `location.pathname === ${
            JSON.stringify(last)
          } && document.querySelector('main').dataset.state === 'ready'`,
          10_000,
          `Enter on ${last} opens it`,
        );
        // Only that page: the overview, still loading when Enter came, must not render below it.
        const headings = await pageEval<string[]>(
          page,
          `[...document.querySelectorAll('main h1')].map((h) => h.textContent)`,
        );
        assert.equal(headings.length, 1, `main shows ${headings.length} pages: ${headings.join(", ")}`);
        await shot(page, dir, "keyboard-focus");
      });

      await t.step("dark mode: prefers-color-scheme: dark darkens the background", async () => {
        const luminance = async (scheme: "light" | "dark") => {
          await page.emulateMediaFeatures([{ name: "prefers-color-scheme", value: scheme }]);
          await open(page, base, Pages.overview);
          await waitForExpr(page, `document.querySelector('${Sel.serviceRow}')`, DATA_MS, "a service row");
          await shot(page, dir, `overview-${scheme}`);
          const rgb = await pageEval<number[]>(
            page,
            `(() => { let c;
               // The first of main, body, html with a painted background.
               for (const e of [document.querySelector('main'), document.body, document.documentElement]) {
                 if (!e) continue; c = getComputedStyle(e).backgroundColor;
                 if (c && c !== 'rgba(0, 0, 0, 0)' && c !== 'transparent') break; }
               return (c.match(/[\\d.]+/g) || []).slice(0, 3).map(Number); })()`,
          );
          assert.equal(rgb.length, 3, `no background colour in ${scheme} mode`);
          return 0.2126 * rgb[0] + 0.7152 * rgb[1] + 0.0722 * rgb[2];
        };
        const light = await luminance("light");
        const dark = await luminance("dark");
        assert.ok(
          dark < light - 50,
          `background luminance light ${light.toFixed(0)}, dark ${dark.toFixed(0)}`,
        );
      });
      await page.close();

      if (restartsBefore) {
        await t.step("the dashboard was not restarted while the browser used it", async () => {
          for (const [c, now] of await dashboardRestarts()) {
            const before: number = restartsBefore.get(c)?.restarts ?? 0;
            assert.equal(
              now.restarts,
              before,
              `${c} restarted ${now.restarts - before} times (last: ${now.reason})`,
            );
          }
        });
      }
    } finally {
      await session?.close();
      await pf?.close();
      await route?.close();
      // The forward's own failures (API server, kubelet) explain a failed load in the page.
      const said = (await pf?.stderr())?.split("\n").filter((l) => l && !l.startsWith("forwarding;"));
      if (said?.length) console.log(`weft dashboard said:\n${said.join("\n")}`);
    }
  },
});

/**
 * The route page of the fixture's HTTPRoute, reached from the client workload's route table (the link) and
 * checked as rendered: its charts drawn from the route-labelled metrics, its rule's match and backend, its
 * Service parent accepted, the policy note; the client's pod list links to pod pages.
 */
async function routePageStep(page: Page, base: string, route: RouteFixture, dir: string, vp: string) {
  const ns = route.namespace;
  const linkSel = `[data-test="route-link"][href="${route.page}"]`;
  // The route table reads the store: right after the fixture starts it may have no row yet.
  const deadline = Date.now() + 150_000;
  for (;;) {
    await open(page, base, `/namespaces/${ns}/deployments/api-load`);
    try {
      await waitForExpr(
        page,
        `document.querySelector('${linkSel}')`,
        15_000,
        `a route-table link to ${route.page}`,
      );
      break;
    } catch (e) {
      if (Date.now() > deadline) throw e;
    }
  }
  const pods = await pageEval<string[]>(
    page,
    `[...document.querySelectorAll('[data-test="pod-link"]')].map((a) => a.getAttribute('href'))`,
  );
  assert.ok(
    pods.length === 1 && pods[0].startsWith(`/namespaces/${ns}/pods/api-load-`),
    `the workload page does not link its one pod: ${pods}`,
  );
  await page.click(linkSel);
  const twoPointLines =
    `[...document.querySelectorAll('[data-test="route-charts"][data-direction="outbound"] ${Sel.chart} path')]
    .filter((p) => new Set(((p.getAttribute('d') || '').match(/[ML][\\d.-]+/g) || []).map((c) => c.slice(1))).size >= 3)
    .length >= 2`;
  for (;;) {
    try {
      await waitForExpr(page, twoPointLines, 15_000, "2 route chart lines with 2 or more points");
      break;
    } catch (e) {
      if (Date.now() > deadline) throw e;
      await open(page, base, route.page);
    }
  }
  const v = await pageEval<
    { path: string; title: string; parents: string[]; matches: string[]; backends: string[]; note: boolean }
  >(
    page,
    `({ path: location.pathname,
        title: (document.querySelector('[data-test="route-title"]') || {}).textContent || '',
        parents: [...document.querySelectorAll('[data-test="route-parent"]')].map((r) =>
          r.dataset.kind + '/' + r.dataset.name + ' ' + r.cells[2].textContent),
        matches: [...document.querySelectorAll('[data-test="route-match"]')].map((m) => m.textContent),
        backends: [...document.querySelectorAll('[data-test="route-backend"]')].map((b) => b.dataset.name),
        note: !!document.querySelector('[data-test="route-policy-note"]') })`,
  );
  assert.equal(v.path, route.page, "the route table's link did not open the route page");
  assert.equal(v.title.trim(), ROUTE_NAME);
  assert.deepEqual(v.parents, [`Service/${ROUTE_SERVICE} True (Accepted)`]);
  assert.deepEqual(v.matches, [ROUTE_MATCH]);
  assert.deepEqual(v.backends, [ROUTE_SERVICE]);
  assert.ok(v.note, "no policy note for a route on a Service");
  await shot(page, dir, `route-${vp}`);
}

/**
 * Nothing cut and nothing crowded: the topology's drawing lies inside its viewBox and inside its box (or the box
 * scrolls sideways to it), no shown edge label covers another label or a workload box, and every chart's y-axis
 * label (e.g. "100.00%") lies inside its chart.
 */
async function fitStep(page: Page, base: string, dir: string, vp: string) {
  await open(page, base, Pages.topology);
  await waitForExpr(page, `document.querySelector('${Sel.edge}[data-label]')`, DATA_MS, "edges with labels");
  const topo = await pageEval<{ inViewBox: boolean; inBox: boolean; pans: boolean; crowded: string[] }>(
    page,
    `(() => {
      const svg = document.querySelector('[data-test="topology-graph"]');
      const box = svg.parentElement;
      const bb = svg.getBBox(), vb = svg.viewBox.baseVal;
      const inViewBox = bb.x >= vb.x && bb.y >= vb.y && bb.x + bb.width <= vb.x + vb.width + 0.5 &&
        bb.y + bb.height <= vb.y + vb.height + 0.5;
      const s = svg.getBoundingClientRect(), b = box.getBoundingClientRect();
      const inBox = s.left >= b.left - 0.5 && s.right <= b.right + 0.5;
      const ox = getComputedStyle(box).overflowX;
      const pans = (ox === 'auto' || ox === 'scroll') && box.scrollWidth + 0.5 >= s.width;
      const labels = [...document.querySelectorAll('${Sel.edge} .edge-label')].map((t) => t.getBoundingClientRect());
      const nodes = [...document.querySelectorAll('${Sel.node} rect')].map((r) => r.getBoundingClientRect());
      const hit = (a, c) => a.left < c.right - 1 && c.left < a.right - 1 && a.top < c.bottom - 1 && c.top < a.bottom - 1;
      const crowded = [];
      labels.forEach((a, i) => {
        labels.forEach((c, j) => { if (j > i && hit(a, c)) crowded.push('label ' + i + ' covers label ' + j); });
        nodes.forEach((n, j) => { if (hit(a, n)) crowded.push('label ' + i + ' covers node ' + j); });
      });
      return { inViewBox, inBox, pans, crowded };
    })()`,
  );
  assert.ok(topo.inViewBox, "part of the topology is drawn outside its viewBox (cut)");
  assert.ok(topo.inBox || topo.pans, "the topology is wider than its box and the box does not scroll to it");
  assert.deepEqual(topo.crowded, [], "edge labels crowd");
  await shot(page, dir, `topology-fit-${vp}`);
  await open(page, base, Pages.workload("web"));
  await waitForExpr(page, `document.querySelector('${Sel.chart} .y-label')`, DATA_MS, "chart y-axis labels");
  const cut = await pageEval<string[]>(
    page,
    `[...document.querySelectorAll('${Sel.chart} .y-label')].filter((t) => {
       const r = t.getBoundingClientRect(), s = t.ownerSVGElement.getBoundingClientRect();
       return r.left < s.left - 0.5 || r.right > s.right + 0.5 || r.top < s.top - 0.5 || r.bottom > s.bottom + 0.5;
     }).map((t) => t.textContent)`,
  );
  assert.deepEqual(cut, [], "y-axis labels cut by their chart");
}

/**
 * The fixture's Gateway API HTTPRoute on a Server: the server workload's policy table lists it under its Server
 * (the policy view reads gateway.networking.k8s.io routes) and links its route page, which draws the inbound
 * charts and shows the Server parent and the AuthorizationPolicy that targets the route.
 */
async function inboundRouteStep(page: Page, base: string, route: RouteFixture, dir: string, vp: string) {
  await open(page, base, `/namespaces/${route.namespace}/deployments/api`);
  const link =
    `[data-test="policy-server"][data-name="${INBOUND_SERVER}"] [data-test="policy-route"][data-name="${INBOUND_ROUTE}"][data-group="gateway.networking.k8s.io"] a`;
  await waitForExpr(
    page,
    `document.querySelector('${link}')`,
    DATA_MS,
    `${INBOUND_ROUTE} under ${INBOUND_SERVER}`,
  );
  await page.click(link);
  const lines =
    `[...document.querySelectorAll('[data-test="route-charts"][data-direction="inbound"] ${Sel.chart} path')]
    .filter((p) => new Set(((p.getAttribute('d') || '').match(/[ML][\\d.-]+/g) || []).map((c) => c.slice(1))).size >= 3)
    .length >= 2`;
  const deadline = Date.now() + 90_000;
  for (;;) {
    try {
      await waitForExpr(page, lines, 15_000, "2 inbound route chart lines with 2 or more points");
      break;
    } catch (e) {
      if (Date.now() > deadline) throw e;
      await open(page, base, route.inboundPage);
    }
  }
  const v = await pageEval<{ url: string; parents: string[]; servers: string[]; authz: string[] }>(
    page,
    `({ url: location.pathname + location.search,
        parents: [...document.querySelectorAll('[data-test="route-parent"]')].map((r) => r.dataset.kind + '/' + r.dataset.name),
        servers: [...document.querySelectorAll('[data-test="policy-server"]')].map((r) => r.dataset.name),
        authz: [...document.querySelectorAll('[data-test="route-authorization"]')].map((r) =>
          r.dataset.name + ': ' + r.cells[1].textContent + ' ← ' + r.cells[2].textContent) })`,
  );
  assert.equal(v.url, route.inboundPage, "the policy table's link did not open the inbound route's page");
  assert.deepEqual(v.parents, [`Server/${INBOUND_SERVER}`]);
  assert.deepEqual(v.servers, [INBOUND_SERVER]);
  assert.deepEqual(v.authz, [
    `${INBOUND_AUTHZ}: HTTPRoute ${INBOUND_ROUTE} ← MeshTLSAuthentication/api-load`,
  ]);
  await shot(page, dir, `route-inbound-${vp}`);
}
