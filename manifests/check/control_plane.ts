/** The `control plane` checks: each Deployment rolled out, each pod Ready with a certified proxy. */
import { PROXY_CONTAINER } from "../../control/injector/decision.ts";
import { Ports } from "../../proto/ports.ts";
import { podTrouble, rolledOut } from "../deploy.ts";
import { type Manifest, objectPath } from "../kinds.ts";
import { NAMESPACE } from "../render.ts";
import { isPodReady, type Obj, podContainers } from "./objects.ts";
import { type CheckContext, type CheckResult, result } from "./result.ts";

const GROUP = "control plane";

/** The proxy's certificate expiry from its /metrics (Unix seconds), if it reports one. */
export function certExpiryFromMetrics(text: string): number | undefined {
  const m = /^identity_cert_expiration_timestamp_seconds(?:\{[^}]*\})?\s+([0-9.e+]+)/m.exec(text);
  const v = m ? Number(m[1]) : NaN;
  return Number.isFinite(v) && v > 0 ? v : undefined;
}

export async function checkDeployment(ctx: CheckContext, d: Manifest): Promise<CheckResult> {
  const name = d.metadata.name;
  const live = await ctx.kube.get<Obj>(objectPath(d));
  if (!live) return result(GROUP, name, "fail", "Deployment does not exist");
  const want = live.spec?.replicas ?? 1;
  const done = rolledOut(live);
  return result(
    GROUP,
    name,
    done ? "ok" : "fail",
    `${live.status?.availableReplicas ?? 0}/${want} available${done ? "" : ", rollout not complete"}`,
  );
}

/** Control-plane pods worth checking: not finished (Jobs) and not being deleted. */
export function livePods(pods: Obj[]): Obj[] {
  return pods.filter((p) => p.status?.phase !== "Succeeded" && !p.metadata.deletionTimestamp);
}

export function podCheckName(p: Obj): string {
  return `pod ${p.metadata.name}`;
}

/** A control-plane pod: Ready, with a proxy that answers /ready and reports its certificate. */
export async function checkControlPlanePod(ctx: CheckContext, p: Obj): Promise<CheckResult> {
  const name = podCheckName(p);
  const { spec, status } = podContainers(p);
  if (!spec.some((c: Obj) => c.name === PROXY_CONTAINER)) {
    return result(GROUP, name, "fail", `has no ${PROXY_CONTAINER} container`);
  }
  if (!isPodReady(p)) return result(GROUP, name, "fail", podTrouble(p));
  const ready = await ctx.kube.podProxy(NAMESPACE, p.metadata.name, Ports.proxyAdmin, "/ready");
  if (ready.status !== 200) {
    return result(GROUP, name, "fail", `proxy /ready: HTTP ${ready.status} ${ready.text.trim()}`);
  }
  const metrics = await ctx.kube.podProxy(NAMESPACE, p.metadata.name, Ports.proxyAdmin, "/metrics");
  const exp = metrics.status === 200 ? certExpiryFromMetrics(metrics.text) : undefined;
  const restarts = status.reduce((n: number, c: Obj) => n + (c.restartCount ?? 0), 0);
  return result(
    GROUP,
    name,
    exp === undefined ? "warn" : "ok",
    `ready, ${spec.length} containers, proxy certified` +
      (exp === undefined
        ? " (it reports no identity_cert_expiration_timestamp_seconds)"
        : `, certificate expires in ${((exp - ctx.now / 1000) / 3600).toFixed(1)}h`) +
      (restarts ? `, ${restarts} restarts` : ""),
  );
}
