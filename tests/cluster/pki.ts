// The cluster's certificates and kubeconfigs, made with the openssl CLI. One CA signs every serving and client
// certificate; identities follow the Kubernetes conventions (user in CN, groups in O) so RBAC and the Node
// authorizer see the usual names. Material is kept across `down`/`up`, so an admin kubeconfig stays valid.

import { join } from "node:path";
import {
  API_URL,
  CLUSTER,
  CLUSTER_DOMAIN,
  KUBERNETES_SERVICE_IP,
  NODE_IP,
  NODE_NAME,
  PKI_DIR,
  STATE_DIR,
} from "./config.ts";
import { exists, must } from "./exec.ts";

interface CertSpec {
  name: string;
  subject: string;
  usage: "server" | "client" | "both";
  sans?: string[];
}

const CERTS: CertSpec[] = [
  {
    name: "apiserver",
    subject: "/CN=kube-apiserver",
    usage: "server",
    sans: [
      "DNS:localhost",
      "DNS:kubernetes",
      "DNS:kubernetes.default",
      "DNS:kubernetes.default.svc",
      `DNS:kubernetes.default.svc.${CLUSTER_DOMAIN}`,
      "IP:127.0.0.1",
      `IP:${KUBERNETES_SERVICE_IP}`,
      `IP:${NODE_IP}`,
    ],
  },
  { name: "apiserver-kubelet-client", subject: "/CN=kube-apiserver-kubelet-client", usage: "client" },
  { name: "apiserver-etcd-client", subject: "/CN=kube-apiserver-etcd-client", usage: "client" },
  { name: "etcd", subject: "/CN=weft-etcd", usage: "both", sans: ["DNS:localhost", "IP:127.0.0.1"] },
  { name: "admin", subject: "/O=system:masters/CN=weft-admin", usage: "client" },
  { name: "controller-manager", subject: "/CN=system:kube-controller-manager", usage: "client" },
  { name: "scheduler", subject: "/CN=system:kube-scheduler", usage: "client" },
  { name: "kube-proxy", subject: "/CN=system:kube-proxy", usage: "client" },
  { name: "kubelet-client", subject: `/O=system:nodes/CN=system:node:${NODE_NAME}`, usage: "client" },
  {
    name: "kubelet-server",
    subject: `/CN=system:node:${NODE_NAME}`,
    usage: "server",
    sans: [`DNS:${NODE_NAME}`, `IP:${NODE_IP}`, "IP:127.0.0.1"],
  },
];

export const pki = {
  ca: join(PKI_DIR, "ca.crt"),
  caKey: join(PKI_DIR, "ca.key"),
  saKey: join(PKI_DIR, "sa.key"),
  saPub: join(PKI_DIR, "sa.pub"),
  crt: (name: string) => join(PKI_DIR, `${name}.crt`),
  key: (name: string) => join(PKI_DIR, `${name}.key`),
};

/** kubeconfig path of a component identity. */
export function kubeconfigPath(name: string): string {
  return name === "admin" ? join(STATE_DIR, "admin.kubeconfig") : join(STATE_DIR, `${name}.kubeconfig`);
}

const EXT = {
  server: "extendedKeyUsage=serverAuth",
  client: "extendedKeyUsage=clientAuth",
  both: "extendedKeyUsage=serverAuth,clientAuth",
};

async function issue(spec: CertSpec) {
  const key = pki.key(spec.name);
  const csr = join(PKI_DIR, `${spec.name}.csr`);
  const ext = join(PKI_DIR, `${spec.name}.ext`);
  await must("openssl", ["ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", key]);
  await must("openssl", ["req", "-new", "-key", key, "-subj", spec.subject, "-out", csr]);
  const lines = [
    "basicConstraints=CA:FALSE",
    "keyUsage=critical,digitalSignature,keyEncipherment",
    EXT[spec.usage],
  ];
  if (spec.sans) lines.push(`subjectAltName=${spec.sans.join(",")}`);
  await Deno.writeTextFile(ext, lines.join("\n") + "\n");
  await must("openssl", [
    "x509",
    "-req",
    "-in",
    csr,
    "-CA",
    pki.ca,
    "-CAkey",
    pki.caKey,
    "-CAcreateserial",
    "-days",
    "825",
    "-sha256",
    "-extfile",
    ext,
    "-out",
    pki.crt(spec.name),
  ]);
  await Deno.remove(csr);
  await Deno.remove(ext);
}

function b64(text: string): string {
  return btoa(text);
}

async function writeKubeconfig(name: string, user: string) {
  const [ca, crt, key] = await Promise.all([
    Deno.readTextFile(pki.ca),
    Deno.readTextFile(pki.crt(name)),
    Deno.readTextFile(pki.key(name)),
  ]);
  const text = `apiVersion: v1
kind: Config
clusters:
- name: ${CLUSTER.kubeconfigCluster}
  cluster:
    server: ${API_URL}
    certificate-authority-data: ${b64(ca)}
users:
- name: ${user}
  user:
    client-certificate-data: ${b64(crt)}
    client-key-data: ${b64(key)}
contexts:
- name: ${CLUSTER.kubeconfigCluster}
  context:
    cluster: ${CLUSTER.kubeconfigCluster}
    user: ${user}
current-context: ${CLUSTER.kubeconfigCluster}
`;
  await Deno.writeTextFile(kubeconfigPath(name), text, { mode: 0o600 });
}

/** Creates whatever certificates and kubeconfigs are missing; returns true when anything was made. */
export async function ensurePki(log: (s: string) => void): Promise<boolean> {
  await Deno.mkdir(PKI_DIR, { recursive: true, mode: 0o700 });
  let made = false;
  if (!(await exists(pki.ca))) {
    log("pki: creating the cluster CA");
    await must("openssl", ["ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", pki.caKey]);
    await must("openssl", [
      "req",
      "-x509",
      "-new",
      "-key",
      pki.caKey,
      "-subj",
      `/CN=${CLUSTER.caName}`,
      "-days",
      "3650",
      "-sha256",
      "-addext",
      "basicConstraints=critical,CA:TRUE",
      "-addext",
      "keyUsage=critical,keyCertSign,cRLSign,digitalSignature",
      "-out",
      pki.ca,
    ]);
    made = true;
  }
  if (!(await exists(pki.saKey))) {
    // ES256 service-account tokens: the same key pair signs (API server) and verifies.
    await must("openssl", ["ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", pki.saKey]);
    await must("openssl", ["ec", "-in", pki.saKey, "-pubout", "-out", pki.saPub]);
    made = true;
  }
  for (const spec of CERTS) {
    if (await exists(pki.crt(spec.name))) continue;
    log(`pki: issuing ${spec.name} (${spec.subject})`);
    await issue(spec);
    made = true;
  }
  const users: Record<string, string> = {
    admin: "weft-admin",
    "controller-manager": "system:kube-controller-manager",
    scheduler: "system:kube-scheduler",
    "kube-proxy": "system:kube-proxy",
    "kubelet-client": `system:node:${NODE_NAME}`,
  };
  for (const [name, user] of Object.entries(users)) {
    if (made || !(await exists(kubeconfigPath(name)))) await writeKubeconfig(name, user);
  }
  return made;
}

/**
 * The kubelet certificates and kubeconfig of a worker node (worker.ts): its own client identity
 * `system:node:<name>` (so the Node authorizer limits it to its own pods) and a serving certificate for its IP.
 */
export async function ensureNodePki(
  node: { name: string; ip: string; kubeletServerCert: string; kubeletClientCert: string },
  log: (s: string) => void,
) {
  const specs: CertSpec[] = [
    { name: node.kubeletClientCert, subject: `/O=system:nodes/CN=system:node:${node.name}`, usage: "client" },
    {
      name: node.kubeletServerCert,
      subject: `/CN=system:node:${node.name}`,
      usage: "server",
      sans: [`DNS:${node.name}`, `IP:${node.ip}`, "IP:127.0.0.1"],
    },
  ];
  let made = false;
  for (const spec of specs) {
    if (await exists(pki.crt(spec.name))) continue;
    log(`pki: issuing ${spec.name} (${spec.subject})`);
    await issue(spec);
    made = true;
  }
  if (made || !(await exists(kubeconfigPath(node.kubeletClientCert)))) {
    await writeKubeconfig(node.kubeletClientCert, `system:node:${node.name}`);
  }
}
