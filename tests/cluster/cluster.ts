// `cluster:up`, `cluster:down` and `cluster:status` of the local single-node cluster.
//
// up:   packages -> binaries (cached build) -> images -> host network and isolation -> PKI -> containerd ->
//       etcd -> kube-apiserver -> controller-manager, scheduler -> kubelet, kube-proxy -> addons -> wait Ready.
//       Each step is skipped when already done, so a second `up` is quick and changes nothing.
// down: pods (through the CRI, so CNI tears down their network) -> processes -> kube-proxy rules -> mounts,
//       network, state. Images and PKI are kept for the next `up`.

import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import {
  ADMIN_KUBECONFIG,
  API_DEVICE,
  API_URL,
  BIN_CACHE,
  BRIDGE,
  CGROUP_ROOT,
  CLUSTER,
  CNI_IPAM_DIR,
  CONTAINERD_SOCKET,
  ETCD_CLIENT_PORT,
  ETCD_DIR,
  IMAGE_CACHE,
  KUBELET_DIR,
  LOG_DIR,
  NETNS,
  NODE_NAME,
  PEER,
  RUN_DIR,
  STATE_DIR,
  WORKER_LINK_PREFIX,
  WORKER_PREFIX,
  WORKERS_SUPPORTED,
} from "./config.ts";
import { exec, exists, must, sleep, waitFor } from "./exec.ts";
import {
  ensureFirstJump,
  ensureFirstJumpAfterKubeProxy,
  ensurePackages,
  prepareHost,
  teardownNetwork,
  unmountBelow,
} from "./host.ts";
import { formatStuck, stuckTerminating } from "../../manifests/stuck_terminating.ts";
import { NETNS_DIR, netnsDirProblem, prepareNetnsDir, readNetnsDirState } from "./netns_dir.ts";
import { ensurePki } from "./pki.ts";
import { type Binaries, nodeSpecs, processSpecs, writeConfigs } from "./components.ts";
import {
  killCgroup,
  killPid,
  logFile,
  logTail,
  pidsMatching,
  removePodSandboxes,
  runningPid,
  start,
  stop,
} from "./processes.ts";
import { ensureWorker, listWorkers, removeWorker, workerLayout } from "./worker.ts";
import { ADDONS_YAML } from "./addons.ts";
import { inClusterNetns, prepareNamespaceHost, teardownNamespaceNetwork } from "./east_network.ts";
import { buildImages, importImages } from "../../images/build.ts";

const HERE = dirname(fileURLToPath(import.meta.url));
type Log = (s: string) => void;

export class ComponentError extends Error {
  constructor(readonly component: string, message: string) {
    super(`${component}: ${message}\n  log: ${logFile(component)}`);
  }
}

/** Versions and cache directories of the built binaries, from build.sh (the wrapper go.mod files pin them). */
export async function binaryDirs(): Promise<Binaries> {
  const out = await must("bash", [join(HERE, "build.sh"), "versions"]);
  const v = Object.fromEntries(out.trim().split(" ").map((kv) => kv.split("=")));
  return {
    k8s: join(BIN_CACHE, `k8s-${v.k8s}`),
    etcd: join(BIN_CACHE, `etcd-${v.etcd}`),
    coredns: join(BIN_CACHE, `coredns-${v.coredns}`),
    crictl: join(BIN_CACHE, `crictl-${v.crictl}`),
  };
}

/** Path of the kubectl built with the cluster (same release as the API server). */
export async function kubectlPath(): Promise<string> {
  return join((await binaryDirs()).k8s, "kubectl");
}

/** Builds what is missing from the cache, printing progress while the (slow) compile runs. */
async function buildBinaries(log: Log) {
  await Deno.mkdir(LOG_DIR, { recursive: true });
  const buildLog = join(LOG_DIR, "build.log");
  for (const part of ["k8s", "etcd", "coredns", "crictl"]) {
    const bins = await binaryDirs();
    if (await exists(join(bins[part as keyof Binaries], ".complete"))) continue;
    log(`build: ${part} (first run on this machine; go build output in ${buildLog})`);
    const file = await Deno.open(buildLog, { write: true, create: true, append: true });
    // WEFT_BUILD_VERBOSE makes go list each package it compiles: counted below as progress.
    const child = new Deno.Command("bash", {
      args: [join(HERE, "build.sh"), part],
      stdout: "piped",
      stderr: "piped",
      env: { WEFT_BUILD_VERBOSE: "1" },
    }).spawn();
    let packages = 0;
    const startAt = Date.now();
    const pump = async (s: ReadableStream<Uint8Array>, count: boolean) => {
      for await (const chunk of s) {
        await file.write(chunk);
        if (count) packages += new TextDecoder().decode(chunk).split("\n").length - 1;
      }
    };
    const timer = setInterval(() => {
      log(`build: ${part}: ${packages} packages compiled, ${Math.round((Date.now() - startAt) / 1000)}s`);
    }, 30_000);
    const [status] = await Promise.all([child.status, pump(child.stdout, false), pump(child.stderr, true)]);
    clearInterval(timer);
    file.close();
    if (!status.success) throw new ComponentError("build", `building ${part} failed (see ${buildLog})`);
    log(`build: ${part} done in ${Math.round((Date.now() - startAt) / 1000)}s`);
  }
}

async function kubectl(args: string[], stdin?: string) {
  const bin = await kubectlPath();
  return await exec(bin, ["--kubeconfig", ADMIN_KUBECONFIG, ...args], stdin === undefined ? {} : { stdin });
}

async function apiReady(): Promise<boolean> {
  const r = await kubectl(["get", "--raw", "/readyz", "--request-timeout=3s"]);
  return r.code === 0 && r.stdout.trim() === "ok";
}

/**
 * A TCP connect (and for `path` an HTTP GET answered 200) to the cluster's own loopback: east's is inside its
 * namespace, reached with bash's /dev/tcp there (no client the host may lack).
 */
async function probeInNetns(port: number, path?: string): Promise<boolean> {
  const script = path === undefined
    ? `exec 3<>/dev/tcp/127.0.0.1/${port}`
    : `exec 3<>/dev/tcp/127.0.0.1/${port}; printf 'GET ${path} HTTP/1.0\\r\\n\\r\\n' >&3; head -n1 <&3`;
  const [cmd, ...args] = inClusterNetns(["timeout", "3", "bash", "-c", script]);
  const r = await exec(cmd, args);
  return r.code === 0 && (path === undefined || / 200 /.test(r.stdout));
}

async function tcpOpen(port: number): Promise<boolean> {
  if (NETNS) return await probeInNetns(port);
  try {
    const c = await Deno.connect({ hostname: "127.0.0.1", port });
    c.close();
    return true;
  } catch {
    return false;
  }
}

async function httpOk(url: string): Promise<boolean> {
  if (NETNS) {
    const u = new URL(url);
    return await probeInNetns(Number(u.port), u.pathname);
  }
  try {
    const r = await fetch(url, { signal: AbortSignal.timeout(2000) });
    await r.body?.cancel();
    return r.ok;
  } catch {
    return false;
  }
}

/** How each component shows it is up, and how long it may take. */
const READY: Record<string, { check: () => Promise<boolean>; timeoutMs: number }> = {
  containerd: {
    check: async () => (await exec("ctr", ["-a", CONTAINERD_SOCKET, "version"])).code === 0,
    timeoutMs: 30_000,
  },
  etcd: { check: () => tcpOpen(ETCD_CLIENT_PORT), timeoutMs: 30_000 },
  "kube-apiserver": { check: apiReady, timeoutMs: 120_000 },
  // Their health endpoints need authentication; staying alive for a moment is the check.
  "kube-controller-manager": { check: async () => (await sleep(1000), true), timeoutMs: 0 },
  "kube-scheduler": { check: async () => (await sleep(1000), true), timeoutMs: 0 },
  kubelet: { check: () => httpOk("http://127.0.0.1:10248/healthz"), timeoutMs: 60_000 },
  "kube-proxy": { check: () => httpOk("http://127.0.0.1:10256/healthz"), timeoutMs: 60_000 },
};

async function startComponents(bins: Binaries, log: Log, only?: (name: string) => boolean) {
  for (const spec of processSpecs(bins)) {
    if (only && !only(spec.name)) continue;
    const pid = await runningPid(spec.name, spec.binary);
    if (pid) continue;
    if (spec.name === "etcd") await Deno.mkdir(ETCD_DIR, { recursive: true, mode: 0o700 });
    log(`start: ${spec.name}`);
    const started = await start(spec);
    const ready = READY[spec.name];
    const ok = await waitFor(
      async () => (await runningPid(spec.name)) !== undefined && await ready.check(),
      ready.timeoutMs,
    );
    if (!(await runningPid(spec.name)) || !ok) {
      const tail = await logTail(spec.name);
      throw new ComponentError(
        spec.name,
        `${(await runningPid(spec.name)) ? "not ready" : "exited"} (pid ${started})\n${tail}`,
      );
    }
  }
}

async function waitNodeReady(log: Log) {
  log(`wait: node ${NODE_NAME} Ready`);
  const ok = await waitFor(
    async () => {
      const r = await kubectl([
        "get",
        "node",
        NODE_NAME,
        "-o",
        'jsonpath={.status.conditions[?(@.type=="Ready")].status}',
      ]);
      return r.stdout.trim() === "True";
    },
    120_000,
    1000,
  );
  if (!ok) {
    throw new ComponentError(
      "kubelet",
      `node ${NODE_NAME} did not become Ready\n${await logTail("kubelet")}`,
    );
  }
}

async function applyAddons(log: Log) {
  log("addons: RBAC and CoreDNS");
  // The default ServiceAccount admission needs the controller to have created kube-system's accounts first.
  await waitFor(
    async () => (await kubectl(["-n", "kube-system", "get", "serviceaccount", "default"])).code === 0,
    60_000,
  );
  const r = await kubectl(["apply", "--server-side", "--force-conflicts", "-f", "-"], ADDONS_YAML);
  if (r.code !== 0) throw new ComponentError("kube-apiserver", `applying addons failed: ${r.stderr.trim()}`);
  log("wait: CoreDNS available");
  const w = await kubectl(["-n", "kube-system", "rollout", "status", "deployment/coredns", "--timeout=180s"]);
  if (w.code !== 0) {
    const pods = await kubectl(["-n", "kube-system", "get", "pods", "-o", "wide"]);
    throw new ComponentError(
      "kubelet",
      `CoreDNS did not become available: ${w.stderr.trim()}\n${pods.stdout}`,
    );
  }
}

export interface UpResult {
  kubeconfig: string;
  kubectl: string;
}

function requireRootLinux(): string | undefined {
  if (Deno.build.os !== "linux") return `the local cluster needs Linux (this is ${Deno.build.os})`;
  if (Deno.uid() !== 0) return "the local cluster needs root (it runs containerd, kubelet and iptables)";
  return undefined;
}

/** Why this machine cannot run the local cluster, or undefined when it can. */
export function unavailableReason(): string | undefined {
  return requireRootLinux();
}

export interface UpOptions {
  /**
   * Nodes the cluster should have: the first node plus `nodes - 1` workers. Workers beyond that are removed.
   * Undefined keeps (and starts) whatever workers exist.
   */
  nodes?: number;
}

export async function up(log: Log, opts: UpOptions = {}): Promise<UpResult> {
  const reason = requireRootLinux();
  if (reason) throw new Error(reason);
  const t0 = Date.now();
  await ensurePackages(log);
  await buildBinaries(log);
  const bins = await binaryDirs();

  await Deno.mkdir(IMAGE_CACHE, { recursive: true });
  const images = await buildImages({
    cacheDir: IMAGE_CACHE,
    corednsBinary: join(bins.coredns, "coredns"),
    log,
  });

  if (NETNS && opts.nodes !== undefined && opts.nodes !== 1) {
    throw new Error(`--nodes: the ${CLUSTER.name} cluster has one node (worker nodes are west's)`);
  }
  // east: the netns directory first, since `up` itself adds the cluster's namespace there.
  if (!NETNS) await prepareHost(log);
  // Before containerd makes its first pod namespace there; see netns_dir.ts and the README.
  const netns = await prepareNetnsDir();
  if (netns.refused) log(`host: WARNING ${netns.refused}`);
  else if (netns.changed) {
    log(`host: ${NETNS_DIR} bind-mounted over itself and made shared (as \`ip netns\` does)`);
  }
  if (NETNS) await prepareNamespaceHost(log);
  await ensurePki(log);
  await writeConfigs();

  await startComponents(bins, log, (n) => n === "containerd");
  // Before the first pod: the sandbox image must be there, or the CRI would try to pull it.
  await importImages(images, CONTAINERD_SOCKET, log);
  await startComponents(bins, log);
  // east's kube-proxy writes its jumps in its own namespace, not in front of the host's isolation chain.
  await (NETNS ? ensureFirstJump() : ensureFirstJumpAfterKubeProxy());
  await waitNodeReady(log);
  await applyAddons(log);
  await ensureWorkers(opts.nodes, { bins, images, log });
  log(`up: cluster ready in ${((Date.now() - t0) / 1000).toFixed(0)}s (${API_URL})`);
  return { kubeconfig: ADMIN_KUBECONFIG, kubectl: join(bins.k8s, "kubectl") };
}

async function ensureWorkers(
  nodes: number | undefined,
  ctx: { bins: Binaries; images: Awaited<ReturnType<typeof buildImages>>; log: Log },
) {
  const existing = await listWorkers();
  const wanted = nodes === undefined ? existing : Array.from({ length: nodes - 1 }, (_, i) => i + 1);
  for (const i of existing.filter((i) => !wanted.includes(i))) {
    const name = workerLayout(i).name;
    ctx.log(`nodes: removing ${name}`);
    await removeWorker(i, ctx.bins, ctx.log);
    await kubectl(["delete", "node", name, "--ignore-not-found", "--wait=false"]);
  }
  const kubectlBin = join(ctx.bins.k8s, "kubectl");
  for (const i of wanted) {
    await ensureWorker(i, { ...ctx, kubectl: kubectlBin, kubeconfig: ADMIN_KUBECONFIG });
  }
}

/** True when every component runs and the API server answers ready. */
export async function isRunning(): Promise<boolean> {
  if (requireRootLinux()) return false;
  let bins: Binaries;
  try {
    bins = await binaryDirs();
  } catch {
    return false;
  }
  for (const spec of processSpecs(bins)) if (!(await runningPid(spec.name, spec.binary))) return false;
  return await exists(ADMIN_KUBECONFIG) && await apiReady();
}

export async function down(log: Log) {
  const reason = requireRootLinux();
  if (reason) throw new Error(reason);
  const bins = await binaryDirs();
  const specs = processSpecs(bins);
  for (const i of await listWorkers()) await removeWorker(i, bins, log);
  // kubelet first, so it does not restart the pods being removed.
  if (await stop("kubelet")) log("stop: kubelet");
  if (await runningPid("containerd")) {
    await removePodSandboxes(join(bins.crictl, "crictl"), CONTAINERD_SOCKET, "pods", log);
  }
  for (const spec of [...specs].reverse()) {
    if (spec.name === "kubelet") continue;
    if (await stop(spec.name)) log(`stop: ${spec.name}`);
  }
  // Shims (and so containers) whose containerd is gone: the runtime can no longer stop them for us.
  for (const pid of await pidsMatching(`-address ${CONTAINERD_SOCKET}`)) await killPid(pid, 2000);
  // east's pods are under its own cgroup root (west's under the root's kubepods, its workers' under theirs).
  await killCgroup(CGROUP_ROOT ? CGROUP_ROOT.slice(1) : "kubepods");
  // kube-proxy knows its own rules (KUBE-* chains in filter and nat) and removes them; east's go with its
  // namespace.
  const kp = join(bins.k8s, "kube-proxy");
  if (!NETNS && await exists(kp)) await exec(kp, ["--cleanup", "--v=0"]);
  const unmounted = await unmountBelow([KUBELET_DIR, RUN_DIR, STATE_DIR]);
  if (unmounted.length) log(`mounts: unmounted ${unmounted.length}`);
  await removeNetnsOfPods();
  await (NETNS ? teardownNamespaceNetwork() : teardownNetwork());
  for (const d of [ETCD_DIR, KUBELET_DIR, RUN_DIR, CNI_IPAM_DIR, join(STATE_DIR, "kubelet-plugins")]) {
    await Deno.remove(d, { recursive: true }).catch(() => {});
  }
  const left = await leftovers(bins);
  if (left.length) throw new ComponentError("down", `left behind:\n  ${left.join("\n  ")}`);
  log("down: cluster stopped; no process, mount, netns, link or iptables rule left (images and PKI kept)");
}

/** What `down` should have removed but is still there (of this cluster; the other one may be running). */
export async function leftovers(bins: Binaries): Promise<string[]> {
  const left: string[] = [];
  // Both clusters run the same binaries: ours name our state directory in their arguments.
  const ours = async (pid: number) =>
    (await Deno.readTextFile(`/proc/${pid}/cmdline`).catch(() => "")).replaceAll("\0", " ").includes(
      `${STATE_DIR}/`,
    );
  for (const spec of processSpecs(bins)) {
    for (const pid of await pidsMatching(`${spec.binary} `, true)) {
      if (await ours(pid)) left.push(`process ${pid} (${spec.name})`);
    }
  }
  for (const pid of await pidsMatching(`-address ${CONTAINERD_SOCKET}`)) left.push(`process ${pid} (shim)`);
  const mountinfo = await Deno.readTextFile("/proc/self/mountinfo");
  for (const l of mountinfo.split("\n")) {
    const p = l.split(" ")[4];
    if (p && [STATE_DIR, RUN_DIR].some((d) => p === d || p.startsWith(d + "/"))) left.push(`mount ${p}`);
  }
  try {
    for await (const e of Deno.readDir("/run/netns")) {
      if (e.name.startsWith("cni-") && (await podNetnsCluster(e.name)) === CLUSTER.name) {
        left.push(`netns ${e.name}`);
      }
      if (WORKERS_SUPPORTED && e.name.startsWith(WORKER_PREFIX)) left.push(`netns ${e.name}`);
      if (e.name === NETNS) left.push(`netns ${e.name}`);
    }
  } catch { /* none */ }
  for (const dev of NETNS ? [CLUSTER.hostLink!] : [BRIDGE, API_DEVICE]) {
    if ((await exec("ip", ["link", "show", dev])).code === 0) left.push(`link ${dev}`);
  }
  if (WORKERS_SUPPORTED) {
    const links = (await exec("ip", ["-o", "link", "show"])).stdout;
    for (const m of links.matchAll(new RegExp(`^\\d+: (${WORKER_LINK_PREFIX}\\d+)[@:]`, "gm"))) {
      left.push(`link ${m[1]}`);
    }
  }
  // west owns the host's KUBE-* chains and its isolation chain; east only its own chain there.
  const mine = NETNS
    ? (r: string) => r.includes(CLUSTER.isolationChain)
    : (r: string) => /KUBE-|WEFT-|weft-cluster/.test(r) && !r.includes(PEER.isolationChain);
  for (const cmd of ["iptables", "ip6tables"]) {
    for (const table of ["filter", "nat", "mangle"]) {
      const rules = (await exec(cmd, ["-w", "-t", table, "-S"])).stdout.split("\n");
      for (const r of rules) if (mine(r)) left.push(`${cmd} -t ${table} ${r}`);
    }
  }
  return left;
}

/**
 * Which cluster a pod's network namespace (`cni-*`, shared /run/netns) belongs to: east's pods run under its
 * cgroup root; an empty namespace is counted as this cluster's (down removes empty ones).
 */
async function podNetnsCluster(name: string): Promise<string> {
  const pids = (await exec("ip", ["netns", "pids", name])).stdout.trim().split("\n").filter(Boolean);
  if (pids.length === 0) return CLUSTER.name;
  const eastRoot = (CLUSTER.cgroupRoot ?? PEER.cgroupRoot)!;
  for (const pid of pids) {
    const cg = await Deno.readTextFile(`/proc/${pid}/cgroup`).catch(() => "");
    if (cg.includes(`:${eastRoot}/`)) return "east";
  }
  return "west";
}

/** Network namespaces containerd created for our pods and left behind (e.g. after a crash). */
async function removeNetnsOfPods() {
  // crictl rmp normally removes them; leftovers are cni-* namespaces with no process inside.
  try {
    for await (const e of Deno.readDir("/run/netns")) {
      if (!e.name.startsWith("cni-")) continue;
      const pids = (await exec("ip", ["netns", "pids", e.name])).stdout.trim();
      if (!pids) {
        await exec("umount", [`/run/netns/${e.name}`]);
        await exec("ip", ["netns", "delete", e.name]);
      }
    }
  } catch { /* none */ }
}

export async function status(): Promise<string> {
  const lines: string[] = [];
  const reason = requireRootLinux();
  if (reason) return `local cluster unavailable: ${reason}`;
  const bins = await binaryDirs();
  const workers = (await listWorkers()).map(workerLayout);
  for (const spec of [...processSpecs(bins), ...workers.flatMap((w) => nodeSpecs(w, bins))]) {
    const pid = await runningPid(spec.name, spec.binary);
    lines.push(`${spec.name.padEnd(32)} ${pid ? `running (pid ${pid})` : "stopped"}   ${logFile(spec.name)}`);
  }
  if (await runningPid("kube-apiserver")) {
    lines.push(`api ${API_URL}: ${(await apiReady()) ? "ready" : "not ready"}`);
    const nodes = await kubectl(["get", "nodes", "-o", "wide"]);
    if (nodes.code === 0) lines.push("", nodes.stdout.trimEnd());
    const pods = await kubectl(["get", "pods", "-A"]);
    if (pods.code === 0) lines.push("", pods.stdout.trimEnd());
    lines.push(...(await stuckPodLines()));
    const netnsProblem = netnsDirProblem(await readNetnsDirState());
    if (netnsProblem) lines.push("", `WARNING ${netnsProblem}`);
    lines.push("", `export KUBECONFIG=${ADMIN_KUBECONFIG}`);
  }
  return lines.join("\n");
}

/** Pods Terminating past their grace period, each with its reason and the kubelet's last word on it. */
async function stuckPodLines(): Promise<string[]> {
  const pods = await kubectl(["get", "pods", "-A", "-o", "json"]);
  const events = await kubectl(["get", "events", "-A", "-o", "json"]);
  if (pods.code !== 0) return [];
  const stuck = stuckTerminating(
    JSON.parse(pods.stdout).items ?? [],
    events.code === 0 ? JSON.parse(events.stdout).items ?? [] : [],
    Date.now(),
  );
  if (!stuck.length) return [];
  // The kubelet often logs the cause (e.g. a sandbox it cannot remove) without an event: its last error line
  // about the pod, from the log's tail.
  let log: string[] = [];
  try {
    const text = await Deno.readTextFile(logFile("kubelet"));
    log = text.slice(-4_000_000).split("\n").filter((l) => /^E\d{4} /.test(l));
  } catch { /* no log */ }
  const out = ["", `WARNING ${stuck.length} pod(s) stuck Terminating:`];
  for (const s of stuck) {
    out.push(`  ${formatStuck(s)}`);
    const said = log.findLast((l) => l.includes(`pod="${s.namespace}/${s.name}"`) || l.includes(s.uid));
    if (said) out.push(`    kubelet: ${said.length > 400 ? said.slice(0, 399) + "…" : said}`);
  }
  return out;
}
