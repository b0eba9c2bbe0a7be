/**
 * The `multicluster` checks (issue 23), one set per Link of the source cluster, each through the credentials the
 * link stored (what the service mirror and destination use), so a check passes only if they work:
 *
 *   target API        the target's API server answers with the stored kubeconfig
 *   credentials       they may list Services (the remote-access ClusterRole is bound)
 *   trust anchors     the target's anchors share a certificate with this cluster's
 *   service mirror    Deployment weft-service-mirror-<link> rolled out
 *   gateway           (gateway links) gateway_alive from the service mirror's metrics, else a direct probe
 *   mirrored services as many mirrors here as the target exports
 *
 * Used by `weft multicluster check` and by mesh:check when links exist.
 */
import { kubeConfigFromText } from "../../control/k8s/kubeconfig.ts";
import { SERVICE_MIRROR_ADMIN_PORT } from "../../control/multicluster/config.ts";
import { Labels, type LinkObject, parseLink, selectorString } from "../../control/multicluster/link.ts";
import { rolledOut } from "../deploy.ts";
import { Kube } from "../kube.ts";
import { sharedAnchors } from "../multicluster/anchors.ts";
import { MC_NAMESPACE } from "../multicluster/install.ts";
import { CREDENTIALS_KEY } from "../multicluster/link.ts";
import { serviceMirrorName } from "../multicluster/service_mirror.ts";
import { readAnchors } from "../multicluster/mesh_facts.ts";
import { unb64 } from "./objects.ts";
import { type CheckContext, type CheckResult, guarded, result } from "./result.ts";

const GROUP = "multicluster";

/** The Links of the source cluster; none when the CRD or the namespace does not exist. */
export async function listLinks(kube: Kube): Promise<LinkObject[]> {
  const r = await kube.request(
    "GET",
    `/apis/multicluster.linkerd.io/v1alpha2/namespaces/${MC_NAMESPACE}/links`,
  );
  if (r.status === 404) return [];
  if (r.status !== 200) throw new Error(`list Links: HTTP ${r.status}: ${r.text.slice(0, 200)}`);
  return (JSON.parse(r.text) as { items?: LinkObject[] }).items ?? [];
}

/** A Kube for the target built from a credentials Secret's kubeconfig. */
export async function remoteKube(kube: Kube, secretName: string, timeoutMs = 10_000): Promise<Kube> {
  const s = await kube.get<{ data?: Record<string, string> }>(
    `/api/v1/namespaces/${MC_NAMESPACE}/secrets/${secretName}`,
  );
  const data = s?.data?.[CREDENTIALS_KEY];
  if (!data) throw new Error(`no Secret ${MC_NAMESPACE}/${secretName} with a ${CREDENTIALS_KEY} key`);
  return new Kube(kubeConfigFromText(unb64(data), `Secret ${MC_NAMESPACE}/${secretName}`), timeoutMs);
}

/** `gateway_alive{target_cluster_name="<name>"}` and the probe latency sum/count from a metrics text (pure). */
export function gatewayMetrics(text: string, cluster: string): { alive?: boolean; latencyMs?: number } {
  const value = (name: string) => {
    for (const line of text.split("\n")) {
      if (!line.startsWith(name + "{")) continue;
      if (!line.includes(`target_cluster_name="${cluster}"`)) continue;
      const v = Number(line.slice(line.lastIndexOf(" ") + 1));
      if (!Number.isNaN(v)) return v;
    }
    return undefined;
  };
  const alive = value("gateway_alive");
  const sum = value("gateway_probe_latency_ms_sum");
  const count = value("gateway_probe_latency_ms_count");
  return {
    ...(alive !== undefined ? { alive: alive === 1 } : {}),
    ...(sum !== undefined && count ? { latencyMs: sum / count } : {}),
  };
}

interface PodLike {
  metadata: { name: string; labels?: Record<string, string> };
  spec?: { containers?: { name: string; ports?: { name?: string; containerPort: number }[] }[] };
  status?: { phase?: string };
}

/** The service mirror's own metrics (through the API server's pod proxy), or undefined when not readable. */
export async function serviceMirrorMetrics(kube: Kube, cluster: string): Promise<string | undefined> {
  const d = await kube.get<{ spec?: { selector?: { matchLabels?: Record<string, string> } } }>(
    `/apis/apps/v1/namespaces/${MC_NAMESPACE}/deployments/${serviceMirrorName(cluster)}`,
  );
  const sel = Object.entries(d?.spec?.selector?.matchLabels ?? {}).map(([k, v]) => `${k}=${v}`).join(",");
  if (!sel) return undefined;
  const pods = await kube.list<PodLike>(`/api/v1/namespaces/${MC_NAMESPACE}/pods`, { labelSelector: sel });
  for (const p of pods.filter((p) => p.status?.phase === "Running")) {
    const ports = (p.spec?.containers ?? []).filter((c) => c.name !== "linkerd-proxy").flatMap((c) =>
      c.ports ?? []
    );
    const named = ports.filter((x) => /admin|metrics/.test(x.name ?? "")).map((x) => x.containerPort);
    for (const port of new Set([...named, SERVICE_MIRROR_ADMIN_PORT])) {
      const r = await kube.podProxy(MC_NAMESPACE, p.metadata.name, port, "/metrics");
      if (r.status === 200 && r.text.includes("gateway_alive")) return r.text;
    }
  }
  return undefined;
}

/** Probes the gateway from here (the operator's machine), as the service mirror would. */
export async function probeGateway(
  address: string,
  port: number,
  path: string,
  timeoutMs = 3000,
): Promise<{ ok: boolean; ms: number; detail: string }> {
  const t0 = performance.now();
  try {
    const r = await fetch(`http://${address}:${port}${path}`, { signal: AbortSignal.timeout(timeoutMs) });
    await r.body?.cancel();
    return { ok: r.ok, ms: performance.now() - t0, detail: `HTTP ${r.status}` };
  } catch (e) {
    return { ok: false, ms: performance.now() - t0, detail: (e as Error).message };
  }
}

export interface GatewayState {
  alive: boolean;
  latencyMs?: number;
  /** Where the answer came from. */
  source: "service mirror" | "direct probe";
  detail: string;
}

export async function gatewayState(kube: Kube, obj: LinkObject): Promise<GatewayState | undefined> {
  const link = parseLink(obj);
  if (!link.gatewayAddress) return undefined;
  const text = await serviceMirrorMetrics(kube, link.targetClusterName).catch(() => undefined);
  const m = text ? gatewayMetrics(text, link.targetClusterName) : {};
  if (m.alive !== undefined) {
    return {
      alive: m.alive,
      ...(m.latencyMs !== undefined ? { latencyMs: m.latencyMs } : {}),
      source: "service mirror",
      detail: `gateway_alive ${m.alive ? 1 : 0}`,
    };
  }
  const address = link.gatewayAddress.split(",")[0].trim();
  const p = await probeGateway(address, link.probeSpec.port, link.probeSpec.path);
  return {
    alive: p.ok,
    latencyMs: p.ms,
    source: "direct probe",
    detail: `${address}:${link.probeSpec.port}: ${p.detail}`,
  };
}

/** Counts of the target's exported Services and this cluster's mirrors of them. */
export async function mirrorCounts(
  kube: Kube,
  remote: Kube,
  obj: LinkObject,
): Promise<{ exported: number; mirrored: number }> {
  const link = parseLink(obj);
  const selectors = [link.remoteDiscoverySelector, ...(link.gatewayAddress ? [link.selector] : [])];
  let exported = 0;
  for (const s of selectors) {
    exported += (await remote.list("/api/v1/services", { labelSelector: selectorString(s) })).length;
  }
  const mirrored = (await kube.list("/api/v1/services", {
    labelSelector: `${Labels.clusterName}=${link.targetClusterName},${Labels.mirroredService}=true`,
  })).length;
  return { exported, mirrored };
}

export async function checkLink(ctx: CheckContext, obj: LinkObject): Promise<CheckResult[]> {
  const out: CheckResult[] = [];
  const name = obj.metadata.name ?? "?";
  const add = async (what: string, f: () => Promise<CheckResult>) => {
    const r = await guarded(GROUP, `${name}: ${what}`, f);
    out.push(r);
    return r;
  };
  let link: ReturnType<typeof parseLink>;
  try {
    link = parseLink(obj);
  } catch (e) {
    return [result(GROUP, `${name}: Link`, "fail", (e as Error).message)];
  }
  let remote: Kube | undefined;
  const api = await add("target API", async () => {
    remote = await remoteKube(ctx.kube, link.clusterCredentialsSecret);
    const v = await remote.version();
    return result(GROUP, `${name}: target API`, "ok", `${remote.server} answers, Kubernetes ${v.gitVersion}`);
  });
  if (api.outcome === "ok" && remote) {
    const r = remote;
    await add("credentials", async () => {
      const x = await r.request("GET", "/api/v1/services", { query: { limit: "1" } });
      if (x.status !== 200) {
        return result(GROUP, `${name}: credentials`, "fail", `cannot list Services: HTTP ${x.status}`);
      }
      return result(GROUP, `${name}: credentials`, "ok", "may list Services in the target");
    });
    await add("trust anchors", async () => {
      const [mine, theirs] = await Promise.all([
        readAnchors(ctx.kube),
        readAnchors(r, link.targetClusterLinkerdNamespace),
      ]);
      const shared = sharedAnchors(mine, theirs).length;
      return result(
        GROUP,
        `${name}: trust anchors`,
        shared ? "ok" : "fail",
        shared ? `${shared} anchor(s) shared` : "clusters do not share a trust anchor",
      );
    });
  }
  await add("service mirror", async () => {
    const d = await ctx.kube.get<Parameters<typeof rolledOut>[0]>(
      `/apis/apps/v1/namespaces/${MC_NAMESPACE}/deployments/${serviceMirrorName(name)}`,
    );
    if (!d) {
      return result(GROUP, `${name}: service mirror`, "fail", `no Deployment ${serviceMirrorName(name)}`);
    }
    const ok = rolledOut(d);
    return result(
      GROUP,
      `${name}: service mirror`,
      ok ? "ok" : "fail",
      `${serviceMirrorName(name)} ${d.status?.availableReplicas ?? 0}/${d.spec?.replicas ?? 1} available`,
    );
  });
  if (link.gatewayAddress) {
    await add("gateway", async () => {
      const g = (await gatewayState(ctx.kube, obj))!;
      const lat = g.latencyMs !== undefined ? `, ${g.latencyMs.toFixed(1)} ms` : "";
      return result(
        GROUP,
        `${name}: gateway`,
        g.alive ? "ok" : "fail",
        `${g.alive ? "alive" : "not alive"} (${g.source}: ${g.detail}${lat})`,
      );
    });
  }
  if (remote) {
    const r = remote;
    await add("mirrored services", async () => {
      const c = await mirrorCounts(ctx.kube, r, obj);
      return result(
        GROUP,
        `${name}: mirrored services`,
        c.mirrored === c.exported ? "ok" : "fail",
        `${c.mirrored} mirrored of ${c.exported} exported`,
      );
    });
  }
  return out;
}

/** Every link's checks; nothing when the cluster has no links. */
export async function checkMulticluster(ctx: CheckContext): Promise<CheckResult[]> {
  const out: CheckResult[] = [];
  for (const l of await listLinks(ctx.kube)) out.push(...await checkLink(ctx, l));
  return out;
}
