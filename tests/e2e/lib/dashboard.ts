/**
 * What the dashboard's browser test and paint benchmark share: how the dashboard is reached (`weft dashboard`'s
 * port-forward, as a user opens it — the API server's service proxy would send its own Host, which the
 * dashboard refuses with 421), the demo it is looked at with, and the DOM hooks (`data-test`
 * attributes) its pages expose.
 */
import { CONTROL_PLANE_NS, type Json, kjson } from "./kube.ts";
import { type DashboardProcess, startWeftDashboard } from "./weft_dashboard.ts";

export const DASHBOARD_SERVICE = "weft-dashboard";
export const DEMO_NS = "weft-demo";
/** The demo's request-serving services (tcp carries no requests). */
export const DEMO_SERVICES = ["web", "api", "grpc"] as const;
/** Who calls whom in the demo (manifests/examples/demo), as deployments. */
export const DEMO_EDGES: readonly [string, string][] = [
  ["web-load", "web"],
  ["web", "api"],
  ["grpc-load", "grpc"],
];

/** The pages' data hooks (control/dashboard/assets), in one place so the test and the benchmark agree. */
export const Sel = {
  serviceRow: `[data-test="service-row"]`,
  node: `[data-test="node"]`,
  edge: `[data-test="edge"]`,
  tapRow: `[data-test="tap-row"]`,
  chart: `[data-test="chart"]`,
  workloadTitle: `[data-test="workload-title"]`,
  /** The main navigation's links (the workload page has a window nav of its own). */
  navLink: `[data-test="nav"] a`,
} as const;

export const Pages = {
  overview: "/overview",
  workloads: `/workloads?ns=${DEMO_NS}`,
  topology: `/topology?ns=${DEMO_NS}`,
  /** `run=1` starts the tap the link names (pages/tap.js). */
  tap: `/tap?ns=${DEMO_NS}&resource=deploy/web&run=1`,
  workload: (name: string) => `/namespaces/${DEMO_NS}/deployments/${name}`,
} as const;

/**
 * WEFT_DASHBOARD_URL (a dashboard run by hand, e.g. `deno run -A control/main.ts dashboard --addr=127.0.0.1:18084`
 * while developing the pages), else the cluster's.
 */
const DASHBOARD_URL = Deno.env.get("WEFT_DASHBOARD_URL");

export interface DashboardAccess extends DashboardProcess {
  /** How it is reached, for the output. */
  via: string;
}

/** The dashboard through `weft dashboard`; fails naming what is missing when it is not deployed. */
export async function openDashboard(signal?: AbortSignal): Promise<DashboardAccess> {
  if (DASHBOARD_URL) {
    return {
      url: DASHBOARD_URL.replace(/\/$/, ""),
      close: () => Promise.resolve(),
      stderr: () => Promise.resolve(""),
      via: "WEFT_DASHBOARD_URL",
    };
  }
  try {
    await kjson(["-n", CONTROL_PLANE_NS, "get", "service", DASHBOARD_SERVICE, "-o", "json"]);
  } catch (e) {
    throw new Error(
      `no ${DASHBOARD_SERVICE} Service in ${CONTROL_PLANE_NS}: run \`deno task deploy\` (${
        (e as Error).message
      })`,
    );
  }
  return { ...await startWeftDashboard({ signal }), via: "weft dashboard --port 0" };
}

/** The demo's deployments that are not available (empty when the demo runs). */
export async function demoNotRunning(): Promise<string[]> {
  let items: Json[] = [];
  try {
    items = (await kjson(["-n", DEMO_NS, "get", "deployments", "-o", "json"])).items;
  } catch {
    return [`namespace ${DEMO_NS}`];
  }
  const wanted = [...new Set(DEMO_EDGES.flat())];
  return wanted.filter((name) => {
    const d = items.find((x) => x.metadata.name === name);
    return !d || (d.status?.availableReplicas ?? 0) < 1;
  });
}

const DEMO_MAIN = new URL("../../demo/main.ts", import.meta.url).pathname;

/**
 * Starts the demo as `deno task demo` does when it is not running (a fresh cluster, as in CI: nothing
 * else starts it), then returns what is still missing (empty when it runs).
 */
export async function ensureDemo(): Promise<string[]> {
  if ((await demoNotRunning()).length === 0) return [];
  // It waits for traffic and leaves the demo running.
  const demo = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", DEMO_MAIN, "--window", "5"],
    stdout: "inherit",
    stderr: "inherit",
    signal: AbortSignal.timeout(300_000),
  }).output();
  if (demo.code !== 0) return [`tests/demo/main.ts exited with ${demo.code}`];
  return await demoNotRunning();
}

/** Restarts of the dashboard's containers, by pod/container, with the last termination's reason (e.g. OOMKilled). */
export async function dashboardRestarts(): Promise<Map<string, { restarts: number; reason: string }>> {
  const pods = await kjson([
    "-n",
    CONTROL_PLANE_NS,
    "get",
    "pods",
    "-l",
    "linkerd.io/control-plane-component=dashboard",
    "-o",
    "json",
  ]);
  const out = new Map<string, { restarts: number; reason: string }>();
  for (const p of pods.items as Json[]) {
    for (const c of p.status?.containerStatuses ?? []) {
      out.set(`${p.metadata.name}/${c.name}`, {
        restarts: c.restartCount ?? 0,
        reason: c.lastState?.terminated?.reason ?? "",
      });
    }
  }
  return out;
}
