// Cluster e2e (issue 22, part A): the embedded metrics store that `deno task deploy` installs answers through the
// API server's service proxy (the way the CLI reaches it), has scraped a meshed workload's requests with Linkerd's
// target labels (namespace, pod, deployment), and scrapes every meshed pod's proxy.
import assert from "node:assert/strict";
import {
  apply,
  CONTROL_PLANE_NS,
  inNamespace,
  type Json,
  kjson,
  kubectl,
  requireMesh,
  waitForReadyPods,
} from "./lib/kube.ts";
import { waitFor, waitForValue } from "./lib/wait.ts";
import { appManifest, fetchFrom, PROXY_CONTAINER } from "./lib/workloads.ts";

const opts = { sanitizeOps: false, sanitizeResources: false };
const PROM = `/api/v1/namespaces/${CONTROL_PLANE_NS}/services/http:weft-prometheus:9090/proxy`;

interface Series {
  metric: Record<string, string>;
  value: [number, string];
}
interface Target {
  labels: Record<string, string>;
  scrapeUrl: string;
  health: string;
  lastError: string;
}

/** GET through the API server's service proxy; the parsed `data` of a Prometheus API answer. */
async function promApi<T>(path: string): Promise<T> {
  const r = await kubectl(["get", "--raw", `${PROM}${path}`]);
  if (r.code !== 0) throw new Error(`GET ${PROM}${path}: ${(r.stderr || r.stdout).trim()}`);
  const body = JSON.parse(r.stdout) as { status: string; data: T; error?: string };
  if (body.status !== "success") throw new Error(`${path}: ${body.error}`);
  return body.data;
}

async function query(q: string): Promise<Series[]> {
  return (await promApi<{ result: Series[] }>(`/api/v1/query?query=${encodeURIComponent(q)}`)).result;
}

/** Meshed pods of this control plane that are running and not going away: each has a proxy target. */
function meshedRunningPods(list: Json[]): Json[] {
  return list.filter((p) =>
    p.metadata.labels?.["linkerd.io/control-plane-ns"] === CONTROL_PLANE_NS &&
    p.status?.phase === "Running" &&
    !p.metadata.deletionTimestamp &&
    [...(p.spec.initContainers ?? []), ...p.spec.containers].some((c: Json) =>
      c.name === PROXY_CONTAINER && c.ports?.some((x: Json) => x.name === "linkerd-admin")
    )
  );
}

Deno.test({
  name: "e2e: the embedded Prometheus answers through the API service proxy and runs Linkerd's scrape jobs",
  ...opts,
  fn: async () => {
    await requireMesh();
    const build = await promApi<{ version: string }>("/api/v1/status/buildinfo");
    assert.match(build.version, /^2\.42\./, `Prometheus version ${build.version}`);
    const flags = await promApi<Record<string, string>>("/api/v1/status/flags");
    assert.equal(flags["storage.tsdb.retention.time"], "6h");
    const config = await promApi<{ yaml: string }>("/api/v1/status/config");
    for (const job of ["linkerd-controller", "linkerd-proxy"]) {
      assert.match(config.yaml, new RegExp(`job_name: ${job}`));
    }
    assert.match(config.yaml, /scrape_interval: 10s/);
  },
});

Deno.test({
  name: "e2e: request_total of a meshed workload that got traffic, labelled namespace, pod and deployment",
  ...opts,
  fn: async () => {
    await requireMesh();
    await inNamespace("e2e-metrics", { inject: true }, async (ns) => {
      await apply(ns, appManifest({ name: "server", service: true }));
      await apply(ns, appManifest({ name: "client" }));
      const [server] = await waitForReadyPods(ns, "app=server", 1);
      const [client] = await waitForReadyPods(ns, "app=client", 1);
      const answers = await fetchFrom(client.status.podIP, `server.${ns}.svc.cluster.local:80`, 20);
      assert.equal(answers.filter((a) => a.status === 200).length, 20, JSON.stringify(answers.slice(0, 3)));

      // Discovery refresh and scrape are 10 s each: the new pods' series appear within a few intervals.
      const inbound = await waitForValue("the server's inbound request_total in Prometheus", async () => {
        const s = await query(`request_total{namespace="${ns}",direction="inbound",deployment="server"}`);
        const total = s.reduce((n, x) => n + Number(x.value[1]), 0);
        return total >= 20 ? s : undefined;
      }, { timeoutMs: 90_000, intervalMs: 2000 });
      for (const s of inbound) {
        assert.equal(s.metric.namespace, ns);
        assert.equal(s.metric.pod, server.metadata.name);
        assert.equal(s.metric.deployment, "server");
        assert.equal(s.metric.job, "linkerd-proxy");
        assert.equal(s.metric.control_plane_ns, CONTROL_PLANE_NS);
      }
      const outbound = await waitForValue("the client's outbound request_total in Prometheus", async () => {
        const s = await query(`request_total{namespace="${ns}",direction="outbound",deployment="client"}`);
        return s.reduce((n, x) => n + Number(x.value[1]), 0) >= 20 ? s : undefined;
      }, { timeoutMs: 60_000, intervalMs: 2000 });
      assert.ok(outbound.every((s) => s.metric.pod === client.metadata.name && s.metric.namespace === ns));
      assert.ok(
        outbound.some((s) => s.metric.dst_deployment === "server"),
        `outbound series name the destination: ${JSON.stringify(outbound.map((s) => s.metric))}`,
      );

      // Attack: the discovery sidecar's target list (every pod, its IP and labels) is for Prometheus only. From
      // another pod, through its own proxy and the Prometheus pod's inbound proxy, it must not answer; Prometheus
      // itself keeps serving.
      const [prom] = (await kjson([
        "get",
        "pods",
        "-n",
        CONTROL_PLANE_NS,
        "-l",
        "linkerd.io/control-plane-component=prometheus",
        "-o",
        "json",
      ])).items.filter((p: Json) => p.status?.phase === "Running");
      const leak = await fetchFrom(client.status.podIP, `${prom.status.podIP}:9992`, 1, 3000, 0, {
        path: "/targets",
      });
      assert.ok(
        !leak[0].ok && leak[0].status !== 200,
        `the target list answered another pod: ${JSON.stringify(leak)}`,
      );
      assert.match((await promApi<{ version: string }>("/api/v1/status/buildinfo")).version, /^2\.42\./);

      // Every meshed pod of the cluster (these two, the control plane, other tests' pods) has its proxy up.
      let missing: string[] = [];
      await waitFor("a healthy linkerd-proxy target for every meshed running pod", async () => {
        const pods = meshedRunningPods((await kjson(["get", "pods", "-A", "-o", "json"])).items);
        assert.ok(pods.some((p) => p.metadata.name === server.metadata.name), "the server pod is listed");
        const targets = (await promApi<{ activeTargets: Target[] }>("/api/v1/targets?state=active"))
          .activeTargets
          .filter((t) => t.labels.job === "linkerd-proxy");
        missing = pods.filter((p) =>
          !targets.some((t) =>
            t.labels.pod === p.metadata.name && t.labels.namespace === p.metadata.namespace &&
            t.health === "up"
          )
        ).map((p) => {
          const t = targets.find((x) => x.labels.pod === p.metadata.name);
          return `${p.metadata.namespace}/${p.metadata.name}: ${
            t ? `${t.health} ${t.lastError}` : "no target"
          }`;
        });
        return missing.length === 0;
      }, { timeoutMs: 60_000, intervalMs: 2000, describe: () => missing.join("; ") });
    });
  },
});
