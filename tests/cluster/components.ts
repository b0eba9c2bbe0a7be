// The cluster's components: their config files and command lines. Flags follow what kubeadm/local-up-cluster
// use, narrowed to one node on this machine: every listener is on loopback or on the dummy NODE_IP (east: on
// the loopback and veth address of its own network namespace).

import { join } from "node:path";
import {
  API_PORT,
  BRIDGE,
  CGROUP_ROOT,
  CLUSTER_DOMAIN,
  CNI_BIN_DIR,
  CNI_CONF_DIR,
  CNI_IPAM_DIR,
  CNI_NETWORK,
  CONTAINERD_ROOT,
  CONTAINERD_SOCKET,
  CONTAINERD_STATE,
  DNS_SERVICE_IP,
  ETCD_CLIENT_PORT,
  ETCD_DIR,
  ETCD_PEER_PORT,
  KUBELET_DIR,
  NETNS,
  NODE_IP,
  NODE_NAME,
  NODE_POD_CIDR,
  POD_CIDR,
  POD_LOG_DIR,
  SERVICE_CIDR,
  STATE_DIR,
} from "./config.ts";
import { PAUSE_IMAGE } from "../../images/build.ts";
import { kubeconfigPath, pki } from "./pki.ts";
import type { ProcessSpec } from "./processes.ts";

export interface Binaries {
  k8s: string;
  etcd: string;
  coredns: string;
  crictl: string;
}

const RESOLV_CONF = join(STATE_DIR, "resolv.conf");

/**
 * Where one node keeps its runtime, kubelet and kube-proxy state, and how it is reached. The first node
 * (`mainNode`) runs in the host's network namespace next to the control plane; worker nodes (worker.ts) each
 * have their own network namespace, pod range, cgroup root and directories, so they share nothing but the host.
 */
export interface NodeLayout {
  name: string;
  ip: string;
  podCidr: string;
  /** Prefix of the node's process names (pid and log files); "" for the first node. */
  procPrefix: string;
  /** Network namespace (under /run/netns) the node's processes run in; undefined for the host's. */
  netns?: string;
  /** Parent cgroup of the node's pods; undefined for the root. */
  cgroupRoot?: string;
  stateDir: string;
  containerdRoot: string;
  containerdState: string;
  containerdSocket: string;
  cniConfDir: string;
  cniIpamDir: string;
  kubeletDir: string;
  podLogDir: string;
  /** Names of the kubelet's serving and client certificates in the PKI directory. */
  kubeletServerCert: string;
  kubeletClientCert: string;
}

export const mainNode: NodeLayout = {
  name: NODE_NAME,
  ip: NODE_IP,
  podCidr: NODE_POD_CIDR,
  procPrefix: "",
  // east: the whole cluster runs in its namespace, its pods under their own cgroup root (east_network.ts).
  netns: NETNS,
  cgroupRoot: CGROUP_ROOT,
  stateDir: STATE_DIR,
  containerdRoot: CONTAINERD_ROOT,
  containerdState: CONTAINERD_STATE,
  containerdSocket: CONTAINERD_SOCKET,
  cniConfDir: CNI_CONF_DIR,
  cniIpamDir: CNI_IPAM_DIR,
  kubeletDir: KUBELET_DIR,
  podLogDir: POD_LOG_DIR,
  kubeletServerCert: "kubelet-server",
  kubeletClientCert: "kubelet-client",
};

const containerdConfigPath = (n: NodeLayout) => join(n.stateDir, "containerd.toml");
const kubeletConfigPath = (n: NodeLayout) => join(n.stateDir, "kubelet.yaml");
const kubeProxyConfigPath = (n: NodeLayout) => join(n.stateDir, "kube-proxy.yaml");

/** Writes a file only when its content differs: kube-proxy exits when its config file is touched. */
async function writeIfChanged(path: string, text: string) {
  const old = await Deno.readTextFile(path).catch(() => undefined);
  if (old !== text) await Deno.writeTextFile(path, text);
}

/** Writes every component config file; edits here take effect when the component next starts. */
export async function writeConfigs() {
  await writeNodeConfigs(mainNode);
  // Pods with dnsPolicy Default must not learn the host's resolver (an outside address): give them the cluster's.
  await writeIfChanged(RESOLV_CONF, `nameserver ${DNS_SERVICE_IP}\noptions ndots:1\n`);
}

/** The config files of one node's containerd, CNI, kubelet and kube-proxy. */
export async function writeNodeConfigs(n: NodeLayout) {
  await Deno.mkdir(n.cniConfDir, { recursive: true });
  await writeIfChanged(containerdConfigPath(n), containerdConfig(n));
  await writeIfChanged(join(n.cniConfDir, "10-weft.conflist"), JSON.stringify(cniConfig(n), null, 2));
  await writeIfChanged(kubeletConfigPath(n), kubeletConfig(n));
  await writeIfChanged(kubeProxyConfigPath(n), kubeProxyConfig(n));
}

function containerdConfig(n: NodeLayout): string {
  // An own root, state and socket keep this containerd apart from any other on the machine. The CRI may not
  // lower oom_score_adj here (restrict_oom_score_adj), and the sandbox image is imported, never pulled.
  return `version = 2
root = "${n.containerdRoot}"
state = "${n.containerdState}"

[grpc]
  address = "${n.containerdSocket}"

[plugins."io.containerd.internal.v1.opt"]
  path = "${n.stateDir}/containerd-opt"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "${PAUSE_IMAGE}"
  restrict_oom_score_adj = true
  tolerate_missing_hugetlb_controller = true
  disable_apparmor = true
  stream_server_address = "127.0.0.1"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "${CNI_BIN_DIR}"
    conf_dir = "${n.cniConfDir}"
    max_conf_num = 1
`;
}

function cniConfig(n: NodeLayout) {
  // ipMasq false: the bridge plugin would otherwise masquerade everything leaving the pod subnet.
  return {
    cniVersion: "1.0.0",
    name: CNI_NETWORK,
    plugins: [{
      type: "bridge",
      bridge: BRIDGE,
      isGateway: true,
      ipMasq: false,
      hairpinMode: true,
      ipam: {
        type: "host-local",
        dataDir: n.cniIpamDir,
        ranges: [[{ subnet: n.podCidr }]],
        routes: [{ dst: "0.0.0.0/0" }],
      },
    }],
  };
}

function kubeletConfig(n: NodeLayout): string {
  return `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: ${n.ip}
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
tlsCertFile: ${pki.crt(n.kubeletServerCert)}
tlsPrivateKeyFile: ${pki.key(n.kubeletServerCert)}
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: ${pki.ca}}
authorization: {mode: Webhook}
# cgroup v1 hybrid without systemd: cgroupfs driver on both sides, and v1 explicitly allowed.
cgroupDriver: cgroupfs
failCgroupV1: false${
    n.cgroupRoot
      ? `\n# Each node's pods under its own parent, so two kubelets never manage the same cgroups.\ncgroupRoot: ${n.cgroupRoot}`
      : ""
  }
failSwapOn: false
protectKernelDefaults: false
# Lowering oom_score_adj is not permitted on these machines.
oomScoreAdj: 0
containerRuntimeEndpoint: unix://${n.containerdSocket}
clusterDNS: [${DNS_SERVICE_IP}]
clusterDomain: ${CLUSTER_DOMAIN}
resolvConf: ${RESOLV_CONF}
podLogsDir: ${n.podLogDir}
volumePluginDir: ${n.stateDir}/kubelet-plugins
# containerd 1.6.20 does not pin the sandbox image and nothing can be pulled: never garbage-collect images.
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: "100Mi", nodefs.available: "0%", nodefs.inodesFree: "0%", imagefs.available: "0%"}
maxPods: 110
serializeImagePulls: false
rotateCertificates: false
serverTLSBootstrap: false
`;
}

function kubeProxyConfig(n: NodeLayout): string {
  // conntrack limits at 0 leave the kernel's values alone (writing them fails here); NodePorts only on NODE_IP.
  return `apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection:
  kubeconfig: ${kubeconfigPath("kube-proxy")}
hostnameOverride: ${n.name}
mode: iptables
clusterCIDR: ${POD_CIDR}
bindAddress: 127.0.0.1
healthzBindAddress: 127.0.0.1:10256
metricsBindAddress: 127.0.0.1:10249
nodePortAddresses: [${n.ip}/32]
oomScoreAdj: 0
conntrack:
  maxPerCore: 0
  min: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
`;
}

/** Component command lines, in start order. */
export function processSpecs(bin: Binaries): ProcessSpec[] {
  const k = (b: string) => join(bin.k8s, b);
  const etcdUrl = `https://127.0.0.1:${ETCD_CLIENT_PORT}`;
  const peerUrl = `https://127.0.0.1:${ETCD_PEER_PORT}`;
  return [
    nodeSpecs(mainNode, bin)[0],
    {
      name: "etcd",
      binary: join(bin.etcd, "etcd"),
      args: [
        "--name=weft",
        `--data-dir=${ETCD_DIR}`,
        `--listen-client-urls=${etcdUrl}`,
        `--advertise-client-urls=${etcdUrl}`,
        `--listen-peer-urls=${peerUrl}`,
        `--initial-advertise-peer-urls=${peerUrl}`,
        `--initial-cluster=weft=${peerUrl}`,
        `--cert-file=${pki.crt("etcd")}`,
        `--key-file=${pki.key("etcd")}`,
        "--client-cert-auth",
        `--trusted-ca-file=${pki.ca}`,
        `--peer-cert-file=${pki.crt("etcd")}`,
        `--peer-key-file=${pki.key("etcd")}`,
        "--peer-client-cert-auth",
        `--peer-trusted-ca-file=${pki.ca}`,
        // A test cluster: losing the last writes on a host crash is fine, fsync latency on 2 cores is not.
        "--unsafe-no-fsync",
        "--log-level=warn",
      ],
      netns: NETNS,
    },
    {
      name: "kube-apiserver",
      binary: k("kube-apiserver"),
      args: [
        `--advertise-address=${NODE_IP}`,
        `--bind-address=${NODE_IP}`,
        `--secure-port=${API_PORT}`,
        `--etcd-servers=${etcdUrl}`,
        `--etcd-cafile=${pki.ca}`,
        `--etcd-certfile=${pki.crt("apiserver-etcd-client")}`,
        `--etcd-keyfile=${pki.key("apiserver-etcd-client")}`,
        `--tls-cert-file=${pki.crt("apiserver")}`,
        `--tls-private-key-file=${pki.key("apiserver")}`,
        `--client-ca-file=${pki.ca}`,
        `--kubelet-client-certificate=${pki.crt("apiserver-kubelet-client")}`,
        `--kubelet-client-key=${pki.key("apiserver-kubelet-client")}`,
        `--kubelet-certificate-authority=${pki.ca}`,
        "--kubelet-preferred-address-types=InternalIP",
        "--authorization-mode=Node,RBAC",
        "--enable-admission-plugins=NodeRestriction",
        `--service-account-issuer=https://kubernetes.default.svc.${CLUSTER_DOMAIN}`,
        `--service-account-key-file=${pki.saPub}`,
        `--service-account-signing-key-file=${pki.saKey}`,
        `--service-cluster-ip-range=${SERVICE_CIDR}`,
        // Webhooks and aggregated APIs are dialled at an endpoint's pod IP, reachable over the bridge.
        "--enable-aggregator-routing=true",
        "--allow-privileged=true",
        "--profiling=false",
        "--v=1",
      ],
      netns: NETNS,
    },
    {
      name: "kube-controller-manager",
      binary: k("kube-controller-manager"),
      args: [
        `--kubeconfig=${kubeconfigPath("controller-manager")}`,
        `--authentication-kubeconfig=${kubeconfigPath("controller-manager")}`,
        `--authorization-kubeconfig=${kubeconfigPath("controller-manager")}`,
        "--bind-address=127.0.0.1",
        `--service-account-private-key-file=${pki.saKey}`,
        `--root-ca-file=${pki.ca}`,
        `--cluster-signing-cert-file=${pki.ca}`,
        `--cluster-signing-key-file=${pki.caKey}`,
        "--use-service-account-credentials=true",
        "--leader-elect=false",
        "--allocate-node-cidrs=true",
        `--cluster-cidr=${POD_CIDR}`,
        "--node-cidr-mask-size=24",
        `--service-cluster-ip-range=${SERVICE_CIDR}`,
        "--profiling=false",
        "--v=1",
      ],
      netns: NETNS,
    },
    {
      name: "kube-scheduler",
      binary: k("kube-scheduler"),
      args: [
        `--kubeconfig=${kubeconfigPath("scheduler")}`,
        `--authentication-kubeconfig=${kubeconfigPath("scheduler")}`,
        `--authorization-kubeconfig=${kubeconfigPath("scheduler")}`,
        "--bind-address=127.0.0.1",
        "--leader-elect=false",
        "--profiling=false",
        "--v=1",
      ],
      netns: NETNS,
    },
    ...nodeSpecs(mainNode, bin).slice(1),
  ];
}

/** containerd, kubelet and kube-proxy of one node, in start order. */
export function nodeSpecs(n: NodeLayout, bin: Binaries): ProcessSpec[] {
  const k = (b: string) => join(bin.k8s, b);
  return [
    {
      name: `${n.procPrefix}containerd`,
      binary: "/usr/bin/containerd",
      args: ["--config", containerdConfigPath(n)],
      netns: n.netns,
    },
    {
      name: `${n.procPrefix}kubelet`,
      binary: k("kubelet"),
      args: [
        `--config=${kubeletConfigPath(n)}`,
        `--kubeconfig=${kubeconfigPath(n.kubeletClientCert)}`,
        `--hostname-override=${n.name}`,
        `--node-ip=${n.ip}`,
        `--root-dir=${n.kubeletDir}`,
        "--v=1",
      ],
      netns: n.netns,
    },
    {
      name: `${n.procPrefix}kube-proxy`,
      binary: k("kube-proxy"),
      args: [`--config=${kubeProxyConfigPath(n)}`, "--v=1"],
      netns: n.netns,
    },
  ];
}
