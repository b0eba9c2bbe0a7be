/**
 * `deno task bench:dashboard [--runs 5]`: how fast the dashboard shows its data, in a real headless Chromium
 * (Debian's package) at 1280×800, on the cluster in KUBECONFIG with the demo running (`deno task demo`), reached
 * through `weft dashboard --port 0` (its port-forward). Per page and run, from a cold start (a new browser context,
 * HTTP cache disabled):
 *
 *   meaningful paint   ms from navigation start (performance.timeOrigin) to the first animation frame in which the
 *                      page's main data is in the DOM: the overview's first service row, the workload page's
 *                      first chart line (a path with a line segment: its series arrived and was drawn)
 *   FCP                the browser's first-contentful-paint entry (the shell's first text)
 *   bytes              encoded bytes received (headers included, from the DevTools Network events) until the
 *                      meaningful paint, and in the first 3 s (the page's refreshes included)
 *
 * and prints the median and range of each. Read-only: nothing is changed on the cluster.
 */
import {
  launchBrowser,
  meaningfulPaintMs,
  NetworkBytes,
  type PaintTimes,
  watchMeaningfulPaint,
} from "../e2e/lib/browser.ts";
import { DEMO_NS, demoNotRunning, openDashboard, Pages, Sel } from "../e2e/lib/dashboard.ts";
import { requireMesh } from "../e2e/lib/kube.ts";
import { sleep } from "../e2e/lib/wait.ts";
import { formatSpread, spread } from "./spread.ts";

const SETTLE_MS = 3_000;

interface Target {
  name: string;
  path: string;
  /** The element whose arrival is the meaningful paint. */
  selector: string;
}

const TARGETS: Target[] = [
  { name: "overview", path: Pages.overview, selector: Sel.serviceRow },
  // A chart line: a path inside a chart whose `d` has a line-to (lib/chart.js draws even a lone point as a stub).
  { name: "workload (web)", path: Pages.workload("web"), selector: `${Sel.chart} path[d*="L"]` },
];

interface Run {
  paint: PaintTimes;
  bytesToPaint: number;
  bytesSettled: number;
  requests: number;
}

function parseArgs(argv: string[]): { runs: number } {
  const out = { runs: 5 };
  for (let i = 0; i < argv.length; i++) {
    const v = Number(argv[i + 1]);
    if (argv[i] === "--runs" && Number.isInteger(v) && v >= 3 && v <= 50) out.runs = v, i++;
    else throw new Error(`unexpected argument ${argv[i]} (--runs 3..50)`);
  }
  return out;
}

const { runs } = parseArgs(Deno.args);
await requireMesh();
const missing = await demoNotRunning();
if (missing.length) {
  throw new Error(`the demo is not running in ${DEMO_NS} (${missing.join(", ")}): deno task demo`);
}

const abort = AbortSignal.timeout(10 * 60_000);
const pf = await openDashboard(abort);
const session = await launchBrowser({ signal: abort });
try {
  const chromium = await session.browser.version();
  console.log(
    `dashboard paint benchmark: ${pf.url} (${pf.via}), ${chromium}, 1280×800, ${runs} cold runs`,
  );
  for (const target of TARGETS) {
    const results: Run[] = [];
    for (let i = 0; i < runs; i++) {
      const ctx = await session.browser.createBrowserContext();
      try {
        const page = await ctx.newPage();
        await page.setViewport({ width: 1280, height: 800 });
        const net = await NetworkBytes.attach(page);
        await watchMeaningfulPaint(page, target.selector);
        const res = await page.goto(pf.url + target.path, { waitUntil: "domcontentloaded", timeout: 20_000 });
        if (!res || res.status() !== 200) throw new Error(`${target.path}: HTTP ${res?.status()}`);
        const paint = await meaningfulPaintMs(page, 30_000, target.selector);
        const bytesToPaint = net.total();
        await sleep(Math.max(0, SETTLE_MS - paint.meaningfulMs));
        results.push({ paint, bytesToPaint, bytesSettled: net.total(), requests: net.requests() });
      } finally {
        await ctx.close();
      }
    }
    console.log(`\n${target.name}  (${target.path}; meaningful = first frame with ${target.selector})`);
    const line = (label: string, values: number[], unit: string, digits = 0) =>
      console.log(
        `  ${label.padEnd(26)} ${formatSpread(spread(`${target.name} ${label}`, values), unit, digits)}`,
      );
    line("meaningful paint", results.map((r) => r.paint.meaningfulMs), "ms");
    line("first contentful paint", results.map((r) => r.paint.fcpMs), "ms");
    line("bytes to meaningful paint", results.map((r) => r.bytesToPaint / 1024), "KiB", 1);
    line(`bytes in first ${SETTLE_MS / 1000} s`, results.map((r) => r.bytesSettled / 1024), "KiB", 1);
    line(`requests in first ${SETTLE_MS / 1000} s`, results.map((r) => r.requests), "");
  }
} finally {
  await session.close();
  await pf.close();
}
