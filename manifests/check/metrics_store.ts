/**
 * The `metrics store` check: what ConfigMap weft-metrics records, and for the embedded Prometheus that its
 * Deployment is rolled out with a Ready pod and that every target it scrapes answers (its own /api/v1/targets,
 * through the API server's service proxy, as the CLI reaches it). An external store is named, not probed: the
 * API server cannot be assumed to reach it.
 */
import { METRICS_CONFIGMAP, PROMETHEUS_API_PROXY_PATH, PROMETHEUS_DEPLOYMENT } from "../metrics/store.ts";
import { readMetricsConfigMap } from "../metrics/store.ts";
import { rolledOut } from "../deploy.ts";
import { NAMESPACE } from "../render.ts";
import type { Obj } from "./objects.ts";
import { type CheckContext, type CheckResult, result } from "./result.ts";

const GROUP = "metrics store";
/** Down targets looked up by pod, at most (a check must stay quick when many are down). */
const MAX_POD_LOOKUPS = 20;

export interface ActiveTarget {
  labels: Record<string, string>;
  scrapeUrl: string;
  health: "up" | "down" | "unknown";
  lastError?: string;
}

/** `namespace/pod` of a pod target (the scrape config's labels), or undefined for other targets. */
export function podOf(t: ActiveTarget): string | undefined {
  return t.labels.namespace && t.labels.pod ? `${t.labels.namespace}/${t.labels.pod}` : undefined;
}

/**
 * Judges the targets: any down fails (named, with the error); only not-yet-scraped ones warn, and so do down
 * targets whose pod is `leaving` (deleted or terminating): Prometheus keeps them until its discovery drops them.
 */
export function judgeTargets(
  targets: ActiveTarget[],
  leaving: ReadonlySet<string> = new Set(),
): { outcome: "ok" | "warn" | "fail"; detail: string } {
  const byJob = new Map<string, { up: number; all: number }>();
  for (const t of targets) {
    const j = byJob.get(t.labels.job ?? "?") ?? { up: 0, all: 0 };
    j.all++;
    if (t.health === "up") j.up++;
    byJob.set(t.labels.job ?? "?", j);
  }
  const summary = [...byJob].map(([job, n]) => `${job} ${n.up}/${n.all}`).join(", ");
  const isLeaving = (t: ActiveTarget) => leaving.has(podOf(t) ?? "");
  const down = targets.filter((t) => t.health === "down" && !isLeaving(t));
  const left = targets.filter((t) => t.health === "down" && isLeaving(t)).length;
  if (!targets.some((t) => t.labels.job === "linkerd-proxy")) {
    return { outcome: "fail", detail: `no proxy target discovered (${summary || "no targets"})` };
  }
  if (down.length) {
    const who = down.slice(0, 3).map((t) =>
      `${t.labels.pod ?? t.labels.component ?? t.scrapeUrl} (${t.scrapeUrl}): ${t.lastError ?? "down"}`
    );
    return { outcome: "fail", detail: `${down.length} target(s) down: ${who.join("; ")}; ${summary}` };
  }
  const unknown = targets.filter((t) => t.health === "unknown").length;
  if (unknown || left) {
    const parts = [
      ...(unknown ? [`${unknown} target(s) not scraped yet`] : []),
      ...(left ? [`${left} target(s) of deleted or terminating pods not dropped yet`] : []),
    ];
    return { outcome: "warn", detail: `${parts.join(", ")}; ${summary}` };
  }
  return { outcome: "ok", detail: `every target up: ${summary}` };
}

export async function checkMetricsStore(ctx: CheckContext): Promise<CheckResult | undefined> {
  const cm = await ctx.kube.get<Obj & { data?: Record<string, string> }>(
    `/api/v1/namespaces/${NAMESPACE}/configmaps/${METRICS_CONFIGMAP}`,
  );
  const store = readMetricsConfigMap(cm?.data);
  if (!store) return undefined;
  if (store.mode === "none") return result(GROUP, "store", "ok", "none installed (--prometheus=none)");
  if (store.mode === "external") {
    return result(GROUP, "store", "ok", `external Prometheus ${store.url} (recorded, not probed)`);
  }
  const d = await ctx.kube.get<Obj>(
    `/apis/apps/v1/namespaces/${NAMESPACE}/deployments/${PROMETHEUS_DEPLOYMENT}`,
  );
  if (!d) {
    return result(GROUP, "embedded Prometheus", "fail", `Deployment ${PROMETHEUS_DEPLOYMENT} does not exist`);
  }
  if (!rolledOut(d)) {
    return result(
      GROUP,
      "embedded Prometheus",
      "fail",
      `${d.status?.availableReplicas ?? 0}/${d.spec?.replicas ?? 1} available, rollout not complete`,
    );
  }
  const r = await ctx.kube.request("GET", `${PROMETHEUS_API_PROXY_PATH}/api/v1/targets`, {
    query: { state: "active" },
  });
  if (r.status !== 200) {
    return result(
      GROUP,
      "embedded Prometheus",
      "fail",
      `pod ready, but /api/v1/targets through the API server answered ${r.status}: ${r.text.slice(0, 200)}`,
    );
  }
  const targets = (JSON.parse(r.text) as { data: { activeTargets: ActiveTarget[] } }).data.activeTargets;
  // A down target whose pod is gone or terminating is the discovery's lag, not a broken proxy.
  const leaving = new Set<string>();
  for (const t of targets.filter((t) => t.health === "down").slice(0, MAX_POD_LOOKUPS)) {
    const key = podOf(t);
    if (!key) continue;
    const [ns, name] = key.split("/");
    const pod = await ctx.kube.get<Obj>(`/api/v1/namespaces/${ns}/pods/${name}`);
    if (!pod || pod.metadata?.deletionTimestamp) leaving.add(key);
  }
  const j = judgeTargets(targets, leaving);
  return result(GROUP, "embedded Prometheus", j.outcome, `pod ready; ${j.detail}`);
}
