// Fixed names, addresses and paths of the local cluster. Everything the cluster creates on the host is named
// here, so `cluster:down` can remove exactly that and nothing else.

export const NODE_NAME = "weft-node";

/** The API server and kubelet listen on an address that exists only on a portless device this setup creates. */
export const API_DEVICE = "weft-api";
export const NODE_IP = "10.10.0.1";
export const API_PORT = 6443;
export const API_URL = `https://${NODE_IP}:${API_PORT}`;

/** Pods live on this bridge; nothing is masqueraded and FORWARD drops what leaves the two ranges below. */
export const BRIDGE = "weft0";
export const POD_CIDR = "10.244.0.0/16";
export const NODE_POD_CIDR = "10.244.0.0/24";
export const SERVICE_CIDR = "10.96.0.0/12";
export const KUBERNETES_SERVICE_IP = "10.96.0.1";
export const DNS_SERVICE_IP = "10.96.0.10";
export const CLUSTER_DOMAIN = "cluster.local";
export const CNI_NETWORK = "weft";

/**
 * Worker nodes (`cluster:up --nodes=N`): worker i has the network namespace and node name `weft-worker-<i>`,
 * a veth pair whose host end is `weft-w<i>` (10.10.<i>.1) and node end 10.10.<i>.2, and pods in
 * 10.244.<i>.0/24, routed by the host. State under WORKERS_DIR/<name>.
 */
export const WORKER_PREFIX = "weft-worker-";
export const WORKER_LINK_PREFIX = "weft-w";
export const MAX_WORKERS = 9;
/** The containerd socket of worker i (deploy imports images into every node's runtime). */
export const workerContainerdSocket = (i: number) =>
  `${RUN_DIR}/workers/${WORKER_PREFIX}${i}/containerd.sock`;

/** The filter-table chain holding the isolation rules, jumped to first from FORWARD. */
export const ISOLATION_CHAIN = "WEFT-ISOLATION";

// Non-default etcd ports keep clear of any etcd a developer runs for other work.
export const ETCD_CLIENT_PORT = 12379;
export const ETCD_PEER_PORT = 12380;

export const STATE_DIR = "/var/lib/weft-cluster";
export const RUN_DIR = "/run/weft-cluster";
export const LOG_DIR = "/var/log/weft-cluster";
export const PKI_DIR = `${STATE_DIR}/pki`;
export const ETCD_DIR = `${STATE_DIR}/etcd`;
export const KUBELET_DIR = `${STATE_DIR}/kubelet`;
export const CONTAINERD_ROOT = `${STATE_DIR}/containerd`;
export const CONTAINERD_STATE = `${RUN_DIR}/containerd`;
export const CONTAINERD_SOCKET = `${RUN_DIR}/containerd.sock`;
export const CNI_CONF_DIR = `${STATE_DIR}/cni`;
export const CNI_IPAM_DIR = `${RUN_DIR}/cni-ipam`;
export const POD_LOG_DIR = `${LOG_DIR}/pods`;
export const WORKERS_DIR = `${STATE_DIR}/workers`;
export const ADMIN_KUBECONFIG = `${STATE_DIR}/admin.kubeconfig`;
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
