// Host preparation and teardown: Debian packages, kernel settings, the API server's local address and the
// isolation rules that keep pod and service traffic on this machine. The rules go in before any pod starts.

import {
  API_DEVICE,
  BRIDGE,
  CLUSTER,
  type ClusterConfig,
  DEBIAN_PACKAGES,
  HOST_STATE_FILE,
  ISOLATION_CHAIN,
  NODE_IP,
  PEER,
  RUN_DIR,
  STATE_DIR,
  WORKER_LINK_PREFIX,
} from "./config.ts";
import { exec, exists, must, sleep } from "./exec.ts";

/** Installs the Debian packages the cluster needs when any is missing (CI starts from a fresh machine). */
export async function ensurePackages(log: (s: string) => void) {
  const missing: string[] = [];
  for (const p of DEBIAN_PACKAGES) {
    const r = await exec("dpkg-query", ["-W", "-f=${Status}", p]);
    if (!r.stdout.includes("install ok installed")) missing.push(p);
  }
  if (missing.length === 0) return;
  log(`packages: apt-get install ${missing.join(" ")}`);
  const env = { DEBIAN_FRONTEND: "noninteractive" };
  await must("apt-get", ["update", "-qq"], { env });
  await must("apt-get", ["install", "-y", "-qq", "--no-install-recommends", ...missing], { env });
}

interface HostState {
  sysctls: Record<string, string>;
  netnsMounted: boolean;
  cniDirExisted: boolean;
}

async function isMountPoint(path: string): Promise<boolean> {
  const mountinfo = await Deno.readTextFile("/proc/self/mountinfo");
  return mountinfo.split("\n").some((l) => l.split(" ")[4] === path);
}

async function readSysctl(key: string): Promise<string | undefined> {
  try {
    return (await Deno.readTextFile(`/proc/sys/${key.replaceAll(".", "/")}`)).trim();
  } catch {
    return undefined;
  }
}

async function writeSysctl(key: string, value: string) {
  await Deno.writeTextFile(`/proc/sys/${key.replaceAll(".", "/")}`, value);
}

/**
 * Kernel settings: forwarding for the bridge, bridged traffic through iptables (kube-proxy's DNAT on same-bridge
 * replies), inotify limits for many watchers, and the values kubelet would otherwise write and fail on.
 * The previous values are saved once and restored by `down`.
 */
const SYSCTLS: Record<string, string> = {
  "net.ipv4.ip_forward": "1",
  "net.bridge.bridge-nf-call-iptables": "1",
  "fs.inotify.max_user_watches": "524288",
  "fs.inotify.max_user_instances": "512",
  "vm.overcommit_memory": "1",
  "vm.panic_on_oom": "0",
  "kernel.panic": "10",
  "kernel.panic_on_oops": "1",
  "kernel.keys.root_maxkeys": "1000000",
  "kernel.keys.root_maxbytes": "25000000",
};

export async function prepareHost(log: (s: string) => void) {
  await Deno.mkdir(STATE_DIR, { recursive: true });
  await Deno.mkdir(RUN_DIR, { recursive: true });
  if (!(await exists(HOST_STATE_FILE))) {
    const saved: Record<string, string> = {};
    for (const k of Object.keys(SYSCTLS)) {
      const v = await readSysctl(k);
      if (v !== undefined) saved[k] = v;
    }
    // containerd creates these on first use; `down` removes them only if they were not there before.
    const state: HostState = {
      sysctls: saved,
      netnsMounted: await isMountPoint("/run/netns"),
      cniDirExisted: await exists("/var/lib/cni"),
    };
    await Deno.writeTextFile(HOST_STATE_FILE, JSON.stringify(state, null, 2));
  }
  // Isolation first: forwarding is switched on only once pod traffic has nowhere to go but the cluster.
  await installIsolation();
  await applySysctls(() => true);
  await ensureHostFiles();
  await ensureApiAddress();
  log(`host: API address ${NODE_IP} on ${API_DEVICE}; isolation chain ${ISOLATION_CHAIN} in FORWARD`);
}

/** Sets the kernel settings of SYSCTLS that `want` selects, when they differ. */
export async function applySysctls(want: (key: string) => boolean) {
  for (const [k, v] of Object.entries(SYSCTLS)) {
    if (want(k) && (await readSysctl(k)) !== v) await writeSysctl(k, v);
  }
}

/** Files the kubelet and containerd expect on a host. */
export async function ensureHostFiles() {
  if (!(await exists("/dev/kmsg"))) await must("mknod", ["-m", "600", "/dev/kmsg", "c", "1", "11"]);
  if (!(await exists("/etc/machine-id"))) {
    await Deno.writeTextFile("/etc/machine-id", crypto.randomUUID().replaceAll("-", "") + "\n");
  }
}

async function ensureApiAddress() {
  if ((await exec("ip", ["link", "show", API_DEVICE])).code !== 0) {
    // An empty bridge stands in for a dummy device (this kernel has no dummy driver and loads no modules): its
    // address is local to the host and it has no ports, so nothing it holds is reachable from outside.
    await must("ip", ["link", "add", API_DEVICE, "type", "bridge"]);
  }
  const addrs = await must("ip", ["-4", "-o", "addr", "show", "dev", API_DEVICE]);
  if (!addrs.includes(`${NODE_IP}/32`)) await must("ip", ["addr", "add", `${NODE_IP}/32`, "dev", API_DEVICE]);
  await must("ip", ["link", "set", API_DEVICE, "up"]);
}

const COMMENT = ["-m", "comment", "--comment", "weft-cluster isolation"];

/**
 * The FORWARD rules of cluster `c` (pure; `peer` is the other cluster on the machine).
 *
 * west: pod traffic may go only to pod and service ranges, nothing forwarded may reach pods, and a worker
 * node's link forwards nothing but pod traffic. Between west pods and east (east's pods, and its node address
 * for its API server and NodePorts) traffic may pass, but only over east's link: with east down its ranges have
 * no route here, so they would leave by the default route and are dropped.
 *
 * east: its namespace's only way out is its link; what crosses it may be only east pods (or its node address)
 * to and from west pods, over west's bridge or worker links. Everything else from or to the link is dropped,
 * so neither east's pods nor its processes reach anything off the machine, whatever west is doing.
 */
export function isolationRules(c: ClusterConfig = CLUSTER, peer: ClusterConfig = PEER): string[][] {
  if (c.netns === undefined) {
    const pods = c.podCidr;
    const rules = [
      ["-s", pods, "-d", pods, "-j", "RETURN"],
      ["-s", pods, "-d", c.serviceCidr, "-j", "RETURN"],
    ];
    if (peer.hostLink) {
      const node = `${peer.nodeIp}/32`;
      rules.push(
        ["-s", pods, "-d", peer.podCidr, "-o", peer.hostLink, "-j", "RETURN"],
        ["-s", pods, "-d", node, "-o", peer.hostLink, "-j", "RETURN"],
        ["-s", peer.podCidr, "-d", pods, "-i", peer.hostLink, "-j", "RETURN"],
        ["-s", node, "-d", pods, "-i", peer.hostLink, "-j", "RETURN"],
      );
    }
    rules.push(
      ["-s", pods, "-j", "DROP"],
      ["-d", pods, "-j", "DROP"],
      // A worker node's link carries its pods' traffic (allowed above) and nothing else forwarded.
      ["-i", `${WORKER_LINK_PREFIX}+`, "-j", "DROP"],
      ["-o", `${WORKER_LINK_PREFIX}+`, "-j", "DROP"],
    );
    return rules;
  }
  const link = c.hostLink!;
  const node = `${c.nodeIp}/32`;
  const westLinks = [BRIDGE, `${WORKER_LINK_PREFIX}+`];
  const rules: string[][] = [];
  for (const src of [c.podCidr, node]) {
    for (const w of westLinks) {
      rules.push(["-s", src, "-d", peer.podCidr, "-i", link, "-o", w, "-j", "RETURN"]);
      rules.push(["-s", peer.podCidr, "-d", src, "-i", w, "-o", link, "-j", "RETURN"]);
    }
  }
  rules.push(
    ["-i", link, "-j", "DROP"],
    ["-o", link, "-j", "DROP"],
    ["-s", c.podCidr, "-j", "DROP"],
    ["-d", c.podCidr, "-j", "DROP"],
  );
  return rules;
}

/** Installs (or re-asserts) an isolation chain and keeps its jump ahead of every other FORWARD rule. */
export async function installIsolation(
  chain = ISOLATION_CHAIN,
  rules = isolationRules(),
  v6Bridge: string | undefined = BRIDGE,
) {
  // One iptables-restore transaction replaces the chain's rules atomically: there is never a moment in which
  // the chain is empty while FORWARD jumps to it.
  const quote = (a: string) => (a.includes(" ") ? `"${a}"` : a);
  const lines = ["*filter", `:${chain} - [0:0]`];
  for (const r of rules) {
    lines.push(["-A", chain, ...r, ...COMMENT].map(quote).join(" "));
  }
  lines.push("COMMIT", "");
  await must("iptables-restore", ["-w", "--noflush"], { stdin: lines.join("\n") });
  await ensureFirstJump(chain);
  if (v6Bridge === undefined) return;
  // Pods have no IPv6 addresses, but a bridge port could still carry forwarded IPv6: drop it.
  const v6 = ["FORWARD", "-i", v6Bridge, "-j", "DROP", ...COMMENT];
  if ((await exec("ip6tables", ["-w", "-C", ...v6])).code !== 0) await must("ip6tables", ["-w", "-I", ...v6]);
}

/** Whether an isolation chain exists in the host's filter table. */
export async function chainExists(chain: string): Promise<boolean> {
  return (await exec("iptables", ["-w", "-S", chain])).code === 0;
}

/** The chains kube-proxy (iptables mode) jumps to from FORWARD; it inserts each one at the top when missing. */
const KUBE_PROXY_FORWARD_JUMPS = [
  "KUBE-PROXY-FIREWALL",
  "KUBE-FORWARD",
  "KUBE-SERVICES",
  "KUBE-EXTERNAL-SERVICES",
];

/**
 * kube-proxy prepends its own FORWARD jumps at its first syncs, which can come after the cluster's components
 * report healthy (seen on a cold machine). Waits (bounded) for them, then puts ours back in front.
 */
export async function ensureFirstJumpAfterKubeProxy(timeoutMs = 60_000) {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    const rules = await must("iptables", ["-w", "-S", "FORWARD"]);
    if (KUBE_PROXY_FORWARD_JUMPS.every((c) => rules.includes(`-j ${c}`))) break;
    await sleep(250);
  }
  // Even if kube-proxy never synced, our jump must be first.
  await ensureFirstJump();
}

/**
 * kube-proxy prepends its own FORWARD jumps; put ours back in front so it is evaluated first. West's chain is
 * rule 1; east's (when it runs) comes right after the leading weft isolation jumps, so it too precedes
 * KUBE-FORWARD's accept of established traffic.
 */
export async function ensureFirstJump(chain = ISOLATION_CHAIN) {
  const jump = ["-j", chain, ...COMMENT];
  const isOurs = (r: string) => r.includes(`-j ${chain} `) || r.endsWith(`-j ${chain}`);
  let rules = (await must("iptables", ["-w", "-S", "FORWARD"])).split("\n");
  // Line 0 is the policy, so a rule's line index is its rule number.
  let at = 1;
  if (chain !== clusterChain("west")) {
    while (rules[at] !== undefined && !isOurs(rules[at]) && /-j WEFT-\S*ISOLATION\b/.test(rules[at])) at++;
  }
  if (rules[at] !== undefined && isOurs(rules[at])) return;
  // Insert the new jump before removing old ones, so the chain is never bypassed in between.
  await must("iptables", ["-w", "-I", "FORWARD", String(at), ...jump]);
  rules = (await must("iptables", ["-w", "-S", "FORWARD"])).split("\n");
  const later = rules.map((r, i) => (i > at && isOurs(r) ? i : 0)).filter((i) => i > 0);
  for (const n of later.reverse()) await must("iptables", ["-w", "-D", "FORWARD", String(n)]);
}

const clusterChain = (name: "west" | "east") => (name === CLUSTER.name ? CLUSTER : PEER).isolationChain;

export async function removeIsolation(chain = ISOLATION_CHAIN, v6Bridge: string | undefined = BRIDGE) {
  const jump = ["FORWARD", "-j", chain, ...COMMENT];
  while ((await exec("iptables", ["-w", "-D", ...jump])).code === 0) { /* all copies */ }
  await exec("iptables", ["-w", "-F", chain]);
  await exec("iptables", ["-w", "-X", chain]);
  if (v6Bridge === undefined) return;
  const v6 = ["FORWARD", "-i", v6Bridge, "-j", "DROP", ...COMMENT];
  while ((await exec("ip6tables", ["-w", "-D", ...v6])).code === 0) { /* all copies */ }
}

/** Unmounts every mount below the cluster's directories, deepest first. */
export async function unmountBelow(prefixes: string[]): Promise<string[]> {
  const mountinfo = await Deno.readTextFile("/proc/self/mountinfo");
  const points = mountinfo.split("\n").map((l) => l.split(" ")[4]).filter((p): p is string =>
    !!p && prefixes.some((pre) => p === pre || p.startsWith(pre + "/"))
  ).map((p) => p.replace(/\\040/g, " "));
  points.sort((a, b) => b.length - a.length);
  for (const p of points) {
    if ((await exec("umount", [p])).code !== 0) await exec("umount", ["-l", p]);
  }
  return points;
}

/** Removes the links, routes, rules and files of the cluster's network; restores the saved kernel settings. */
export async function teardownNetwork() {
  await removeIsolation();
  for (const dev of [BRIDGE, API_DEVICE]) {
    if ((await exec("ip", ["link", "show", dev])).code === 0) await exec("ip", ["link", "del", dev]);
  }
  await removeCniResults();
  for (const cmd of ["iptables", "ip6tables"] as const) await removeKubeChains(cmd);
  // The east cluster shares the kernel settings and libcni's cache directory: while it runs, keep both (and
  // the saved values, for the next `down`).
  if (await exists(PEER.runDir)) return;
  try {
    const saved = JSON.parse(await Deno.readTextFile(HOST_STATE_FILE)) as HostState;
    for (const [k, v] of Object.entries(saved.sysctls)) await writeSysctl(k, v).catch(() => {});
    if (!saved.cniDirExisted) await Deno.remove("/var/lib/cni", { recursive: true }).catch(() => {});
    if (!saved.netnsMounted && (await isMountPoint("/run/netns"))) {
      const left = [...Deno.readDirSync("/run/netns")];
      if (left.length === 0) await exec("umount", ["/run/netns"]);
    }
    await Deno.remove(HOST_STATE_FILE);
  } catch { /* nothing saved */ }
}

/**
 * libcni caches each attachment's result as `<network>-<container>-<if>`; those of this cluster's network name
 * are ours (the longest matching network name decides: east's "weft-east-…" also starts with west's "weft-").
 */
export async function removeCniResults() {
  const owner = (f: string) =>
    [CLUSTER, PEER].filter((c) => f.startsWith(`${c.cniNetwork}-`)).sort((a, b) =>
      b.cniNetwork.length - a.cniNetwork.length
    )[0];
  try {
    for await (const e of Deno.readDir("/var/lib/cni/results")) {
      if (owner(e.name) === CLUSTER) await Deno.remove(`/var/lib/cni/results/${e.name}`);
    }
  } catch { /* none */ }
}

/**
 * kubelet and kube-proxy own every KUBE-* chain (kubelet's KUBE-FIREWALL and canaries, kube-proxy's service
 * chains): remove the jumps to them from the built-in chains, then the chains themselves.
 */
async function removeKubeChains(cmd: "iptables" | "ip6tables") {
  for (const table of ["filter", "nat", "mangle"]) {
    const r = await exec(cmd, ["-w", "-t", table, "-S"]);
    if (r.code !== 0) continue;
    const lines = r.stdout.split("\n");
    for (const l of lines) {
      const m = l.match(/^-A (INPUT|OUTPUT|FORWARD|PREROUTING|POSTROUTING) (.*-j KUBE-\S+.*)$/);
      if (!m) continue;
      // iptables -S quotes comments; split on spaces outside quotes to pass each argument through.
      const args = m[2].match(/"[^"]*"|\S+/g)!.map((a) => a.replace(/^"|"$/g, ""));
      await exec(cmd, ["-w", "-t", table, "-D", m[1], ...args]);
    }
    const chains = lines.filter((l) => l.startsWith("-N KUBE-")).map((l) => l.slice(3));
    for (const c of chains) await exec(cmd, ["-w", "-t", table, "-F", c]);
    for (const c of chains) await exec(cmd, ["-w", "-t", table, "-X", c]);
  }
}
