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

export interface ActiveTarget {
  labels: Record<string, string>;
  scrapeUrl: string;
  health: "up" | "down" | "unknown";
  lastError?: string;
}

/** Judges the targets: any down fails (named, with the error); only not-yet-scraped ones warn. */
export function judgeTargets(targets: ActiveTarget[]): { outcome: "ok" | "warn" | "fail"; detail: string } {
  const byJob = new Map<string, { up: number; all: number }>();
  for (const t of targets) {
    const j = byJob.get(t.labels.job ?? "?") ?? { up: 0, all: 0 };
    j.all++;
    if (t.health === "up") j.up++;
    byJob.set(t.labels.job ?? "?", j);
  }
  const summary = [...byJob].map(([job, n]) => `${job} ${n.up}/${n.all}`).join(", ");
  const down = targets.filter((t) => t.health === "down");
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
  if (unknown) return { outcome: "warn", detail: `${unknown} target(s) not scraped yet; ${summary}` };
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
  const j = judgeTargets(targets);
  return result(GROUP, "embedded Prometheus", j.outcome, `pod ready; ${j.detail}`);
}
