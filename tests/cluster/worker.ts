// Worker nodes of the local cluster (`cluster:up --nodes=N`): each is a kubelet, a kube-proxy and a containerd
// of its own, running in its own network namespace with its own pod range, cgroup root, runtime state and
// directories. The host routes between the nodes' pod ranges; nothing is routed anywhere else (the isolation
// chain drops whatever a worker link would forward elsewhere).
//
// The processes join only the node's network namespace (nsenter --net), not a mount namespace: the kubelet
// mounts volumes that containerd must see, exactly as on one machine with one mount table.

import { join } from "node:path";
import {
  IMAGE_CACHE,
  LOG_DIR,
  MAX_WORKERS,
  RUN_DIR,
  WORKER_LINK_PREFIX,
  WORKER_PREFIX,
  workerContainerdSocket,
  WORKERS_DIR,
  WORKERS_SUPPORTED,
} from "./config.ts";
import { type Binaries, type NodeLayout, nodeSpecs, writeNodeConfigs } from "./components.ts";
import { exec, exists, must, waitFor } from "./exec.ts";
import { ensureNodePki } from "./pki.ts";
import {
  killCgroup,
  killPid,
  logTail,
  pidsMatching,
  removePodSandboxes,
  runningPid,
  start,
  stop,
} from "./processes.ts";
import { unmountBelow } from "./host.ts";
import { buildImages, type BuiltImage, importImages } from "../../images/build.ts";

export interface WorkerLayout extends NodeLayout {
  index: number;
  /** The host end of the node's veth pair and its address. */
  link: string;
  hostIp: string;
  runDir: string;
}

/** Names, addresses and paths of worker `i` (1-based; the first node of the cluster is not a worker). */
export function workerLayout(i: number): WorkerLayout {
  if (!Number.isInteger(i) || i < 1 || i > MAX_WORKERS) {
    throw new Error(`worker index ${i}: want 1..${MAX_WORKERS}`);
  }
  const name = `${WORKER_PREFIX}${i}`;
  const stateDir = join(WORKERS_DIR, name);
  const runDir = join(RUN_DIR, "workers", name);
  return {
    index: i,
    name,
    ip: `10.10.${i}.2`,
    hostIp: `10.10.${i}.1`,
    link: `${WORKER_LINK_PREFIX}${i}`,
    podCidr: `10.244.${i}.0/24`,
    procPrefix: `${name}.`,
    netns: name,
    cgroupRoot: `/${name}`,
    stateDir,
    runDir,
    containerdRoot: join(stateDir, "containerd"),
    containerdState: join(runDir, "containerd"),
    containerdSocket: workerContainerdSocket(i),
    cniConfDir: join(stateDir, "cni"),
    cniIpamDir: join(runDir, "cni-ipam"),
    kubeletDir: join(stateDir, "kubelet"),
    podLogDir: join(LOG_DIR, name, "pods"),
    kubeletServerCert: `kubelet-server-${name}`,
    kubeletClientCert: `kubelet-client-${name}`,
  };
}

/** Indexes of the workers that exist on this machine (state directory or network namespace). */
export async function listWorkers(): Promise<number[]> {
  // East has no workers, and the `weft-worker-*` namespaces in /run/netns are west's.
  if (!WORKERS_SUPPORTED) return [];
  const found = new Set<number>();
  for (const dir of [WORKERS_DIR, "/run/netns"]) {
    try {
      for await (const e of Deno.readDir(dir)) {
        const m = e.name.match(new RegExp(`^${WORKER_PREFIX}(\\d+)$`));
        if (m) found.add(Number(m[1]));
      }
    } catch { /* none */ }
  }
  return [...found].filter((i) => i >= 1 && i <= MAX_WORKERS).sort((a, b) => a - b);
}

/** The containerd socket of a node by name (the first node's included), for tools that act on one node. */
export function nodeSocket(nodeName: string, mainSocket: string): string {
  const m = nodeName.match(new RegExp(`^${WORKER_PREFIX}(\\d+)$`));
  return m ? workerLayout(Number(m[1])).containerdSocket : mainSocket;
}

/** What `ensureWorkerNetwork` needs of a node: also used for the east cluster's namespace (east_network.ts). */
export type NodeNetwork = Pick<WorkerLayout, "netns" | "link" | "hostIp" | "ip" | "podCidr">;

const inNetns = (
  w: Pick<NodeNetwork, "netns">,
  args: string[],
) => ["nsenter", `--net=/run/netns/${w.netns}`, "--", ...args];

async function netnsSysctl(w: Pick<NodeNetwork, "netns">, key: string, value: string) {
  // /proc/sys/net is the namespace of the process that opens it: write it from inside.
  const path = `/proc/sys/${key.replaceAll(".", "/")}`;
  const [cmd, ...args] = inNetns(w, ["sh", "-c", `echo ${value} > ${path}`]);
  await must(cmd, args);
}

/** The node's namespace, its veth pair, addresses and routes (`podCidr` routed to it); idempotent. */
export async function ensureWorkerNetwork(w: NodeNetwork) {
  if (!(await exists(`/run/netns/${w.netns}`))) await must("ip", ["netns", "add", w.netns!]);
  if ((await exec("ip", ["link", "show", w.link])).code !== 0) {
    await must("ip", ["link", "add", w.link, "type", "veth", "peer", "name", "eth0", "netns", w.netns!]);
  }
  const hostAddrs = await must("ip", ["-4", "-o", "addr", "show", "dev", w.link]);
  if (!hostAddrs.includes(`${w.hostIp}/24`)) {
    await must("ip", ["addr", "add", `${w.hostIp}/24`, "dev", w.link]);
  }
  await must("ip", ["link", "set", w.link, "up"]);
  const nodeAddrs = await must("ip", ["-n", w.netns!, "-4", "-o", "addr", "show", "dev", "eth0"]);
  if (!nodeAddrs.includes(`${w.ip}/24`)) {
    await must("ip", ["-n", w.netns!, "addr", "add", `${w.ip}/24`, "dev", "eth0"]);
  }
  await must("ip", ["-n", w.netns!, "link", "set", "lo", "up"]);
  await must("ip", ["-n", w.netns!, "link", "set", "eth0", "up"]);
  // Everything the node does not hold goes to the host, which forwards only pod and service traffic.
  await must("ip", ["-n", w.netns!, "route", "replace", "default", "via", w.hostIp]);
  await must("ip", ["route", "replace", w.podCidr, "via", w.ip, "dev", w.link]);
  await netnsSysctl(w, "net.ipv4.ip_forward", "1");
  // kube-proxy's DNAT must see traffic between two pods on the node's bridge, as on the first node.
  await netnsSysctl(w, "net.bridge.bridge-nf-call-iptables", "1");
  // Pods have no IPv6 addresses; none is forwarded either.
  await netnsSysctl(w, "net.ipv6.conf.all.disable_ipv6", "1");
  await netnsSysctl(w, "net.ipv6.conf.default.disable_ipv6", "1");
}

/** The node's cgroup root in every v1 hierarchy; kubelet refuses a cgroupRoot that does not exist. */
export async function ensureCgroupRoot(w: Pick<WorkerLayout, "cgroupRoot">) {
  for await (const e of Deno.readDir("/sys/fs/cgroup")) {
    if (e.name === "unified" || !e.isDirectory) continue;
    const dir = join("/sys/fs/cgroup", e.name, w.cgroupRoot!);
    if (!(await exists(dir))) await Deno.mkdir(dir);
    if (e.name === "cpuset") {
      // A new v1 cpuset starts with no CPUs and no memory nodes: nothing could run in it.
      for (const f of ["cpuset.cpus", "cpuset.mems"]) {
        const cur = (await Deno.readTextFile(join(dir, f))).trim();
        if (!cur) {
          await Deno.writeTextFile(join(dir, f), await Deno.readTextFile(join("/sys/fs/cgroup/cpuset", f)));
        }
      }
    }
  }
}

/** kubectl with the admin kubeconfig the caller passes (worker code has no KUBECONFIG of its own). */
function kubectl(ctx: { kubectl: string; kubeconfig: string }, args: string[], stdin?: string) {
  return exec(ctx.kubectl, ["--kubeconfig", ctx.kubeconfig, ...args], stdin === undefined ? {} : { stdin });
}

/**
 * Starts worker `i` (creating what is missing): PKI, network, cgroup root, configs, containerd with the
 * cluster's images, kubelet and kube-proxy; then waits for its Node to be Ready.
 */
export async function ensureWorker(
  i: number,
  ctx: {
    bins: Binaries;
    images: BuiltImage[];
    kubectl: string;
    kubeconfig: string;
    log: (s: string) => void;
  },
) {
  const w = workerLayout(i);
  const { bins, log } = ctx;
  await ensureNodePki(w, log);
  await ensureWorkerNetwork(w);
  await ensureCgroupRoot(w);
  for (const d of [w.stateDir, w.runDir, w.podLogDir]) await Deno.mkdir(d, { recursive: true });
  await writeNodeConfigs(w);
  const [containerd, kubelet, kubeProxy] = nodeSpecs(w, bins);
  if (!(await runningPid(containerd.name, containerd.binary))) {
    log(`start: ${containerd.name}`);
    await start(containerd);
    const ok = await waitFor(
      async () => (await exec("ctr", ["-a", w.containerdSocket, "version"])).code === 0,
      30_000,
    );
    if (!ok) throw new Error(`${containerd.name} not ready:\n${await logTail(containerd.name)}`);
  }
  // Before the first pod: the sandbox image must be there, or the CRI would try to pull it.
  await importImages(ctx.images, w.containerdSocket, log);
  await ensureNodeObject(w, ctx);
  for (const spec of [kubelet, kubeProxy]) {
    if (await runningPid(spec.name, spec.binary)) continue;
    log(`start: ${spec.name}`);
    await start(spec);
  }
  log(`wait: node ${w.name} Ready`);
  const ready = await waitFor(
    async () => {
      const r = await kubectl(ctx, [
        "get",
        "node",
        w.name,
        "-o",
        'jsonpath={.status.conditions[?(@.type=="Ready")].status}',
      ]);
      return r.stdout.trim() === "True";
    },
    120_000,
    1000,
  );
  if (!ready) throw new Error(`node ${w.name} did not become Ready\n${await logTail(kubelet.name)}`);
}

/**
 * The Node object with the pod range the node's CNI uses, created before its kubelet registers: the
 * controller-manager's allocator would otherwise hand it the next free range, and policies built from the
 * nodes' podCIDRs (deploy's pod networks) would not cover the pods actually on the node. A Node left from an
 * earlier run with another range is replaced.
 */
async function ensureNodeObject(w: WorkerLayout, ctx: { kubectl: string; kubeconfig: string }) {
  const cur = await kubectl(ctx, ["get", "node", w.name, "-o", "jsonpath={.spec.podCIDR}"]);
  if (cur.code === 0 && cur.stdout.trim() === w.podCidr) return;
  if (cur.code === 0) await kubectl(ctx, ["delete", "node", w.name, "--wait=true", "--timeout=60s"]);
  const node = {
    apiVersion: "v1",
    kind: "Node",
    metadata: { name: w.name, labels: { "kubernetes.io/hostname": w.name } },
    spec: { podCIDR: w.podCidr, podCIDRs: [w.podCidr] },
  };
  const r = await kubectl(ctx, ["create", "-f", "-"], JSON.stringify(node));
  if (r.code !== 0) throw new Error(`creating Node ${w.name} (podCIDR ${w.podCidr}): ${r.stderr.trim()}`);
}

/**
 * The node dies: kubelet, kube-proxy and containerd are killed, every container of the node with them, and
 * its link goes down (a dead machine answers nothing). The pods stay bound to the Node in the API, as with a
 * real node loss. `ensureWorker` brings it back.
 */
export async function killWorker(i: number, bins: Binaries, log: (s: string) => void) {
  const w = workerLayout(i);
  await exec("ip", ["link", "set", w.link, "down"]);
  for (const spec of nodeSpecs(w, bins)) {
    const pid = await runningPid(spec.name);
    if (pid) await killPid(pid, 0);
  }
  for (const pid of await pidsMatching(`-address ${w.containerdSocket}`)) await killPid(pid, 0);
  await killCgroup(w.cgroupRoot!.slice(1) + "/kubepods");
  log(`node ${w.name}: killed (kubelet, kube-proxy, containerd, containers; link down)`);
}

/** Stops worker `i` and removes everything it made on the host (pods first, through its own runtime). */
export async function removeWorker(i: number, bins: Binaries, log: (s: string) => void) {
  const w = workerLayout(i);
  const [containerd, kubelet, kubeProxy] = nodeSpecs(w, bins);
  if (await stop(kubelet.name)) log(`stop: ${kubelet.name}`);
  if (await runningPid(containerd.name)) {
    await removePodSandboxes(join(bins.crictl, "crictl"), w.containerdSocket, w.name, log);
  }
  for (const spec of [kubeProxy, containerd]) if (await stop(spec.name)) log(`stop: ${spec.name}`);
  for (const pid of await pidsMatching(`-address ${w.containerdSocket}`)) await killPid(pid, 2000);
  await killCgroup(w.cgroupRoot!.slice(1));
  await unmountBelow([w.kubeletDir, w.stateDir, w.runDir]);
  // The veth pair, the node's routes, bridge and iptables rules all go with its namespace.
  if (await exists(`/run/netns/${w.netns}`)) await exec("ip", ["netns", "delete", w.netns!]);
  if ((await exec("ip", ["link", "show", w.link])).code === 0) await exec("ip", ["link", "del", w.link]);
  await exec("ip", ["route", "del", w.podCidr]);
  for (const d of [w.stateDir, w.runDir, join(LOG_DIR, w.name)]) {
    await Deno.remove(d, { recursive: true }).catch(() => {});
  }
  log(`${w.name}: removed`);
}

/** Resident memory (kB) and CPU time (clock ticks) of a worker's processes and its pods' cgroup-less parts. */
export async function workerProcessStats(
  i: number,
  bins: Binaries,
): Promise<{ rssKb: number; cpuTicks: number }> {
  const w = workerLayout(i);
  let rssKb = 0;
  let cpuTicks = 0;
  for (const spec of nodeSpecs(w, bins)) {
    const pid = await runningPid(spec.name);
    if (!pid) continue;
    const status = await Deno.readTextFile(`/proc/${pid}/status`).catch(() => "");
    rssKb += Number(status.match(/VmRSS:\s+(\d+)/)?.[1] ?? 0);
    const stat = await Deno.readTextFile(`/proc/${pid}/stat`).catch(() => "");
    const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    cpuTicks += Number(f[11] ?? 0) + Number(f[12] ?? 0);
  }
  return { rssKb, cpuTicks };
}

/**
 * Runs `fn` with a worker node: the first existing one, or worker 1 added for it (images from the cache,
 * built when missing) and removed afterwards, whatever the outcome. For tests that need a second node.
 */
export async function withWorker(
  fn: (w: WorkerLayout, ctx: { created: boolean; joinedMs?: number }) => Promise<void>,
  ctx: { bins: Binaries; kubectl: string; kubeconfig: string; log: (s: string) => void },
): Promise<void> {
  const existing = await listWorkers();
  if (existing.length > 0) return await fn(workerLayout(existing[0]), { created: false });
  const images = await buildImages({
    cacheDir: IMAGE_CACHE,
    corednsBinary: join(ctx.bins.coredns, "coredns"),
    log: ctx.log,
  });
  const t0 = Date.now();
  try {
    await ensureWorker(1, { ...ctx, images });
    await fn(workerLayout(1), { created: true, joinedMs: Date.now() - t0 });
  } finally {
    await removeWorker(1, ctx.bins, ctx.log);
    await exec(ctx.kubectl, [
      "--kubeconfig",
      ctx.kubeconfig,
      "delete",
      "node",
      workerLayout(1).name,
      "--wait=false",
    ]);
  }
}
