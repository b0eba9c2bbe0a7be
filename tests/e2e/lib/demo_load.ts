/**
 * The demo's HTTP/1 (web-load -> web -> api), gRPC and TCP services with their load clients, deployed into a
 * test's namespace at a fixed rate and bounded in time, and what the clients themselves counted (each load pod
 * serves demo_client_requests_total{result} on LOAD_PORT): the fault tests assert on these counts.
 */
import { parseAllDocuments } from "yaml";
import { apply, type Json, kjson, rolloutStatus } from "./kube.ts";
import { parseMetrics, sum } from "./prom.ts";
import { waitFor } from "./wait.ts";

const DEMO = new URL("../../../manifests/examples/demo/", import.meta.url).pathname;
export const LOAD_PORT = 9990;

async function readDemo(file: string): Promise<Json[]> {
  return parseAllDocuments(await Deno.readTextFile(`${DEMO}${file}`)).map((d) => d.toJSON()).filter((d) => d);
}

/** The demo's objects, its load clients at `rate` requests/s each, stopping by themselves after `durationS`. */
export async function demoObjects(rate: number, durationS: number): Promise<Json[]> {
  const docs = [
    ...await readDemo("http.yaml"),
    ...await readDemo("grpc.yaml"),
    ...await readDemo("tcp.yaml"),
  ];
  for (const d of docs) {
    if (d.kind !== "Deployment") continue;
    for (const c of d.spec.template.spec.containers) {
      if (!c.env?.some((e: Json) => e.name === "MODE")) continue;
      c.env = c.env.filter((e: Json) => e.name !== "RATE" && e.name !== "DURATION_S");
      c.env.push({ name: "RATE", value: String(rate) }, { name: "DURATION_S", value: String(durationS) });
    }
  }
  return docs;
}

export interface LoadCounts {
  [mode: string]: { success: number; failure: number; skipped: number };
}

/** What each load client counted so far, by mode (http, grpc, tcp: the pod's app label without -load). */
export async function loadCounts(loadPods: Json[]): Promise<LoadCounts> {
  const out: LoadCounts = {};
  for (const p of loadPods) {
    const res = await fetch(`http://${p.status.podIP}:${LOAD_PORT}/metrics`, {
      signal: AbortSignal.timeout(5000),
    });
    const m = parseMetrics(await res.text());
    const mode = p.metadata.labels.app.replace(/-load$/, "");
    out[mode] = {
      success: sum(m, "demo_client_requests_total", { result: "success" }),
      failure: sum(m, "demo_client_requests_total", { result: "failure" }),
      skipped: sum(m, "demo_client_requests_total", { result: "skipped" }),
    };
  }
  return out;
}

export function delta(a: LoadCounts, b: LoadCounts): LoadCounts {
  return Object.fromEntries(
    Object.keys(b).map((k) => [k, {
      success: b[k].success - (a[k]?.success ?? 0),
      failure: b[k].failure - (a[k]?.failure ?? 0),
      skipped: b[k].skipped - (a[k]?.skipped ?? 0),
    }]),
  );
}

export function fmtCounts(c: LoadCounts): string {
  return Object.entries(c).map(([k, v]) =>
    `${k} ${v.success} ok / ${v.failure} failed${v.skipped ? ` / ${v.skipped} skipped` : ""}`
  ).join(", ");
}

/**
 * Applies the demo into `ns`, waits for its rollouts, for every load client to carry 20 successful requests,
 * and then for a 10 s window without a new failure (start-up failures — a client's first connections before
 * its server's endpoints are known — are not the fault's). Returns the three load pods.
 */
export async function startDemoLoad(
  ns: string,
  rate: number,
  durationS: number,
  /** Changes the demo's objects before they are applied (e.g. where each Deployment's pods run). */
  edit?: (docs: Json[]) => void,
): Promise<Json[]> {
  const docs = await demoObjects(rate, durationS);
  edit?.(docs);
  await apply(ns, JSON.stringify({ apiVersion: "v1", kind: "List", items: docs }));
  const deployments = docs.filter((d) => d.kind === "Deployment").map((d) => d.metadata.name as string);
  await Promise.all(deployments.map((d) => rolloutStatus(ns, `deployment/${d}`, 240_000)));
  const pods = ((await kjson(["-n", ns, "get", "pods", "-l", "app.kubernetes.io/part-of=weft-demo"]))
    .items as Json[])
    .filter((p) => p.status?.phase === "Running" && !p.metadata.deletionTimestamp);
  const loadPods = pods.filter((p) => p.metadata.labels?.["demo.weft.io/role"] === "load");
  if (loadPods.length !== 3) {
    throw new Error(`expected 3 load clients (HTTP/1, gRPC, TCP), got ${loadPods.length}`);
  }
  await waitFor("every load client to carry 20 successful requests", async () => {
    const c = await loadCounts(loadPods);
    return Object.values(c).every((v) => v.success >= 20);
  }, {
    timeoutMs: 90_000,
    intervalMs: 2_000,
    describe: async () => fmtCounts(await loadCounts(loadPods)),
  });
  let window = await loadCounts(loadPods);
  await waitFor("a 10 s window without a failed request", async () => {
    await new Promise((r) => setTimeout(r, 10_000));
    const now = await loadCounts(loadPods);
    const quiet = Object.values(delta(window, now)).every((v) => v.failure === 0 && v.success > 0);
    window = now;
    return quiet;
  }, { timeoutMs: 90_000, intervalMs: 0, describe: () => fmtCounts(window) });
  return loadPods;
}
