/**
 * `control/main.ts policy [flags]`: watches policy resources and serves the policy API.
 *
 *   --addr=0.0.0.0:8090            InboundServerPolicies + OutboundPolicies (plaintext; the sidecar terminates mTLS)
 *   --admin-addr=0.0.0.0:9990      /live /ready /metrics
 *   --cluster-domain=cluster.local --controller-namespace=linkerd --identity-trust-domain=cluster.local
 *     (Linkerd's policy-controller spellings --grpc-addr, --control-plane-namespace and
 *     --identity-domain are aliases)
 *   --cluster-networks=10.0.0.0/8,...   --probe-networks=0.0.0.0/0,::/0
 *   --default-policy=all-unauthenticated   --detect-timeout=10s
 *   --allow-l5d-request-headers    --no-status-writes
 * KUBECONFIG selects the API server (else the in-cluster config).
 */
import { Registry } from "prom-client";
import { Ports } from "../../proto/ports.ts";
import { serveAdmin } from "../admin/admin_server.ts";
import { flag, type FlagSpec, parseFlags } from "../flags/flags.ts";
import { splitHostPort } from "../flags/host_port.ts";
import { kubeLeaderElector, loadKubeConfig } from "../k8s/mod.ts";
import { LeaderLeases } from "../../proto/control_plane.ts";
import { defaultPolicyConfig, isDefaultPolicy, type PolicyConfig } from "./config.ts";
import { parseDurationMs } from "../../proto/go_duration.ts";
import { PolicyGrpcServer } from "./grpc_server.ts";
import { InformerPolicySource, KubeStatusClient } from "./k8s_source.ts";
import { RateLimitStatusWriter } from "./ratelimit_status.ts";
import { RouteStatusWriter } from "./route_status.ts";
import { EgressStatusWriter } from "./egress_status.ts";
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
  /** This replica's name in the status Lease (POD_NAME, from the downward API). */
  podName: string;
}

const FLAGS: readonly FlagSpec[] = [
  flag("addr", { aliases: ["grpc-addr"] }),
  flag("admin-addr"),
  flag("cluster-domain"),
  flag("controller-namespace"),
  flag("identity-trust-domain"),
  flag("cluster-networks"),
  flag("probe-networks"),
  flag("default-policy"),
  flag("detect-timeout"),
  flag("allow-l5d-request-headers", { switch: true }),
  flag("no-status-writes", { switch: true }),
  flag("global-egress-network-namespace"),
];

/** Parses flags (and the KUBECONFIG value) into a resolved config; throws naming the bad flag. */
export function parseArgs(
  args: string[],
  kubeconfig: string | undefined,
  podName = "policy",
): PolicyMainConfig {
  const { flags: f } = parseFlags(args, FLAGS);
  const base = defaultPolicyConfig();
  const nets = (k: string) => {
    const v = f.get(k)?.split(",").map((s) => s.trim()).filter(Boolean);
    for (const c of v ?? []) {
      try {
        toIpNetwork(c);
      } catch (e) {
        throw new Error(`${f.label(k)}: ${(e as Error).message}`);
      }
    }
    return v;
  };
  const defaultPolicy = f.get("default-policy") ?? base.defaultPolicy;
  if (!isDefaultPolicy(defaultPolicy)) {
    throw new Error(`--default-policy: "${defaultPolicy}" is not a default policy`);
  }
  const detect = f.get("detect-timeout");
  const policy: PolicyConfig = {
    ...base,
    clusterDomain: f.get("cluster-domain") ?? base.clusterDomain,
    controlPlaneNamespace: f.get("controller-namespace") ?? base.controlPlaneNamespace,
    identityTrustDomain: f.get("identity-trust-domain") ?? base.identityTrustDomain,
    clusterNetworks: nets("cluster-networks") ?? base.clusterNetworks,
    probeNetworks: nets("probe-networks") ?? base.probeNetworks,
    defaultPolicy,
    detectTimeoutMs: detect ? parseDurationMs(detect, "--detect-timeout") : base.detectTimeoutMs,
    allowL5dRequestHeaders: f.switch("allow-l5d-request-headers"),
    globalEgressNetworkNamespace: f.get("global-egress-network-namespace") ??
      base.globalEgressNetworkNamespace,
  };
  const grpc = splitHostPort(f.get("addr") ?? `0.0.0.0:${Ports.policy}`, f.label("addr"));
  const admin = splitHostPort(f.get("admin-addr") ?? `0.0.0.0:${Ports.policyAdmin}`, f.label("admin-addr"));
  const writeStatus = !f.switch("no-status-writes");
  return {
    policy,
    grpcHost: grpc.host,
    grpcPort: grpc.port,
    adminHost: admin.host,
    adminPort: admin.port,
    kubeconfig,
    writeStatus,
    podName,
  };
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
  // Of the replicas only the status Lease's holder writes status; the others keep the same store hot
  // and, on taking over, recheck everything (issue 19, docs/ha.md).
  const elector = cfg.writeStatus
    ? kubeLeaderElector({
      kc,
      namespace: cfg.policy.controlPlaneNamespace,
      lease: LeaderLeases.policyStatus,
      identity: cfg.podName,
      registry,
      log,
    })
    : undefined;
  const canWrite = () => elector?.isLeader() ?? false;
  const writer = cfg.writeStatus
    ? new RouteStatusWriter(store, cfg.policy, new KubeStatusClient(kc), { log, canWrite })
    : undefined;
  const egressWriter = cfg.writeStatus
    ? new EgressStatusWriter(store, cfg.policy, new KubeStatusClient(kc), { log, canWrite })
    : undefined;
  const rateLimitWriter = cfg.writeStatus
    ? new RateLimitStatusWriter(store, new KubeStatusClient(kc), { log, canWrite })
    : undefined;
  elector?.onChange((leading) => {
    if (!leading) return;
    writer?.resync();
    egressWriter?.resync();
    rateLimitWriter?.resync();
  });
  const electing = elector?.start(signal);
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
  rateLimitWriter?.close();
  egressWriter?.close();
  await electing;
  await grpcServer.shutdown();
  await admin.finished;
}

export async function main(args: string[]): Promise<void> {
  let cfg: PolicyMainConfig;
  try {
    cfg = parseArgs(
      args,
      Deno.env.get("KUBECONFIG") || undefined,
      Deno.env.get("POD_NAME") || Deno.hostname(),
    );
  } catch (e) {
    console.error(`policy: ${(e as Error).message}`);
    Deno.exit(2);
  }
  const abort = new AbortController();
  for (const sig of ["SIGTERM", "SIGINT"] as const) Deno.addSignalListener(sig, () => abort.abort());
  await run(cfg, abort.signal);
}
