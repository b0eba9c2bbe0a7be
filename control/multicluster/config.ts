/**
 * The service mirror's resolved configuration (`control/main.ts service_mirror --link=<name>`),
 * from flags with the environment as fallback. Pure: main.ts passes in args and env.
 */
import { parseDurationMs } from "../../proto/go_duration.ts";
import { flag, type FlagSpec, parseFlags } from "../flags/flags.ts";
import { splitHostPort } from "../flags/host_port.ts";
import { MULTICLUSTER_NAMESPACE } from "./link.ts";

/** Linkerd's service mirror admin port. */
export const SERVICE_MIRROR_ADMIN_PORT = 9999;

export interface ServiceMirrorConfig {
  linkName: string;
  namespace: string;
  adminHost: string;
  adminPort: number;
  kubeconfig?: string;
  /** Delete every mirror of the link and exit. */
  unlink: boolean;
  /** For `--unlink` when the Link object is already gone: the target cluster's name. */
  targetClusterName?: string;
  resyncPeriodMs: number;
}

export const SERVICE_MIRROR_USAGE = `usage: control/main.ts service_mirror --link=NAME [flags]
  --link=NAME                          the Link in --namespace to mirror (required)
  --namespace=weft-multicluster        where the Link and its credentials Secret live (env WEFT_MC_NAMESPACE)
  --admin-addr=0.0.0.0:${SERVICE_MIRROR_ADMIN_PORT}            /live /ready /metrics
  --kubeconfig=PATH                    (env KUBECONFIG; in-cluster config when unset)
  --resync-period=1m                   how often every exported service is reconciled again
  --unlink                             delete every mirror of the link and exit
  --target-cluster-name=NAME           with --unlink when the Link is gone (default: the link's name)`;

const FLAGS: FlagSpec[] = [
  flag("link"),
  flag("namespace", { env: "WEFT_MC_NAMESPACE" }),
  flag("admin-addr"),
  flag("kubeconfig", { env: "KUBECONFIG" }),
  flag("unlink", { switch: true }),
  flag("target-cluster-name"),
  flag("resync-period"),
];

export function parseServiceMirrorConfig(
  args: string[],
  env: Record<string, string | undefined>,
): ServiceMirrorConfig {
  const { flags: f } = parseFlags(args, FLAGS, { env, usage: SERVICE_MIRROR_USAGE });
  const linkName = f.get("link");
  if (!linkName) throw new Error(`--link is required\n${SERVICE_MIRROR_USAGE}`);
  const admin = splitHostPort(
    f.get("admin-addr") ?? `0.0.0.0:${SERVICE_MIRROR_ADMIN_PORT}`,
    f.label("admin-addr"),
  );
  const resyncPeriodMs = parseDurationMs(f.get("resync-period") ?? "1m", f.label("resync-period"));
  if (resyncPeriodMs < 1000) throw new Error(`${f.label("resync-period")}: must be at least 1s`);
  return {
    linkName,
    namespace: f.get("namespace") ?? MULTICLUSTER_NAMESPACE,
    adminHost: admin.host,
    adminPort: admin.port,
    kubeconfig: f.get("kubeconfig"),
    unlink: f.switch("unlink"),
    targetClusterName: f.get("target-cluster-name"),
    resyncPeriodMs,
  };
}
