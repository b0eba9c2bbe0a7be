/**
 * `control/main.ts policy [flags]`: watches policy resources and serves the policy API.
 *
 *   --grpc-addr=0.0.0.0:8090       InboundServerPolicies + OutboundPolicies (plaintext; the sidecar terminates mTLS)
 *   --admin-addr=0.0.0.0:9990      /live /ready /metrics
 *   --cluster-domain=cluster.local --control-plane-namespace=linkerd --identity-domain=cluster.local
 *   --cluster-networks=10.0.0.0/8,...   --probe-networks=0.0.0.0/0,::/0
 *   --default-policy=all-unauthenticated   --detect-timeout=10s
 *   --allow-l5d-request-headers    --no-status-writes
 * KUBECONFIG selects the API server (else the in-cluster config).
 */
import { Registry } from "prom-client";
import { Ports } from "../../proto/ports.ts";
import { serveAdmin } from "../admin/admin_server.ts";
import { loadKubeConfig } from "../k8s/mod.ts";
import { defaultPolicyConfig, isDefaultPolicy, type PolicyConfig } from "./config.ts";
import { parseDurationMs } from "../../proto/go_duration.ts";
import { PolicyGrpcServer } from "./grpc_server.ts";
import { InformerPolicySource, KubeStatusClient } from "./k8s_source.ts";
import { RouteStatusWriter } from "./route_status.ts";
import { PolicyStore } from "./store.ts";
import { toIpNetwork } from "../../proto/ip.ts";

export interface PolicyMainConfig {
  policy: PolicyConfig;
  grpcHost: string;
  grpcPort: number;
  adminHost: string;
  adminPort: number;
  kubeconfig: string | undefined;
  writeStatus: boolean;
}

function splitAddr(flag: string, v: string): [string, number] {
  const i = v.lastIndexOf(":");
  const port = Number(v.slice(i + 1));
  if (i < 0 || !Number.isInteger(port) || port < 0 || port > 65535) {
    throw new Error(`--${flag}: "${v}" is not <host>:<port>`);
  }
  return [v.slice(0, i).replace(/^\[|\]$/g, ""), port];
}

/** Parses flags (and the KUBECONFIG value) into a resolved config; throws naming the bad flag. */
export function parseArgs(args: string[], kubeconfig: string | undefined): PolicyMainConfig {
  const flags = new Map<string, string>();
  for (const a of args) {
    const m = /^--([a-z0-9-]+)(?:=(.*))?$/.exec(a);
    if (!m) throw new Error(`unexpected argument "${a}"; flags look like --name=value`);
    flags.set(m[1], m[2] ?? "true");
  }
  const take = (k: string) => {
    const v = flags.get(k);
    flags.delete(k);
    return v;
  };
  const list = (k: string) => take(k)?.split(",").map((s) => s.trim()).filter(Boolean);
  const base = defaultPolicyConfig();
  const nets = (k: string, v: string[] | undefined) => {
    for (const c of v ?? []) {
      try {
        toIpNetwork(c);
      } catch (e) {
        throw new Error(`--${k}: ${(e as Error).message}`);
      }
    }
    return v;
  };
  const defaultPolicy = take("default-policy") ?? base.defaultPolicy;
  if (!isDefaultPolicy(defaultPolicy)) {
    throw new Error(`--default-policy: "${defaultPolicy}" is not a default policy`);
  }
  const detect = take("detect-timeout");
  const policy: PolicyConfig = {
    ...base,
    clusterDomain: take("cluster-domain") ?? base.clusterDomain,
    controlPlaneNamespace: take("control-plane-namespace") ?? base.controlPlaneNamespace,
    identityTrustDomain: take("identity-domain") ?? base.identityTrustDomain,
    clusterNetworks: nets("cluster-networks", list("cluster-networks")) ?? base.clusterNetworks,
    probeNetworks: nets("probe-networks", list("probe-networks")) ?? base.probeNetworks,
    defaultPolicy,
    detectTimeoutMs: detect ? parseDurationMs(detect, "--detect-timeout") : base.detectTimeoutMs,
    allowL5dRequestHeaders: take("allow-l5d-request-headers") === "true",
  };
  const [grpcHost, grpcPort] = splitAddr("grpc-addr", take("grpc-addr") ?? `0.0.0.0:${Ports.policy}`);
  const [adminHost, adminPort] = splitAddr("admin-addr", take("admin-addr") ?? "0.0.0.0:9990");
  const writeStatus = take("no-status-writes") !== "true";
  if (flags.size > 0) {
    throw new Error(`unknown flag(s): ${[...flags.keys()].map((k) => `--${k}`).join(", ")}`);
  }
  return { policy, grpcHost, grpcPort, adminHost, adminPort, kubeconfig, writeStatus };
}

export async function run(cfg: PolicyMainConfig, signal: AbortSignal): Promise<void> {
  const log = (m: string) => console.error(`policy: ${m}`);
  const registry = new Registry();
  const kc = loadKubeConfig(cfg.kubeconfig);
  const store = new PolicyStore();
  const source = new InformerPolicySource(kc, registry, log);
  source.start((e) => store.apply(e), signal);
  const grpcServer = new PolicyGrpcServer({ store, config: cfg.policy, registry });
  const port = await grpcServer.listen(cfg.grpcHost, cfg.grpcPort);
  log(`serving policy gRPC on ${cfg.grpcHost}:${port}`);
  const writer = cfg.writeStatus
    ? new RouteStatusWriter(store, cfg.policy, new KubeStatusClient(kc), { log })
    : undefined;
  const admin = serveAdmin({
    hostname: cfg.adminHost,
    port: cfg.adminPort,
    registry,
    signal,
    readiness: [{
      name: "informers",
      check: () =>
        source.synced() ? undefined : `waiting for the first list of ${source.pending().join(", ")}`,
    }],
  });
  await new Promise<void>((resolve) => signal.addEventListener("abort", () => resolve(), { once: true }));
  writer?.close();
  await grpcServer.shutdown();
  await admin.finished;
}

export async function main(args: string[]): Promise<void> {
  let cfg: PolicyMainConfig;
  try {
    cfg = parseArgs(args, Deno.env.get("KUBECONFIG") || undefined);
  } catch (e) {
    console.error(`policy: ${(e as Error).message}`);
    Deno.exit(2);
  }
  const abort = new AbortController();
  for (const sig of ["SIGTERM", "SIGINT"] as const) Deno.addSignalListener(sig, () => abort.abort());
  await run(cfg, abort.signal);
}
