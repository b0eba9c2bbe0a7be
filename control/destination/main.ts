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

function flags(args: string[]): Map<string, string> {
  const out = new Map<string, string>();
  for (const a of args) {
    const m = /^--([a-z-]+)(?:=(.*))?$/.exec(a);
    if (!m) throw new Error(`destination: unknown argument "${a}" (want --flag=value)`);
    out.set(m[1], m[2] ?? "true");
  }
  return out;
}

function hostPort(text: string, what: string): [string, number] {
  const i = text.lastIndexOf(":");
  const port = Number(text.slice(i + 1));
  if (i < 0 || !Number.isInteger(port) || port < 0 || port > 65535) {
    throw new Error(`destination: ${what} "${text}" is not host:port`);
  }
  return [text.slice(0, i).replace(/^\[|\]$/g, ""), port];
}

export async function main(args: string[]): Promise<void> {
  const f = flags(args);
  const get = (flag: string, env: string) => f.get(flag) ?? Deno.env.get(env);
  const opaque = get("default-opaque-ports", "DEFAULT_OPAQUE_PORTS");
  const config = defaultConfig({
    clusterDomain: get("cluster-domain", "CLUSTER_DOMAIN") ?? "cluster.local",
    controlPlaneNamespace: get("controller-namespace", "CONTROLLER_NAMESPACE") ??
      DEFAULT_CONTROL_PLANE_NAMESPACE,
    trustDomain: get("identity-trust-domain", "IDENTITY_TRUST_DOMAIN") ?? "cluster.local",
    ...(opaque !== undefined
      ? { defaultOpaquePorts: opaque.split(",").filter((s) => s.trim() !== "").map((s) => Number(s.trim())) }
      : {}),
  });
  const [host, port] = hostPort(f.get("addr") ?? `0.0.0.0:${Ports.destination}`, "--addr");
  const [adminHost, adminPort] = hostPort(f.get("admin-addr") ?? "0.0.0.0:9996", "--admin-addr");
  const kc = loadKubeConfig(get("kubeconfig", "KUBECONFIG"));
  const registry = new Registry();
  const state = new ClusterState({
    sources: (ref) => new KubeApiSource(kc, ref),
    registry,
    watchServers: f.get("watch-servers") !== "false",
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
