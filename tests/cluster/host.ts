// Host preparation and teardown: Debian packages, kernel settings, the API server's local address and the
// isolation rules that keep pod and service traffic on this machine. The rules go in before any pod starts.

import {
  API_DEVICE,
  BRIDGE,
  CNI_NETWORK,
  CONTAINERD_ROOT,
  DEBIAN_PACKAGES,
  HOST_STATE_FILE,
  ISOLATION_CHAIN,
  NODE_IP,
  POD_CIDR,
  RUN_DIR,
  SERVICE_CIDR,
  STATE_DIR,
} from "./config.ts";
import { exec, exists, must } from "./exec.ts";

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
    await Deno.writeTextFile(HOST_STATE_FILE, JSON.stringify({ sysctls: saved }, null, 2));
  }
  // Isolation first: forwarding is switched on only once pod traffic has nowhere to go but the cluster.
  await installIsolation();
  for (const [k, v] of Object.entries(SYSCTLS)) {
    if ((await readSysctl(k)) !== v) await writeSysctl(k, v);
  }
  if (!(await exists("/dev/kmsg"))) await must("mknod", ["-m", "600", "/dev/kmsg", "c", "1", "11"]);
  if (!(await exists("/etc/machine-id"))) {
    await Deno.writeTextFile("/etc/machine-id", crypto.randomUUID().replaceAll("-", "") + "\n");
  }
  await ensureApiAddress();
  log(`host: API address ${NODE_IP} on ${API_DEVICE}; isolation chain ${ISOLATION_CHAIN} in FORWARD`);
}

async function ensureApiAddress() {
  if ((await exec("ip", ["link", "show", API_DEVICE])).code !== 0) {
    await must("ip", ["link", "add", API_DEVICE, "type", "dummy"]);
  }
  const addrs = await must("ip", ["-4", "-o", "addr", "show", "dev", API_DEVICE]);
  if (!addrs.includes(`${NODE_IP}/32`)) await must("ip", ["addr", "add", `${NODE_IP}/32`, "dev", API_DEVICE]);
  await must("ip", ["link", "set", API_DEVICE, "up"]);
}

const COMMENT = ["-m", "comment", "--comment", "weft-cluster isolation"];

/** The FORWARD rules: pod traffic may go only to pod and service ranges, nothing forwarded may reach pods. */
export function isolationRules(): string[][] {
  return [
    ["-s", POD_CIDR, "-d", POD_CIDR, "-j", "RETURN"],
    ["-s", POD_CIDR, "-d", SERVICE_CIDR, "-j", "RETURN"],
    ["-s", POD_CIDR, "-j", "DROP"],
    ["-d", POD_CIDR, "-j", "DROP"],
  ];
}

/** Installs (or re-asserts) the isolation chain and keeps its jump the first rule of FORWARD. */
export async function installIsolation() {
  if ((await exec("iptables", ["-w", "-n", "-L", ISOLATION_CHAIN])).code !== 0) {
    await must("iptables", ["-w", "-N", ISOLATION_CHAIN]);
  }
  await must("iptables", ["-w", "-F", ISOLATION_CHAIN]);
  for (const r of isolationRules()) await must("iptables", ["-w", "-A", ISOLATION_CHAIN, ...r, ...COMMENT]);
  await ensureFirstJump();
  // Pods have no IPv6 addresses, but a bridge port could still carry forwarded IPv6: drop it.
  const v6 = ["FORWARD", "-i", BRIDGE, "-j", "DROP", ...COMMENT];
  if ((await exec("ip6tables", ["-w", "-C", ...v6])).code !== 0) await must("ip6tables", ["-w", "-I", ...v6]);
}

/** kube-proxy prepends its own FORWARD jumps; move ours back in front so it is evaluated first. */
export async function ensureFirstJump() {
  const jump = ["-j", ISOLATION_CHAIN, ...COMMENT];
  const rules = (await must("iptables", ["-w", "-S", "FORWARD"])).split("\n");
  if (rules[1]?.includes(`-j ${ISOLATION_CHAIN}`)) return;
  while ((await exec("iptables", ["-w", "-D", "FORWARD", ...jump])).code === 0) { /* remove duplicates */ }
  await must("iptables", ["-w", "-I", "FORWARD", "1", ...jump]);
}

export async function removeIsolation() {
  const jump = ["FORWARD", "-j", ISOLATION_CHAIN, ...COMMENT];
  while ((await exec("iptables", ["-w", "-D", ...jump])).code === 0) { /* all copies */ }
  await exec("iptables", ["-w", "-F", ISOLATION_CHAIN]);
  await exec("iptables", ["-w", "-X", ISOLATION_CHAIN]);
  const v6 = ["FORWARD", "-i", BRIDGE, "-j", "DROP", ...COMMENT];
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
  // libcni caches each attachment's result; those of our network name are ours.
  try {
    for await (const e of Deno.readDir("/var/lib/cni/results")) {
      if (e.name.startsWith(`${CNI_NETWORK}-`)) await Deno.remove(`/var/lib/cni/results/${e.name}`);
    }
  } catch { /* none */ }
  try {
    const saved = JSON.parse(await Deno.readTextFile(HOST_STATE_FILE)) as { sysctls: Record<string, string> };
    for (const [k, v] of Object.entries(saved.sysctls)) await writeSysctl(k, v).catch(() => {});
    await Deno.remove(HOST_STATE_FILE);
  } catch { /* nothing saved */ }
}

/** Network namespaces whose processes are the pods of our containerd (sandboxes left behind by a crash). */
export async function ourNetnsNames(): Promise<string[]> {
  const names: string[] = [];
  try {
    for await (const e of Deno.readDir("/run/netns")) if (e.name.startsWith("cni-")) names.push(e.name);
  } catch { /* none */ }
  return names;
}

/** Whether containerd's root is ours (it holds the imported images, which survive `down`). */
export function containerdRoot(): string {
  return CONTAINERD_ROOT;
}
