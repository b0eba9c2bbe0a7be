/**
 * `deno run -A control/main.ts destination [--flag=value ...]`: the Destination service on
 * 8086 (plaintext; the pod's proxy terminates mTLS) and its admin server.
 *
 * Flags (each also read from the env var in brackets): --cluster-domain (CLUSTER_DOMAIN),
 * --controller-namespace (CONTROLLER_NAMESPACE), --identity-trust-domain (IDENTITY_TRUST_DOMAIN),
 * --kubeconfig (KUBECONFIG; in-cluster config when unset), --addr, --admin-addr,
 * --default-opaque-ports (ports and ranges), --watch-servers=false. The spellings of the other
 * components are aliases (control/flags/flags.ts).
 */
import { DEFAULT_CONTROL_PLANE_NAMESPACE } from "../../proto/control_plane.ts";
import { Registry } from "prom-client";
import { Ports } from "../../proto/ports.ts";
import { parsePortRanges } from "../../proto/port_list.ts";
import { serveAdmin } from "../admin/admin_server.ts";
import { flag, type FlagSpec, parseFlags } from "../flags/flags.ts";
import { splitHostPort } from "../flags/host_port.ts";
import { KubeApiSource, kubeConfigFromText, loadKubeConfig, Resources } from "../k8s/mod.ts";
import { ClusterState } from "./cluster_state.ts";
import { ClusterStore } from "./cluster_store.ts";
import { Multicluster } from "./multicluster_names.ts";
import { defaultConfig } from "./config.ts";
import { serveDestination } from "./server.ts";

const FLAGS: readonly FlagSpec[] = [
  flag("addr"),
  flag("admin-addr"),
  flag("cluster-domain", { env: "CLUSTER_DOMAIN" }),
  flag("controller-namespace", { env: "CONTROLLER_NAMESPACE" }),
  flag("identity-trust-domain", { env: "IDENTITY_TRUST_DOMAIN" }),
  flag("default-opaque-ports", { env: "DEFAULT_OPAQUE_PORTS" }),
  flag("kubeconfig", { env: "KUBECONFIG" }),
  flag("watch-servers", { switch: true }),
];

/** Flags and environment resolved into what `main` needs; every bad value names itself. */
export interface DestinationMainConfig {
  host: string;
  port: number;
  adminHost: string;
  adminPort: number;
  clusterDomain: string;
  controlPlaneNamespace: string;
  trustDomain: string;
  defaultOpaquePorts: number[] | undefined;
  kubeconfig: string | undefined;
  watchServers: boolean;
}

/** Parses `--flag=value` arguments (flags win over the environment variables named beside them). */
export function parseDestinationArgs(
  args: string[],
  env: Record<string, string | undefined>,
): DestinationMainConfig {
  const { flags: f } = parseFlags(args, FLAGS, { env });
  const opaque = f.get("default-opaque-ports");
  let defaultOpaquePorts: number[] | undefined;
  if (opaque !== undefined) {
    // Ranges as Linkerd's --default-opaque-ports takes them, expanded to the ports they cover.
    defaultOpaquePorts = [];
    for (const r of parsePortRanges(opaque, f.label("default-opaque-ports"))) {
      for (let p = r.from; p <= r.to; p++) defaultOpaquePorts.push(p);
    }
  }
  const { host, port } = splitHostPort(f.get("addr") ?? `0.0.0.0:${Ports.destination}`, f.label("addr"));
  const admin = splitHostPort(
    f.get("admin-addr") ?? `0.0.0.0:${Ports.destinationAdmin}`,
    f.label("admin-addr"),
  );
  return {
    host,
    port,
    adminHost: admin.host,
    adminPort: admin.port,
    clusterDomain: f.get("cluster-domain") ?? "cluster.local",
    controlPlaneNamespace: f.get("controller-namespace") ?? DEFAULT_CONTROL_PLANE_NAMESPACE,
    trustDomain: f.get("identity-trust-domain") ?? "cluster.local",
    defaultOpaquePorts,
    kubeconfig: f.get("kubeconfig"),
    watchServers: f.switch("watch-servers", true),
  };
}

export async function main(args: string[]): Promise<void> {
  let c: DestinationMainConfig;
  try {
    c = parseDestinationArgs(args, Deno.env.toObject());
  } catch (e) {
    console.error((e as Error).message);
    Deno.exit(2);
  }
  const config = defaultConfig({
    clusterDomain: c.clusterDomain,
    controlPlaneNamespace: c.controlPlaneNamespace,
    trustDomain: c.trustDomain,
    ...(c.defaultOpaquePorts !== undefined ? { defaultOpaquePorts: c.defaultOpaquePorts } : {}),
  });
  const { host, port, adminHost, adminPort } = c;
  const kc = loadKubeConfig(c.kubeconfig);
  const registry = new Registry();
  const state = new ClusterState({
    sources: (ref) => new KubeApiSource(kc, ref),
    registry,
    watchServers: c.watchServers,
  });
  const ctrl = new AbortController();
  for (const sig of ["SIGTERM", "SIGINT"] as const) Deno.addSignalListener(sig, () => ctrl.abort());
  const informers = state.start(ctrl.signal);
  // Linked clusters (issue 23): their credentials Secrets in this namespace. They are not part of
  // readiness: an unreachable remote cluster must not take local discovery down.
  const clusters = new ClusterStore({
    secrets: new KubeApiSource(kc, {
      ...Resources.secrets,
      namespace: c.controlPlaneNamespace,
      fieldSelector: `type=${Multicluster.credentialsSecretType}`,
    }),
    connect: (text, what) => {
      const remote = kubeConfigFromText(text, what);
      return (ref) => new KubeApiSource(remote, ref);
    },
    config,
  });
  const remoteInformers = clusters.start(ctrl.signal);
  const { server, port: bound } = await serveDestination({
    state,
    config,
    registry,
    clusters,
    hostname: host,
    port,
    signal: ctrl.signal,
  });
  const admin = serveAdmin({
    hostname: adminHost,
    port: adminPort,
    registry,
    signal: ctrl.signal,
    readiness: [{
      name: "informers",
      check: () => {
        const pending = state.unsynced();
        return pending.length ? `not synced: ${pending.join(", ")}` : undefined;
      },
    }],
  });
  console.error(`destination: gRPC on ${host}:${bound}, admin on ${adminHost}:${admin.addr.port}`);
  await new Promise<void>((resolve) =>
    ctrl.signal.addEventListener("abort", () => resolve(), { once: true })
  );
  server.forceShutdown();
  await Promise.all([informers, remoteInformers, admin.finished]);
}
