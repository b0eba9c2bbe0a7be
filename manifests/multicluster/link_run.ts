/**
 * `weft multicluster link`: reads what the source needs from the target (with the operator's kubeconfig of the
 * target), checks the two meshes share a trust anchor, and writes the credentials, the Link and the link's service
 * mirror into the source. Each phase is timed: link set-up time is one of issue 23's figures.
 */
import { unb64 } from "../check/objects.ts";
import { describe, type Manifest } from "../kinds.ts";
import type { Kube } from "../kube.ts";
import { requireSharedAnchor } from "./anchors.ts";
import {
  GATEWAY_NAME,
  GATEWAY_NODE_PORT,
  GatewayAnnotations,
  MC_NAMESPACE,
  PROBE_NODE_PORT,
  PROBE_PATH,
  PROBE_PERIOD,
  REMOTE_ACCESS_TOKEN_SECRET,
} from "./install.ts";
import { credentialsSecrets, linkObject, type LinkPlan, type TargetGateway } from "./link.ts";
import { type MeshFacts, readMeshFacts } from "./mesh_facts.ts";
import { waitRolledOut } from "./rollout.ts";

export interface LinkOptions {
  clusterName: string;
  gateway: boolean;
  /** Overrides the target node's InternalIP. */
  gatewayAddresses?: string[];
  /** Overrides the target kubeconfig's server (which may be a name only the host resolves). */
  apiServerAddress?: string;
  timeoutMs: number;
  wait?: boolean;
  log?: (line: string) => void;
  status?: (text: string) => void;
}

/** The Deployment (and whatever it needs) that mirrors one link, rendered for the source cluster. */
export type ServiceMirrorRenderer = (
  clusterName: string,
  source: MeshFacts,
) => Manifest[] | Promise<Manifest[]>;

export interface LinkTimings {
  /** Reading the target: token, CA, gateway, domains, anchors. */
  readTargetMs: number;
  /** Writing Secrets, Link and service mirror into the source. */
  applyMs: number;
  /** Until the service mirror Deployment rolled out (0 without --wait). */
  readyMs: number;
  totalMs: number;
}

interface SecretLike {
  data?: Record<string, string>;
}
interface ServiceLike {
  metadata: { annotations?: Record<string, string> };
  spec?: { ports?: { name?: string; port: number; nodePort?: number }[] };
}
interface NodeLike {
  metadata: { name: string };
  status?: {
    addresses?: { type: string; address: string }[];
    conditions?: { type: string; status: string }[];
  };
}

/** The remote-access token, waiting for the token controller to fill the Secret install created. */
async function readToken(target: Kube, timeoutMs: number): Promise<{ token: string; caPem: string }> {
  const path = `/api/v1/namespaces/${MC_NAMESPACE}/secrets/${REMOTE_ACCESS_TOKEN_SECRET}`;
  const deadline = Date.now() + Math.min(timeoutMs, 30_000);
  for (;;) {
    const s = await target.get<SecretLike>(path);
    if (!s) {
      throw new Error(
        `${target.server}: no Secret ${MC_NAMESPACE}/${REMOTE_ACCESS_TOKEN_SECRET}: run weft multicluster install ` +
          "with the target's kubeconfig first",
      );
    }
    if (s.data?.token && s.data["ca.crt"]) {
      return { token: unb64(s.data.token), caPem: unb64(s.data["ca.crt"]) };
    }
    if (Date.now() > deadline) {
      throw new Error(`${target.server}: the token controller has not filled ${REMOTE_ACCESS_TOKEN_SECRET}`);
    }
    await new Promise((r) => setTimeout(r, 300));
  }
}

/** The InternalIP of the target's Ready nodes (NodePort answers on every node), sorted for a stable Link. */
export function nodeAddresses(nodes: NodeLike[]): string[] {
  const ready = nodes.filter((n) =>
    n.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True")
  );
  return (ready.length ? ready : nodes)
    .map((n) => n.status?.addresses?.find((a) => a.type === "InternalIP")?.address)
    .filter((a): a is string => !!a)
    .sort();
}

/** The gateway as the target's Service describes it (node ports, identity, probe). */
export function gatewayFromService(svc: ServiceLike, addresses: string[]): TargetGateway {
  const ports = svc.spec?.ports ?? [];
  const a = svc.metadata.annotations ?? {};
  const identity = a[GatewayAnnotations.identity];
  if (!identity) {
    throw new Error(`Service ${MC_NAMESPACE}/${GATEWAY_NAME} has no ${GatewayAnnotations.identity}`);
  }
  const period = a[GatewayAnnotations.probePeriod];
  return {
    addresses,
    port: ports.find((p) => p.name === "mc-gateway")?.nodePort ?? GATEWAY_NODE_PORT,
    identity,
    probePort: ports.find((p) => p.name === "mc-probe")?.nodePort ?? PROBE_NODE_PORT,
    probePath: a[GatewayAnnotations.probePath] ?? PROBE_PATH,
    probePeriod: period ? (/^\d+$/.test(period) ? `${period}s` : period) : PROBE_PERIOD,
  };
}

async function readGateway(target: Kube, o: LinkOptions): Promise<TargetGateway> {
  const svc = await target.get<ServiceLike>(`/api/v1/namespaces/${MC_NAMESPACE}/services/${GATEWAY_NAME}`);
  if (!svc) {
    throw new Error(
      `${target.server}: no gateway Service ${MC_NAMESPACE}/${GATEWAY_NAME}: run weft multicluster install on ` +
        "the target, or link with --gateway=false (flat and federated services only)",
    );
  }
  const addresses = o.gatewayAddresses ?? nodeAddresses(await target.list<NodeLike>("/api/v1/nodes"));
  if (addresses.length === 0) {
    throw new Error(`${target.server}: no node with an InternalIP; use --gateway-address`);
  }
  return gatewayFromService(svc, addresses);
}

export interface LinkResult {
  plan: LinkPlan;
  applied: string[];
  timings: LinkTimings;
}

export async function link(
  source: Kube,
  target: Kube,
  o: LinkOptions,
  renderServiceMirror: ServiceMirrorRenderer,
): Promise<LinkResult> {
  const t0 = Date.now();
  o.status?.(`reading ${target.server}…`);
  const [sourceFacts, targetFacts, creds, gateway] = await Promise.all([
    readMeshFacts(source),
    readMeshFacts(target),
    readToken(target, o.timeoutMs),
    o.gateway ? readGateway(target, o) : Promise.resolve(undefined),
  ]);
  requireSharedAnchor(sourceFacts.anchorsPem, targetFacts.anchorsPem, o.clusterName);
  if (!(await source.get(`/api/v1/namespaces/${MC_NAMESPACE}`))) {
    throw new Error(
      `${source.server}: no namespace ${MC_NAMESPACE}: run weft multicluster install with the source's kubeconfig ` +
        "(--gateway=false if it needs no gateway)",
    );
  }
  const plan: LinkPlan = {
    clusterName: o.clusterName,
    apiServer: o.apiServerAddress ?? target.server,
    caPem: creds.caPem,
    token: creds.token,
    targetClusterDomain: targetFacts.clusterDomain,
    targetTrustDomain: targetFacts.trustDomain,
    targetControlPlaneNamespace: targetFacts.controlPlaneNamespace,
    ...(gateway ? { gateway } : {}),
    sourceControlPlaneNamespace: sourceFacts.controlPlaneNamespace,
  };
  const t1 = Date.now();
  const objects = [
    ...credentialsSecrets(plan),
    linkObject(plan),
    ...(await renderServiceMirror(o.clusterName, sourceFacts)),
  ];
  const applied: string[] = [];
  for (const m of objects) {
    o.status?.(`applying ${describe(m)}…`);
    const { result } = await source.apply(m);
    applied.push(`${describe(m)} ${result}`);
    o.log?.(`${describe(m)} ${result}`);
  }
  const t2 = Date.now();
  const deployment = objects.find((m) => m.kind === "Deployment");
  if (deployment && o.wait !== false) {
    await waitRolledOut(source, MC_NAMESPACE, deployment.metadata.name, o.timeoutMs, o.status);
  }
  const t3 = Date.now();
  o.status?.("");
  return {
    plan,
    applied,
    timings: {
      readTargetMs: t1 - t0,
      applyMs: t2 - t1,
      readyMs: deployment && o.wait !== false ? t3 - t2 : 0,
      totalMs: t3 - t0,
    },
  };
}
