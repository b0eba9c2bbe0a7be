/**
 * `deno run -A control/main.ts destination [--flag=value ...]`: the Destination service on
 * 8086 (plaintext; the pod's proxy terminates mTLS) and its admin server.
 *
 * Flags (each also read from the env var in brackets): --cluster-domain (CLUSTER_DOMAIN),
 * --controller-namespace (CONTROLLER_NAMESPACE), --identity-trust-domain (IDENTITY_TRUST_DOMAIN),
 * --kubeconfig (KUBECONFIG; in-cluster config when unset), --addr, --admin-addr,
 * --default-opaque-ports, --watch-servers=false.
 */
import { DEFAULT_CONTROL_PLANE_NAMESPACE } from "../../proto/control_plane.ts";
import { Registry } from "prom-client";
import { Ports } from "../../proto/ports.ts";
import { serveAdmin } from "../admin/admin_server.ts";
import { KubeApiSource, loadKubeConfig } from "../k8s/mod.ts";
import { ClusterState } from "./cluster_state.ts";
import { defaultConfig } from "./config.ts";
import { serveDestination } from "./server.ts";

const FLAGS = [
  "addr",
  "admin-addr",
  "cluster-domain",
  "controller-namespace",
  "identity-trust-domain",
  "default-opaque-ports",
  "kubeconfig",
  "watch-servers",
] as const;

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

function hostPort(text: string, what: string): [string, number] {
  const i = text.lastIndexOf(":");
  const port = Number(text.slice(i + 1));
  if (i < 0 || text.slice(i + 1) === "" || !Number.isInteger(port) || port < 0 || port > 65535) {
    throw new Error(`destination: ${what} "${text}" is not host:port`);
  }
  return [text.slice(0, i).replace(/^\[|\]$/g, ""), port];
}

/** Parses `--flag=value` arguments (flags win over the environment variables named beside them). */
export function parseDestinationArgs(
  args: string[],
  env: Record<string, string | undefined>,
): DestinationMainConfig {
  const f = new Map<string, string>();
  for (const a of args) {
    const m = /^--([a-z-]+)(?:=(.*))?$/.exec(a);
    if (!m) throw new Error(`destination: unknown argument "${a}" (want --flag=value)`);
    if (!(FLAGS as readonly string[]).includes(m[1])) {
      throw new Error(`destination: unknown flag --${m[1]}; known: ${FLAGS.map((k) => `--${k}`).join(" ")}`);
    }
    f.set(m[1], m[2] ?? "true");
  }
  const get = (flag: string, name: string) => f.get(flag) ?? env[name];
  const opaque = get("default-opaque-ports", "DEFAULT_OPAQUE_PORTS");
  let defaultOpaquePorts: number[] | undefined;
  if (opaque !== undefined) {
    defaultOpaquePorts = opaque.split(",").map((x) => x.trim()).filter((x) => x !== "").map((x) => {
      const n = Number(x);
      if (!/^\d+$/.test(x) || n < 1 || n > 65535) {
        throw new Error(
          `destination: --default-opaque-ports: "${x}" is not a port number (1-65535; ranges are not taken here)`,
        );
      }
      return n;
    });
  }
  const watch = f.get("watch-servers") ?? "true";
  if (watch !== "true" && watch !== "false") {
    throw new Error(`destination: --watch-servers must be true or false, got "${watch}"`);
  }
  const [host, port] = hostPort(f.get("addr") ?? `0.0.0.0:${Ports.destination}`, "--addr");
  const [adminHost, adminPort] = hostPort(f.get("admin-addr") ?? "0.0.0.0:9996", "--admin-addr");
  return {
    host,
    port,
    adminHost,
    adminPort,
    clusterDomain: get("cluster-domain", "CLUSTER_DOMAIN") ?? "cluster.local",
    controlPlaneNamespace: get("controller-namespace", "CONTROLLER_NAMESPACE") ??
      DEFAULT_CONTROL_PLANE_NAMESPACE,
    trustDomain: get("identity-trust-domain", "IDENTITY_TRUST_DOMAIN") ?? "cluster.local",
    defaultOpaquePorts,
    kubeconfig: get("kubeconfig", "KUBECONFIG"),
    watchServers: watch === "true",
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
  const { server, port: bound } = await serveDestination({ state, config, registry, hostname: host, port });
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
  await Promise.all([informers, admin.finished]);
}
