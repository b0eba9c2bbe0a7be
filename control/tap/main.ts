/**
 * `control/main.ts tap [flags]`: the tap component. It serves the tap API (server.ts) to the CLI and
 * opens the proxies' tap streams (Observe on podIP:4190) through its own proxy, which gives it the
 * `weft-tap` identity the proxies require.
 *
 *   --addr=0.0.0.0:8089               the tap API
 *   --admin-addr=0.0.0.0:9998         /live /ready /metrics
 *   --controller-namespace=weft       pods labelled linkerd.io/control-plane-ns=<this> are tappable
 *   --max-sessions=16                 taps served at once
 *   --meshed-clients=ID,...           meshed identities admitted besides the API server (default: none)
 *   --kubeconfig=PATH                 (env KUBECONFIG; in-cluster config when unset)
 *
 * Pods are watched cluster-wide (list/watch pods); the component is ready once that cache has synced.
 */
import { Registry } from "prom-client";
import { DEFAULT_CONTROL_PLANE_NAMESPACE } from "../../proto/control_plane.ts";
import { Ports } from "../../proto/ports.ts";
import { serveAdmin } from "../admin/admin_server.ts";
import { flag, type FlagSpec, parseFlags } from "../flags/flags.ts";
import { splitHostPort } from "../flags/host_port.ts";
import { Informer, KubeApiSource, loadKubeConfig, Resources, stripManagedFields } from "../k8s/mod.ts";
import type { KubeObject } from "../k8s/mod.ts";
import { grpcObserve } from "./observe_client.ts";
import { tapApi } from "./server.ts";
import type { PodLike } from "./targets.ts";

export interface TapConfig {
  hostname: string;
  port: number;
  adminHostname: string;
  adminPort: number;
  controlPlaneNamespace: string;
  maxSessions: number;
  meshedClients: string[];
  kubeconfig: string | undefined;
}

const FLAGS: readonly FlagSpec[] = [
  flag("addr"),
  flag("admin-addr"),
  flag("controller-namespace"),
  flag("max-sessions"),
  flag("meshed-clients"),
  flag("kubeconfig", { env: "KUBECONFIG" }),
];

export function parseArgs(args: string[], env: Record<string, string | undefined>): TapConfig {
  const { flags } = parseFlags(args, FLAGS, { env });
  const addr = splitHostPort(flags.get("addr") ?? `0.0.0.0:${Ports.tap}`, "--addr");
  const admin = splitHostPort(flags.get("admin-addr") ?? `0.0.0.0:${Ports.tapAdmin}`, "--admin-addr");
  const maxText = flags.get("max-sessions") ?? "16";
  const maxSessions = Number(maxText);
  if (!/^\d+$/.test(maxText) || maxSessions < 1 || maxSessions > 1000) {
    throw new Error(`--max-sessions: "${maxText}" is not a number in 1..1000`);
  }
  return {
    hostname: addr.host,
    port: addr.port,
    adminHostname: admin.host,
    adminPort: admin.port,
    controlPlaneNamespace: flags.get("controller-namespace") ?? DEFAULT_CONTROL_PLANE_NAMESPACE,
    maxSessions,
    meshedClients: (flags.get("meshed-clients") ?? "").split(",").map((x) => x.trim()).filter((x) => x),
    kubeconfig: flags.get("kubeconfig"),
  };
}

/** Only what target selection reads: names, labels, owners, address. */
function slimPod(p: KubeObject): KubeObject {
  const pod = stripManagedFields(p) as KubeObject & PodLike;
  return {
    metadata: {
      name: pod.metadata.name,
      namespace: pod.metadata.namespace,
      labels: pod.metadata.labels,
      ownerReferences: pod.metadata.ownerReferences,
      resourceVersion: pod.metadata.resourceVersion,
      uid: pod.metadata.uid,
    },
    spec: { hostNetwork: pod.spec?.hostNetwork },
    status: { phase: pod.status?.phase, podIP: pod.status?.podIP },
  } as KubeObject;
}

export async function main(args: string[]): Promise<void> {
  let cfg: TapConfig;
  try {
    cfg = parseArgs(args, Deno.env.toObject());
  } catch (e) {
    console.error(`tap: ${(e as Error).message}`);
    Deno.exit(2);
  }
  const log = (m: string) => console.error(`tap: ${m}`);
  const abort = new AbortController();
  for (const sig of ["SIGTERM", "SIGINT"] as const) Deno.addSignalListener(sig, () => abort.abort());
  const registry = new Registry();
  const pods = new Informer<KubeObject>({
    name: "tap_pods",
    source: new KubeApiSource(loadKubeConfig(cfg.kubeconfig), Resources.pods),
    transform: slimPod,
    registry,
    log,
  });
  const informerDone = pods.start(abort.signal);
  const api = tapApi({
    pods: () => pods.list() as unknown as PodLike[],
    notReady: () => pods.isSynced() ? undefined : "pod cache not synced",
    controlPlaneNamespace: cfg.controlPlaneNamespace,
    observe: grpcObserve(),
    maxSessions: cfg.maxSessions,
    meshedClients: cfg.meshedClients,
    log,
  });
  const server = Deno.serve({
    hostname: cfg.hostname,
    port: cfg.port,
    signal: abort.signal,
    onListen: () => {},
  }, api.handler);
  const admin = serveAdmin({
    hostname: cfg.adminHostname,
    port: cfg.adminPort,
    registry,
    signal: abort.signal,
    readiness: [{ name: "pods", check: () => pods.isSynced() ? undefined : "pod cache not synced" }],
  });
  log(`tap API on ${cfg.hostname}:${cfg.port}, admin on ${cfg.adminHostname}:${admin.addr.port}`);
  await Promise.all([server.finished, admin.finished, informerDone]);
}
