/**
 * The identity controller's resolved configuration, from flags (`--name=value`) with the
 * environment as fallback for the few values the Deployment sets as env. Pure: main.ts passes
 * in args and env.
 */
import { DEFAULT_CONTROL_PLANE_NAMESPACE } from "../../proto/control_plane.ts";
import { IDENTITY_TOKEN_AUDIENCE } from "../../proto/identity_name.ts";
import { parseDurationMs } from "../../proto/go_duration.ts";

export interface IdentityConfig {
  /** gRPC listen address, plaintext (the pod's proxy terminates mTLS). */
  grpcAddress: string;
  adminHost: string;
  adminPort: number;
  controlPlaneNamespace: string;
  trustDomain: string;
  lifetimeMs: number;
  clockSkewMs: number;
  /** The issuer comes from this Secret (watched) unless `issuerDir` is set. */
  issuerSecret: { namespace: string; name: string };
  issuerDir?: string;
  /** Trust anchors from this file, else from the ConfigMap (key `ca-bundle.crt`). */
  trustAnchorsFile?: string;
  trustAnchorsConfigMap: { namespace: string; name: string; key: string };
  tokenAudiences: string[];
  tokenReview: {
    qps: number;
    burst: number;
    maxQueued: number;
    maxQueuedPerClient: number;
    timeoutMs: number;
  };
  kubeconfig?: string;
}

export const IDENTITY_USAGE = `usage: control/main.ts identity [flags]
  --addr=0.0.0.0:8080                  gRPC Certify (plaintext)
  --admin-addr=0.0.0.0:9990            /live /ready /metrics
  --controller-namespace=weft          (env LINKERD_NAMESPACE)
  --trust-domain=cluster.local
  --issuance-lifetime=24h --clock-skew-allowance=20s
  --issuer-secret=<ns>/linkerd-identity-issuer | --issuer-dir=/var/run/linkerd/identity/issuer
  --trust-anchors-file=PATH | --trust-anchors-configmap=<ns>/linkerd-identity-trust-roots[:ca-bundle.crt]
  --token-audience=identity.l5d.io     (repeatable)
  --token-review-qps=50 --token-review-burst=100 --token-review-max-pending=5000 --token-review-timeout=10s
  --token-review-max-pending-per-client=200   (client = the ServiceAccount the token claims)
  --kubeconfig=PATH                    (env KUBECONFIG; in-cluster config when unset)`;

function splitHostPort(addr: string, what: string): { host: string; port: number } {
  const i = addr.lastIndexOf(":");
  const port = Number(addr.slice(i + 1));
  if (i <= 0 || !Number.isInteger(port) || port < 0 || port > 65535) {
    throw new Error(`${what}: "${addr}" is not host:port`);
  }
  return { host: addr.slice(0, i).replace(/^\[(.*)\]$/, "$1"), port };
}

function nsName(value: string, what: string): { namespace: string; name: string } {
  const parts = value.split("/");
  if (parts.length !== 2 || !parts[0] || !parts[1]) {
    throw new Error(`${what}: "${value}" is not namespace/name`);
  }
  return { namespace: parts[0], name: parts[1] };
}

function positive(value: string, what: string): number {
  const n = Number(value);
  if (!(n > 0)) throw new Error(`${what}: "${value}" is not a positive number`);
  return n;
}

export function parseIdentityConfig(args: string[], env: Record<string, string | undefined>): IdentityConfig {
  const flags = new Map<string, string[]>();
  for (const a of args) {
    const m = /^--([a-z-]+)=(.*)$/s.exec(a);
    if (!m) throw new Error(`unknown argument "${a}"\n${IDENTITY_USAGE}`);
    flags.set(m[1], [...(flags.get(m[1]) ?? []), m[2]]);
  }
  const known = new Set([
    "addr",
    "admin-addr",
    "controller-namespace",
    "trust-domain",
    "issuance-lifetime",
    "clock-skew-allowance",
    "issuer-secret",
    "issuer-dir",
    "trust-anchors-file",
    "trust-anchors-configmap",
    "token-audience",
    "token-review-qps",
    "token-review-burst",
    "token-review-max-pending",
    "token-review-max-pending-per-client",
    "token-review-timeout",
    "kubeconfig",
  ]);
  for (const k of flags.keys()) if (!known.has(k)) throw new Error(`unknown flag --${k}\n${IDENTITY_USAGE}`);
  const get = (k: string) => flags.get(k)?.at(-1);

  const ns = get("controller-namespace") ?? env.LINKERD_NAMESPACE ?? DEFAULT_CONTROL_PLANE_NAMESPACE;
  const admin = splitHostPort(get("admin-addr") ?? "0.0.0.0:9990", "--admin-addr");
  const grpcAddress = get("addr") ?? "0.0.0.0:8080";
  splitHostPort(grpcAddress, "--addr");
  const cm = get("trust-anchors-configmap") ?? `${ns}/linkerd-identity-trust-roots`;
  const [cmRef, cmKey] = cm.split(":");
  const lifetimeMs = parseDurationMs(get("issuance-lifetime") ?? "24h", "--issuance-lifetime");
  if (lifetimeMs < 60_000) throw new Error(`--issuance-lifetime: must be at least 1m`);
  return {
    grpcAddress,
    adminHost: admin.host,
    adminPort: admin.port,
    controlPlaneNamespace: ns,
    trustDomain: get("trust-domain") ?? "cluster.local",
    lifetimeMs,
    clockSkewMs: parseDurationMs(get("clock-skew-allowance") ?? "20s", "--clock-skew-allowance"),
    issuerSecret: nsName(get("issuer-secret") ?? `${ns}/linkerd-identity-issuer`, "--issuer-secret"),
    issuerDir: get("issuer-dir"),
    trustAnchorsFile: get("trust-anchors-file"),
    trustAnchorsConfigMap: { ...nsName(cmRef, "--trust-anchors-configmap"), key: cmKey || "ca-bundle.crt" },
    tokenAudiences: flags.get("token-audience") ?? [IDENTITY_TOKEN_AUDIENCE],
    tokenReview: {
      qps: positive(get("token-review-qps") ?? "50", "--token-review-qps"),
      burst: positive(get("token-review-burst") ?? "100", "--token-review-burst"),
      maxQueued: positive(get("token-review-max-pending") ?? "5000", "--token-review-max-pending"),
      maxQueuedPerClient: positive(
        get("token-review-max-pending-per-client") ?? "200",
        "--token-review-max-pending-per-client",
      ),
      timeoutMs: parseDurationMs(get("token-review-timeout") ?? "10s", "--token-review-timeout"),
    },
    kubeconfig: get("kubeconfig") ?? (env.KUBECONFIG || undefined),
  };
}
