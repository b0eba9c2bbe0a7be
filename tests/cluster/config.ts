// Fixed names, addresses and paths of the local clusters. Everything a cluster creates on the host is named
// here, so `cluster:down` can remove exactly that and nothing else.
//
// Two independent clusters can run side by side: "west" (the default, `cluster:up`) in the host's network
// namespace, and "east" (`cluster:up --name=east`) wholly inside the network namespace `weft-east`. The
// module-level constants below are those of the cluster this process drives, chosen once by WEFT_CLUSTER
// (main.ts sets it from `--name` before loading the cluster modules; unset means west). Code that deals with
// both clusters at once (deploy's image target, the two-cluster test) uses `clusterConfig(name)` instead.
// This module imports nothing: it ships in the project image (images/build.ts).

export type ClusterName = "west" | "east";
export const CLUSTER_NAMES: readonly ClusterName[] = ["west", "east"];

export interface ClusterConfig {
  name: ClusterName;
  nodeName: string;
  /** west: the port-less device in the host namespace that holds the node/API address. */
  apiDevice?: string;
  /**
   * east: the network namespace every process of the cluster runs in, the host end of its veth pair (the
   * namespace end is `eth0`, holding `nodeIp`) and the host end's address.
   */
  netns?: string;
  hostLink?: string;
  hostIp?: string;
  nodeIp: string;
  apiUrl: string;
  podCidr: string;
  nodePodCidr: string;
  serviceCidr: string;
  kubernetesServiceIp: string;
  dnsServiceIp: string;
  cniNetwork: string;
  /** The host's filter chain holding this cluster's isolation rules, jumped to from FORWARD before KUBE-*. */
  isolationChain: string;
  /** Parent cgroup of the node's pods; undefined for the root (west's first node). */
  cgroupRoot?: string;
  /** Subject CN of the cluster CA and the kubeconfigs' cluster/context name. */
  caName: string;
  kubeconfigCluster: string;
  stateDir: string;
  runDir: string;
  logDir: string;
  adminKubeconfig: string;
  containerdSocket: string;
}

export function clusterConfig(name: ClusterName): ClusterConfig {
  if (name === "west") {
    const stateDir = "/var/lib/weft-cluster";
    const runDir = "/run/weft-cluster";
    return {
      name,
      nodeName: "weft-node",
      apiDevice: "weft-api",
      nodeIp: "10.10.0.1",
      apiUrl: "https://10.10.0.1:6443",
      podCidr: "10.244.0.0/16",
      nodePodCidr: "10.244.0.0/24",
      serviceCidr: "10.96.0.0/12",
      kubernetesServiceIp: "10.96.0.1",
      dnsServiceIp: "10.96.0.10",
      cniNetwork: "weft",
      isolationChain: "WEFT-ISOLATION",
      caName: "weft-cluster-ca",
      kubeconfigCluster: "weft",
      stateDir,
      runDir,
      logDir: "/var/log/weft-cluster",
      adminKubeconfig: `${stateDir}/admin.kubeconfig`,
      containerdSocket: `${runDir}/containerd.sock`,
    };
  }
  if (name === "east") {
    const stateDir = "/var/lib/weft-cluster-east";
    const runDir = "/run/weft-cluster-east";
    return {
      name,
      nodeName: "weft-east-node",
      netns: "weft-east",
      hostLink: "weft-east",
      hostIp: "10.20.0.1",
      nodeIp: "10.20.0.2",
      apiUrl: "https://10.20.0.2:6443",
      podCidr: "10.245.0.0/16",
      nodePodCidr: "10.245.0.0/24",
      serviceCidr: "10.112.0.0/12",
      kubernetesServiceIp: "10.112.0.1",
      dnsServiceIp: "10.112.0.10",
      cniNetwork: "weft-east",
      isolationChain: "WEFT-EAST-ISOLATION",
      cgroupRoot: "/weft-east",
      caName: "weft-cluster-east-ca",
      kubeconfigCluster: "weft-east",
      stateDir,
      runDir,
      logDir: "/var/log/weft-cluster-east",
      adminKubeconfig: `${stateDir}/admin.kubeconfig`,
      containerdSocket: `${runDir}/containerd.sock`,
    };
  }
  throw new Error(`unknown cluster "${name}": want one of ${CLUSTER_NAMES.join(", ")}`);
}

function selected(): ClusterName {
  const v = Deno.env.get("WEFT_CLUSTER") ?? "west";
  if (!(CLUSTER_NAMES as readonly string[]).includes(v)) {
    throw new Error(`WEFT_CLUSTER=${v}: want one of ${CLUSTER_NAMES.join(", ")}`);
  }
  return v as ClusterName;
}

/** The cluster this process drives (see the top of the file). */
export const CLUSTER: ClusterConfig = clusterConfig(selected());
/** The other cluster on this machine: its ranges are the only ones this cluster's pods may reach besides its own. */
export const PEER: ClusterConfig = clusterConfig(CLUSTER.name === "west" ? "east" : "west");

export const NODE_NAME = CLUSTER.nodeName;

/**
 * west: the API server and kubelet listen on an address that exists only on a portless device this setup
 * creates (API_DEVICE, west's only). east: on the namespace end of its veth pair.
 */
export const API_DEVICE = clusterConfig("west").apiDevice!;
export const NODE_IP = CLUSTER.nodeIp;
export const API_PORT = 6443;
export const API_URL = CLUSTER.apiUrl;
/** east: the network namespace of the whole cluster; undefined for west (the host's). */
export const NETNS = CLUSTER.netns;
export const CGROUP_ROOT = CLUSTER.cgroupRoot;

/** Pods live on this bridge; nothing is masqueraded and FORWARD drops what leaves the allowed ranges. */
export const BRIDGE = "weft0";
export const POD_CIDR = CLUSTER.podCidr;
export const NODE_POD_CIDR = CLUSTER.nodePodCidr;
export const SERVICE_CIDR = CLUSTER.serviceCidr;
export const KUBERNETES_SERVICE_IP = CLUSTER.kubernetesServiceIp;
export const DNS_SERVICE_IP = CLUSTER.dnsServiceIp;
export const CLUSTER_DOMAIN = "cluster.local";
export const CNI_NETWORK = CLUSTER.cniNetwork;

/**
 * Worker nodes (`cluster:up --nodes=N`, west only): worker i has the network namespace and node name
 * `weft-worker-<i>`, a veth pair whose host end is `weft-w<i>` (10.10.<i>.1) and node end 10.10.<i>.2, and
 * pods in 10.244.<i>.0/24, routed by the host. State under WORKERS_DIR/<name>.
 */
export const WORKER_PREFIX = "weft-worker-";
export const WORKER_LINK_PREFIX = "weft-w";
export const MAX_WORKERS = 9;
export const WORKERS_SUPPORTED = CLUSTER.name === "west";
/** The containerd socket of worker i (deploy imports images into every node's runtime). */
export const workerContainerdSocket = (i: number) =>
  `${clusterConfig("west").runDir}/workers/${WORKER_PREFIX}${i}/containerd.sock`;

/** The filter-table chain holding the isolation rules, jumped to first from FORWARD. */
export const ISOLATION_CHAIN = CLUSTER.isolationChain;

// Non-default etcd ports keep clear of any etcd a developer runs for other work.
export const ETCD_CLIENT_PORT = 12379;
export const ETCD_PEER_PORT = 12380;

export const STATE_DIR = CLUSTER.stateDir;
export const RUN_DIR = CLUSTER.runDir;
export const LOG_DIR = CLUSTER.logDir;
export const PKI_DIR = `${STATE_DIR}/pki`;
export const ETCD_DIR = `${STATE_DIR}/etcd`;
export const KUBELET_DIR = `${STATE_DIR}/kubelet`;
export const CONTAINERD_ROOT = `${STATE_DIR}/containerd`;
export const CONTAINERD_STATE = `${RUN_DIR}/containerd`;
export const CONTAINERD_SOCKET = CLUSTER.containerdSocket;
export const CNI_CONF_DIR = `${STATE_DIR}/cni`;
export const CNI_IPAM_DIR = `${RUN_DIR}/cni-ipam`;
export const POD_LOG_DIR = `${LOG_DIR}/pods`;
export const WORKERS_DIR = `${STATE_DIR}/workers`;
export const ADMIN_KUBECONFIG = CLUSTER.adminKubeconfig;
/** Host settings changed by `up` with their previous values, restored by `down`. */
export const HOST_STATE_FILE = `${STATE_DIR}/host-state.json`;

/** Built binaries, keyed by version (see build.sh); outside the repository so a fresh clone reuses them. */
export const BIN_CACHE = Deno.env.get("WEFT_CLUSTER_CACHE") ?? "/var/cache/weft/cluster";
export const IMAGE_CACHE = "/var/cache/weft/images";

/** Debian packages the cluster needs on the host (installed by `up` when missing). */
export const DEBIAN_PACKAGES = [
  "containerd",
  "runc",
  "containernetworking-plugins",
  "iptables",
  "iproute2",
  "openssl",
  "util-linux",
  "mount",
];
export const CNI_BIN_DIR = "/usr/lib/cni";
