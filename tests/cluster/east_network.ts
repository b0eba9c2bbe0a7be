// The east cluster's network (`cluster:up --name=east`): every process of the cluster (etcd, the control plane,
// containerd, kubelet, kube-proxy) and its pods live in the network namespace `weft-east`, joined to the host
// by a veth pair (host end `weft-east` 10.20.0.1, namespace end `eth0` 10.20.0.2, the node and API address).
// Its own loopback keeps its ports clear of west's; the host routes east's pod range to it, so west pods and
// east pods reach each other directly (flat, no NAT). The link is the namespace's only way out, and the host's
// chain WEFT-EAST-ISOLATION passes over it only traffic between the two clusters' pods (and east's node
// address), so nothing east sends leaves the machine. Inside the namespace no rule is needed for that: anything
// bound elsewhere goes out through the link.

import { CGROUP_ROOT, CLUSTER, ISOLATION_CHAIN, NETNS, PEER, RUN_DIR, STATE_DIR } from "./config.ts";
import { exec, exists, must } from "./exec.ts";
import {
  applySysctls,
  chainExists,
  ensureHostFiles,
  installIsolation,
  isolationRules,
  removeCniResults,
  removeIsolation,
} from "./host.ts";
import { ensureCgroupRoot, ensureWorkerNetwork, type NodeNetwork } from "./worker.ts";

/** The namespace, link and routed range of the cluster this process drives (east only). */
export function clusterNetwork(): NodeNetwork {
  if (!NETNS) throw new Error(`cluster ${CLUSTER.name} has no network namespace of its own`);
  // The whole pod range is routed to the namespace (one node today, room for more).
  return {
    netns: NETNS,
    link: CLUSTER.hostLink!,
    hostIp: CLUSTER.hostIp!,
    ip: CLUSTER.nodeIp,
    podCidr: CLUSTER.podCidr,
  };
}

/** argv run inside the cluster's network namespace (east), or as it is (west). */
export function inClusterNetns(argv: string[]): string[] {
  return NETNS ? ["nsenter", `--net=/run/netns/${NETNS}`, "--", ...argv] : argv;
}

/** The rules of west's chain (if it runs) differ from what this code installs: it predates the east rules. */
export async function peerChainOutdated(): Promise<boolean> {
  if (!(await chainExists(PEER.isolationChain))) return false;
  const have = (await must("iptables", ["-w", "-S", PEER.isolationChain])).split("\n").slice(1).filter(
    Boolean,
  )
    .map((r) => r.replace(/ -m comment --comment "[^"]*"/, ""));
  const want = isolationRules(PEER, CLUSTER).map((r) => `-A ${PEER.isolationChain} ${r.join(" ")}`);
  return have.join("\n") !== want.join("\n");
}

/**
 * The host side of the east cluster: its isolation chain (before the link exists), the kernel settings the
 * kubelet needs (the global ones; forwarding and bridge netfilter are set in the namespace), the namespace,
 * veth pair, routes and the cgroup root of its pods. Idempotent.
 */
export async function prepareNamespaceHost(log: (s: string) => void) {
  await Deno.mkdir(STATE_DIR, { recursive: true });
  await Deno.mkdir(RUN_DIR, { recursive: true });
  await installIsolation(ISOLATION_CHAIN, isolationRules(), undefined);
  // The host's own forwarding stays as west left it: east needs it only for traffic to west pods.
  await applySysctls((k) => !k.startsWith("net."));
  await ensureHostFiles();
  const net = clusterNetwork();
  await ensureWorkerNetwork(net);
  await ensureCgroupRoot({ cgroupRoot: CGROUP_ROOT });
  log(
    `host: namespace ${net.netns}, link ${net.link} ${net.hostIp} <-> ${net.ip} (pods ${net.podCidr} routed), ` +
      `isolation chain ${ISOLATION_CHAIN} in FORWARD`,
  );
  if (await peerChainOutdated()) {
    log(
      `host: WARNING ${PEER.name}'s ${PEER.isolationChain} predates the ${CLUSTER.name} rules and drops the ` +
        `traffic between the clusters' pods: run \`deno task cluster:up\` (${PEER.name}) to refresh it`,
    );
  }
}

/** Removes the namespace (its veth, bridge and iptables rules go with it), the host route and the chain. */
export async function teardownNamespaceNetwork() {
  const net = clusterNetwork();
  if (await exists(`/run/netns/${net.netns}`)) await exec("ip", ["netns", "delete", net.netns!]);
  if ((await exec("ip", ["link", "show", net.link])).code === 0) await exec("ip", ["link", "del", net.link]);
  await exec("ip", ["route", "del", net.podCidr]);
  await removeIsolation(ISOLATION_CHAIN, undefined);
  await removeCniResults();
}
