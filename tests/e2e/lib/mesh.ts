/**
 * What the tests read from the mesh itself: a pod's proxy container, its admin endpoints (/ready, /metrics on
 * 4191, reachable from the host through the pod network) and its log.
 */
import { type Json, logs } from "./kube.ts";
import { type Sample, scrape, sum } from "./prom.ts";
import { INIT_CONTAINER, PROXY_ADMIN_PORT, PROXY_CONTAINER } from "./workloads.ts";
import { waitFor } from "./wait.ts";

export interface Injected {
  init: Json;
  proxy: Json;
  /** The proxy runs as a native sidecar: an init container with restartPolicy Always. */
  native: boolean;
}

/** The injected containers of a pod, or a message saying what is missing. */
export function injectedContainers(pod: Json): Injected | string {
  const inits: Json[] = pod.spec?.initContainers ?? [];
  const init = inits.find((c) => c.name === INIT_CONTAINER);
  const nativeProxy = inits.find((c) => c.name === PROXY_CONTAINER);
  const plainProxy = (pod.spec?.containers ?? []).find((c: Json) => c.name === PROXY_CONTAINER);
  const names = `init containers [${inits.map((c) => c.name).join(", ")}], containers [${
    (pod.spec?.containers ?? []).map((c: Json) => c.name).join(", ")
  }]`;
  if (!init) return `pod ${pod.metadata.name} has no ${INIT_CONTAINER}: ${names}`;
  const proxy = nativeProxy ?? plainProxy;
  if (!proxy) return `pod ${pod.metadata.name} has no ${PROXY_CONTAINER}: ${names}`;
  return { init, proxy, native: nativeProxy !== undefined };
}

export async function proxyReady(podIp: string): Promise<{ status: number; body: string }> {
  const res = await fetch(`http://${podIp}:${PROXY_ADMIN_PORT}/ready`, { signal: AbortSignal.timeout(3000) });
  return { status: res.status, body: (await res.text()).trim() };
}

export async function proxyMetrics(podIp: string): Promise<Sample[]> {
  return await scrape(podIp, PROXY_ADMIN_PORT);
}

/** Waits until the pod's proxy metrics show `name{match}` summing to at least `min`; returns the scrape. */
export async function waitForMetric(
  podIp: string,
  name: string,
  match: Record<string, string | ((v: string | undefined) => boolean)>,
  min: number,
  timeoutMs = 30_000,
): Promise<Sample[]> {
  let last: Sample[] = [];
  await waitFor(`${name}${JSON.stringify(match)} >= ${min} on the proxy of ${podIp}`, async () => {
    last = await proxyMetrics(podIp);
    return sum(last, name, match) >= min;
  }, {
    timeoutMs,
    describe: () =>
      last.filter((s) => s.name === name).map((s) => `${JSON.stringify(s.labels)} ${s.value}`).join("\n") ||
      `no ${name} series`,
  });
  return last;
}

export async function proxyLog(ns: string, pod: string): Promise<string> {
  return await logs(ns, pod, PROXY_CONTAINER);
}
