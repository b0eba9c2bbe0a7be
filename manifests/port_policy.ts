/**
 * Who may call the control plane's plaintext HTTP APIs (weft-tap's 8089, weft-prometheus' 9090, weft-dashboard's
 * 8084), enforced by
 * weft's own policy engine as Linkerd's viz secures its components: a Server on the port and two
 * AuthorizationPolicies, one for the Kubernetes API server's service proxy and one for named meshed clients.
 *
 * The API server is not meshed and holds no identity, so it is admitted by address: any plaintext client from
 * outside the cluster's pod networks (a pod's connection always starts from its pod address), plus the
 * addresses inside the pod networks the hosts themselves use towards pods (a bridge CNI's gateway, e.g.
 * 10.244.0.1 on the local cluster, where the API server's proxied requests were seen to come from).
 */
import { parseNetwork } from "../control/policy/network_cidr.ts";
import { formatIpv4, formatIpv6Bytes } from "../proto/ip.ts";
import type { Manifest } from "./kinds.ts";

export const API_SERVER_AUTHN = "weft-api-server";
const GROUP = "policy.linkerd.io";
const LABELS = { "app.kubernetes.io/part-of": "weft" };

export class PodNetworksError extends Error {
  override name = "PodNetworksError";
}

export interface PodNetworks {
  /** CIDRs pods get their addresses from. */
  networks: string[];
  /** Host addresses inside those networks that may still speak for the API server. */
  hostSources: string[];
}

/** One guarded port: which pods, which port, which meshed ServiceAccounts (in the same namespace) besides. */
export interface GuardedPort {
  /** The Server's name; the MeshTLSAuthentication and policies are named after it. */
  name: string;
  component: string;
  port: number;
  clientServiceAccounts: string[];
}

interface NodeLike {
  metadata?: { name?: string };
  spec?: { podCIDR?: string; podCIDRs?: string[] };
}

function checkedCidr(text: string, what: string): { cidr: string; v6: boolean } {
  try {
    const n = parseNetwork(text);
    if (!text.includes("/")) throw new Error("a network needs a prefix length");
    return { cidr: text, v6: n.ip?.ip?.$case === "ipv6" };
  } catch (e) {
    throw new PodNetworksError(`${what}: "${text}" is not a CIDR: ${(e as Error).message}`);
  }
}

/** The first host address of a network (where bridge CNIs put the node's gateway). */
export function firstAddress(cidr: string): string {
  const n = parseNetwork(cidr);
  const ip = n.ip?.ip;
  if (ip?.$case === "ipv4") {
    const mask = n.prefixLen === 0 ? 0 : (~0 << (32 - n.prefixLen)) >>> 0;
    return formatIpv4(((((ip.value >>> 0) & mask) >>> 0) + 1) >>> 0);
  }
  if (ip?.$case === "ipv6") {
    const v = (BigInt.asUintN(64, ip.value.first) << 64n) | BigInt.asUintN(64, ip.value.last);
    const shift = BigInt(128 - n.prefixLen);
    const first = ((v >> shift) << shift) + 1n;
    const bytes = new Uint8Array(16);
    for (let i = 0; i < 16; i++) bytes[i] = Number((first >> BigInt(8 * (15 - i))) & 0xffn);
    return formatIpv6Bytes(bytes);
  }
  throw new PodNetworksError(`${cidr}: no address`);
}

/**
 * The pod networks: `given` (the deploy flag) when set, else every node's `spec.podCIDRs`; the host sources:
 * `givenSources` when set (may be empty), else the first address of each pod network.
 */
export function podNetworks(
  nodes: readonly NodeLike[],
  given?: readonly string[],
  givenSources?: readonly string[],
): PodNetworks {
  let networks: string[];
  if (given) {
    if (given.length === 0) throw new PodNetworksError("--pod-networks: no network given");
    networks = given.map((c) => checkedCidr(c, "--pod-networks").cidr);
  } else {
    networks = [];
    for (const n of nodes) {
      for (const c of n.spec?.podCIDRs ?? (n.spec?.podCIDR ? [n.spec.podCIDR] : [])) {
        checkedCidr(c, `node ${n.metadata?.name ?? "?"} spec.podCIDRs`);
        if (!networks.includes(c)) networks.push(c);
      }
    }
    if (networks.length === 0) {
      throw new PodNetworksError(
        "no node has spec.podCIDRs (the CNI assigns pod addresses itself): give --pod-networks=CIDR,...",
      );
    }
  }
  const hostSources = givenSources
    ? givenSources.map((a) => {
      try {
        parseNetwork(a);
      } catch (e) {
        throw new PodNetworksError(`--api-server-sources: "${a}" is not an address: ${(e as Error).message}`);
      }
      return a;
    })
    : networks.map(firstAddress);
  return { networks, hostSources };
}

/** NetworkAuthentication for the API server: everything but the pod networks, plus the host sources. */
export function apiServerAuthentication(namespace: string, p: PodNetworks): Manifest {
  const v4 = p.networks.filter((c) => !checkedCidr(c, "pod network").v6);
  const v6 = p.networks.filter((c) => checkedCidr(c, "pod network").v6);
  const host = (a: string) => a.includes("/") ? a : `${a}/${a.includes(":") ? 128 : 32}`;
  return {
    apiVersion: `${GROUP}/v1alpha1`,
    kind: "NetworkAuthentication",
    metadata: { name: API_SERVER_AUTHN, namespace, labels: LABELS },
    spec: {
      networks: [
        { cidr: "0.0.0.0/0", ...(v4.length ? { except: v4 } : {}) },
        { cidr: "::/0", ...(v6.length ? { except: v6 } : {}) },
        ...p.hostSources.map((a) => ({ cidr: host(a) })),
      ],
    },
  };
}

/** Server, MeshTLSAuthentication (when there are clients) and AuthorizationPolicies for one port. */
export function guardedPortObjects(namespace: string, g: GuardedPort): Manifest[] {
  const meta = (name: string) => ({
    name,
    namespace,
    labels: { ...LABELS, "linkerd.io/control-plane-component": g.component },
  });
  const target = { group: GROUP, kind: "Server", name: g.name };
  const out: Manifest[] = [
    {
      apiVersion: `${GROUP}/v1beta3`,
      kind: "Server",
      metadata: meta(g.name),
      spec: {
        podSelector: { matchLabels: { "linkerd.io/control-plane-component": g.component } },
        port: g.port,
        proxyProtocol: "unknown",
      },
    },
    {
      apiVersion: `${GROUP}/v1alpha1`,
      kind: "AuthorizationPolicy",
      metadata: meta(`${g.name}-api-server`),
      spec: {
        targetRef: target,
        requiredAuthenticationRefs: [{ group: GROUP, kind: "NetworkAuthentication", name: API_SERVER_AUTHN }],
      },
    },
  ];
  if (g.clientServiceAccounts.length) {
    out.push(
      {
        apiVersion: `${GROUP}/v1alpha1`,
        kind: "MeshTLSAuthentication",
        metadata: meta(`${g.name}-clients`),
        spec: { identityRefs: g.clientServiceAccounts.map((name) => ({ kind: "ServiceAccount", name })) },
      },
      {
        apiVersion: `${GROUP}/v1alpha1`,
        kind: "AuthorizationPolicy",
        metadata: meta(`${g.name}-clients`),
        spec: {
          targetRef: target,
          requiredAuthenticationRefs: [{
            group: GROUP,
            kind: "MeshTLSAuthentication",
            name: `${g.name}-clients`,
          }],
        },
      },
    );
  }
  return out;
}

/** The dashboard's ServiceAccount: it queries the store and proxies tap for its Live tap page. */
export const DASHBOARD_SERVICE_ACCOUNT = "weft-dashboard";

export const TAP_PORT: GuardedPort = {
  name: "weft-tap-api",
  component: "tap",
  port: 8089,
  clientServiceAccounts: [DASHBOARD_SERVICE_ACCOUNT],
};

export const PROMETHEUS_PORT: GuardedPort = {
  name: "weft-prometheus-api",
  component: "prometheus",
  port: 9090,
  clientServiceAccounts: [DASHBOARD_SERVICE_ACCOUNT],
};

/**
 * The dashboard's web port: viewers come through `weft dashboard`'s port-forward (localhost inside the pod,
 * which no Server governs) or the API server's service proxy; no pod may use it to reach tap and the store
 * with the dashboard's identity.
 */
export const DASHBOARD_PORT: GuardedPort = {
  name: "weft-dashboard-web",
  component: "dashboard",
  port: 8084,
  clientServiceAccounts: [],
};
