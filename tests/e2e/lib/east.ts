/**
 * The second cluster of the multicluster tests ("east", `deno task cluster:up --name=east`), started when it is
 * not running and meshed with the first cluster's trust anchor and issuer, as Linkerd's multicluster guide
 * installs both clusters from one anchor and issuer.
 */
import { ClusterCtl } from "./clusters.ts";
import { CONTROL_PLANE_NS, type Json, KUBECONFIG } from "./kube.ts";
import { join } from "node:path";
import { API_URL, clusterConfig } from "../../cluster/config.ts";
import { binaryDirs } from "../../cluster/cluster.ts";
import { must } from "../../lib/exec.ts";

export const EAST_KUBECONFIG = "/var/lib/weft-cluster-east/admin.kubeconfig";
const root = new URL("../../../", import.meta.url).pathname;

/** Runs a deno entry point of this repository; throws with its output on a non-zero exit. */
export async function denoRun(args: string[], what: string, timeoutMs = 900_000): Promise<string> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", ...args],
    cwd: root,
    stdout: "piped",
    stderr: "piped",
    signal: AbortSignal.timeout(timeoutMs),
  }).output();
  const text = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
  if (!out.success) throw new Error(`${what} failed (exit ${out.code}):\n${text.slice(-4000)}`);
  return text;
}

/** Why the multicluster tests cannot run here, or undefined: they need the local cluster, as root. */
export async function eastUnavailable(): Promise<string | undefined> {
  if (Deno.uid?.() !== 0) return "not root: the second local cluster needs network namespaces";
  const west = new ClusterCtl("west", KUBECONFIG);
  const r = await west.run(["config", "view", "--minify", "-o", "jsonpath={.clusters[0].cluster.server}"]);
  if (r.code !== 0 || r.stdout.trim() !== API_URL) {
    return `KUBECONFIG is not the local cluster (${API_URL}); the second cluster is local-only`;
  }
  return undefined;
}

async function eastAnswers(): Promise<boolean> {
  try {
    await Deno.stat(EAST_KUBECONFIG);
  } catch {
    return false;
  }
  return (await new ClusterCtl("east", EAST_KUBECONFIG).run(["get", "--raw", "/readyz"], {
    timeoutMs: 10_000,
  }))
    .code === 0;
}

function issuerPair(secret: { data?: Record<string, string> }): { crt: string; key: string } {
  const d = secret.data ?? {};
  const b64 = (k: string) =>
    d[k] ? new TextDecoder().decode(Uint8Array.from(atob(d[k]), (c) => c.charCodeAt(0))) : "";
  const crt = b64("crt.pem") || b64("tls.crt");
  const key = b64("key.pem") || b64("tls.key");
  if (!crt || !key) {
    throw new Error("the first cluster's issuer Secret has neither crt.pem/key.pem nor tls.crt/tls.key");
  }
  return { crt, key };
}

/**
 * East up and meshed with west's anchors and issuer. Returns how long each part took (zero when already done).
 */
export async function ensureEast(log: (s: string) => void): Promise<{ upMs: number; deployMs: number }> {
  const west = new ClusterCtl("west", KUBECONFIG);
  let t = Date.now();
  if (!(await eastAnswers())) {
    log("east: starting (deno task cluster:up --name=east)");
    await denoRun(["tests/cluster/main.ts", "up", "--name=east"], "cluster:up --name=east");
  }
  const upMs = Date.now() - t;
  const roots = await west.json(["-n", CONTROL_PLANE_NS, "get", "configmap", "linkerd-identity-trust-roots"]);
  const anchors: string = roots.data["ca-bundle.crt"];
  const east = new ClusterCtl("east", EAST_KUBECONFIG);
  const eastRoots = await east.run([
    "-n",
    CONTROL_PLANE_NS,
    "get",
    "configmap",
    "linkerd-identity-trust-roots",
    "-o",
    "jsonpath={.data.ca-bundle\\.crt}",
  ]);
  const anchorsChanged = eastRoots.code !== 0 || eastRoots.stdout.trim() !== anchors.trim();
  t = Date.now();
  // Deployed every time (idempotent): east then runs the image built from this tree, as west does.
  const issuer = issuerPair(
    await west.json(["-n", CONTROL_PLANE_NS, "get", "secret", "linkerd-identity-issuer"]),
  );
  const dir = await Deno.makeTempDir({ prefix: "weft-mc-identity-" });
  try {
    await Deno.writeTextFile(`${dir}/anchors.pem`, anchors);
    await Deno.writeTextFile(`${dir}/issuer.crt`, issuer.crt);
    await Deno.writeTextFile(`${dir}/issuer.key`, issuer.key, { mode: 0o600 });
    log(
      `east: deploying the mesh with the first cluster's anchors and issuer${anchorsChanged ? " (new)" : ""}`,
    );
    await denoRun([
      "manifests/main.ts",
      "deploy",
      `--kubeconfig=${EAST_KUBECONFIG}`,
      `--trust-anchors=${dir}/anchors.pem`,
      `--issuer-cert=${dir}/issuer.crt`,
      `--issuer-key=${dir}/issuer.key`,
      "--prometheus=none",
      // East's Services are reached through its gateway: its proxies must believe the identities it forwards.
      "--multicluster-gateway-trust",
    ], "deploy to east");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
  if (anchorsChanged) {
    // A switch of anchor (not a staged rotation): pods meshed under the old one, the control plane's and a
    // gateway from an earlier run, restart to get leaves from the new issuer and the new bundle at once.
    for (const ns of [CONTROL_PLANE_NS, "weft-multicluster"]) {
      const r = await east.run(["-n", ns, "rollout", "restart", "deployment"]);
      if (r.code !== 0 || !r.stdout.trim()) continue;
      log(`east: restarted ${r.stdout.trim().split("\n").length} deployment(s) in ${ns}`);
      const names = (await east.json(["-n", ns, "get", "deployments"])).items.map((d: Json) =>
        d.metadata.name
      );
      for (const name of names) {
        await east.kc(["-n", ns, "rollout", "status", `deployment/${name}`, "--timeout=240s"], {
          timeoutMs: 250_000,
        });
      }
    }
  }
  return { upMs, deployMs: Date.now() - t };
}

/** Working-set memory of one container, as the node's runtime reports it (crictl stats), in MiB. */
export async function containerMemoryMiB(
  cluster: "west" | "east",
  pod: string,
  container: string,
): Promise<number> {
  const crictl = join((await binaryDirs()).crictl, "crictl");
  const out = await must(crictl, [
    "--runtime-endpoint",
    `unix://${clusterConfig(cluster).containerdSocket}`,
    "stats",
    "-o",
    "json",
    "--label",
    `io.kubernetes.pod.name=${pod}`,
  ]);
  const stats = (JSON.parse(out).stats ?? []) as {
    attributes: { metadata: { name: string } };
    memory?: { workingSetBytes?: { value: string } };
  }[];
  const s = stats.find((x) => x.attributes.metadata.name === container);
  if (!s?.memory?.workingSetBytes) throw new Error(`no memory stats for ${pod}/${container} in ${cluster}`);
  return Number(s.memory.workingSetBytes.value) / 2 ** 20;
}
