/**
 * The identity controller's resolved configuration, from flags (`--name=value`) with the
 * environment as fallback for the few values the Deployment sets as env. Pure: main.ts passes
 * in args and env.
 */
import { DEFAULT_CONTROL_PLANE_NAMESPACE } from "../../proto/control_plane.ts";
import { IDENTITY_TOKEN_AUDIENCE } from "../../proto/identity_name.ts";
import { parseDurationMs } from "../../proto/go_duration.ts";
import { flag, type FlagSpec, parseFlags } from "../flags/flags.ts";
import { splitHostPort } from "../flags/host_port.ts";
import { Ports } from "../../proto/ports.ts";

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
  /** This replica's name in the trust-roots Lease (POD_NAME, from the downward API; main.ts sets it). */
  podName?: string;
}

export const IDENTITY_USAGE = `usage: control/main.ts identity [flags]
  --addr=0.0.0.0:8080                  gRPC Certify (plaintext)
  --admin-addr=0.0.0.0:${Ports.identityAdmin}            /live /ready /metrics
  --controller-namespace=weft          (env LINKERD_NAMESPACE)
  --identity-trust-domain=cluster.local   (alias --trust-domain)
  --identity-issuance-lifetime=24h --identity-clock-skew-allowance=20s
                                       (aliases --issuance-lifetime, --clock-skew-allowance)
  --issuer-secret=<ns>/linkerd-identity-issuer | --issuer-dir=/var/run/linkerd/identity/issuer
  --trust-anchors-file=PATH | --trust-anchors-configmap=<ns>/linkerd-identity-trust-roots[:ca-bundle.crt]
  --token-audience=identity.l5d.io     (repeatable)
  --token-review-qps=50 --token-review-burst=100 --token-review-max-pending=5000 --token-review-timeout=10s
  --token-review-max-pending-per-client=200   (client = the ServiceAccount the token claims)
  --kubeconfig=PATH                    (env KUBECONFIG; in-cluster config when unset)`;

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

const FLAGS: readonly FlagSpec[] = [
  flag("addr"),
  flag("admin-addr"),
  flag("controller-namespace", { env: "LINKERD_NAMESPACE" }),
  flag("identity-trust-domain"),
  flag("identity-issuance-lifetime", { aliases: ["issuance-lifetime"] }),
  flag("identity-clock-skew-allowance", { aliases: ["clock-skew-allowance"] }),
  flag("issuer-secret"),
  flag("issuer-dir"),
  flag("trust-anchors-file"),
  flag("trust-anchors-configmap"),
  flag("token-audience", { repeatable: true }),
  flag("token-review-qps"),
  flag("token-review-burst"),
  flag("token-review-max-pending"),
  flag("token-review-max-pending-per-client"),
  flag("token-review-timeout"),
  flag("kubeconfig", { env: "KUBECONFIG" }),
];

export function parseIdentityConfig(args: string[], env: Record<string, string | undefined>): IdentityConfig {
  const { flags: f } = parseFlags(args, FLAGS, { env, usage: IDENTITY_USAGE });
  const get = (k: string) => f.get(k);
  const duration = (k: string, dflt: string) => parseDurationMs(get(k) ?? dflt, f.label(k));

  const ns = get("controller-namespace") ?? DEFAULT_CONTROL_PLANE_NAMESPACE;
  const admin = splitHostPort(get("admin-addr") ?? `0.0.0.0:${Ports.identityAdmin}`, f.label("admin-addr"));
  const grpcAddress = get("addr") ?? "0.0.0.0:8080";
  splitHostPort(grpcAddress, f.label("addr"));
  const cm = get("trust-anchors-configmap") ?? `${ns}/linkerd-identity-trust-roots`;
  const [cmRef, cmKey] = cm.split(":");
  const lifetimeMs = duration("identity-issuance-lifetime", "24h");
  if (lifetimeMs < 60_000) throw new Error(`${f.label("identity-issuance-lifetime")}: must be at least 1m`);
  const audiences = f.all("token-audience");
  return {
    grpcAddress,
    adminHost: admin.host,
    adminPort: admin.port,
    controlPlaneNamespace: ns,
    trustDomain: get("identity-trust-domain") ?? "cluster.local",
    lifetimeMs,
    clockSkewMs: duration("identity-clock-skew-allowance", "20s"),
    issuerSecret: nsName(get("issuer-secret") ?? `${ns}/linkerd-identity-issuer`, "--issuer-secret"),
    issuerDir: get("issuer-dir"),
    trustAnchorsFile: get("trust-anchors-file"),
    trustAnchorsConfigMap: { ...nsName(cmRef, "--trust-anchors-configmap"), key: cmKey || "ca-bundle.crt" },
    tokenAudiences: audiences.length > 0 ? audiences : [IDENTITY_TOKEN_AUDIENCE],
    tokenReview: {
      qps: positive(get("token-review-qps") ?? "50", "--token-review-qps"),
      burst: positive(get("token-review-burst") ?? "100", "--token-review-burst"),
      maxQueued: positive(get("token-review-max-pending") ?? "5000", "--token-review-max-pending"),
      maxQueuedPerClient: positive(
        get("token-review-max-pending-per-client") ?? "200",
        "--token-review-max-pending-per-client",
      ),
      timeoutMs: duration("token-review-timeout", "10s"),
    },
    kubeconfig: get("kubeconfig"),
  };
}
