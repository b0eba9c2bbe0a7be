// The cluster's components: their config files and command lines. Flags follow what kubeadm/local-up-cluster
// use, narrowed to one node on this machine: every listener is on loopback or on the dummy NODE_IP.

import { join } from "node:path";
import {
  API_PORT,
  BRIDGE,
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

const CONTAINERD_CONFIG = join(STATE_DIR, "containerd.toml");
const KUBELET_CONFIG = join(STATE_DIR, "kubelet.yaml");
const KUBE_PROXY_CONFIG = join(STATE_DIR, "kube-proxy.yaml");
const RESOLV_CONF = join(STATE_DIR, "resolv.conf");

/** Writes a file only when its content differs: kube-proxy exits when its config file is touched. */
async function writeIfChanged(path: string, text: string) {
  const old = await Deno.readTextFile(path).catch(() => undefined);
  if (old !== text) await Deno.writeTextFile(path, text);
}

/** Writes every component config file; edits here take effect when the component next starts. */
export async function writeConfigs() {
  await Deno.mkdir(CNI_CONF_DIR, { recursive: true });
  await writeIfChanged(CONTAINERD_CONFIG, containerdConfig());
  await writeIfChanged(join(CNI_CONF_DIR, "10-weft.conflist"), JSON.stringify(cniConfig(), null, 2));
  await writeIfChanged(KUBELET_CONFIG, kubeletConfig());
  await writeIfChanged(KUBE_PROXY_CONFIG, kubeProxyConfig());
  // Pods with dnsPolicy Default must not learn the host's resolver (an outside address): give them the cluster's.
  await writeIfChanged(RESOLV_CONF, `nameserver ${DNS_SERVICE_IP}\noptions ndots:1\n`);
}

function containerdConfig(): string {
  // An own root, state and socket keep this containerd apart from any other on the machine. The CRI may not
  // lower oom_score_adj here (restrict_oom_score_adj), and the sandbox image is imported, never pulled.
  return `version = 2
root = "${CONTAINERD_ROOT}"
state = "${CONTAINERD_STATE}"

[grpc]
  address = "${CONTAINERD_SOCKET}"

[plugins."io.containerd.internal.v1.opt"]
  path = "${STATE_DIR}/containerd-opt"

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
    conf_dir = "${CNI_CONF_DIR}"
    max_conf_num = 1
`;
}

function cniConfig() {
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
        dataDir: CNI_IPAM_DIR,
        ranges: [[{ subnet: NODE_POD_CIDR }]],
        routes: [{ dst: "0.0.0.0/0" }],
      },
    }],
  };
}

function kubeletConfig(): string {
  return `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: ${NODE_IP}
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
tlsCertFile: ${pki.crt("kubelet-server")}
tlsPrivateKeyFile: ${pki.key("kubelet-server")}
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: ${pki.ca}}
authorization: {mode: Webhook}
# cgroup v1 hybrid without systemd: cgroupfs driver on both sides, and v1 explicitly allowed.
cgroupDriver: cgroupfs
failCgroupV1: false
failSwapOn: false
protectKernelDefaults: false
# Lowering oom_score_adj is not permitted on these machines.
oomScoreAdj: 0
containerRuntimeEndpoint: unix://${CONTAINERD_SOCKET}
clusterDNS: [${DNS_SERVICE_IP}]
clusterDomain: ${CLUSTER_DOMAIN}
resolvConf: ${RESOLV_CONF}
podLogsDir: ${POD_LOG_DIR}
volumePluginDir: ${STATE_DIR}/kubelet-plugins
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

function kubeProxyConfig(): string {
  // conntrack limits at 0 leave the kernel's values alone (writing them fails here); NodePorts only on NODE_IP.
  return `apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection:
  kubeconfig: ${kubeconfigPath("kube-proxy")}
hostnameOverride: ${NODE_NAME}
mode: iptables
clusterCIDR: ${POD_CIDR}
bindAddress: 127.0.0.1
healthzBindAddress: 127.0.0.1:10256
metricsBindAddress: 127.0.0.1:10249
nodePortAddresses: [${NODE_IP}/32]
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
    { name: "containerd", binary: "/usr/bin/containerd", args: ["--config", CONTAINERD_CONFIG] },
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
    },
    {
      name: "kubelet",
      binary: k("kubelet"),
      args: [
        `--config=${KUBELET_CONFIG}`,
        `--kubeconfig=${kubeconfigPath("kubelet-client")}`,
        `--hostname-override=${NODE_NAME}`,
        `--node-ip=${NODE_IP}`,
        `--root-dir=${KUBELET_DIR}`,
        "--v=1",
      ],
    },
    {
      name: "kube-proxy",
      binary: k("kube-proxy"),
      args: [`--config=${KUBE_PROXY_CONFIG}`, "--v=1"],
    },
  ];
}
