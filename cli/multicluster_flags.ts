/** The flags of `weft multicluster <install|link|unlink|check|gateways>` and what they parse into (pure). */
import { parseDurationMs } from "../proto/go_duration.ts";
import { validClusterName } from "../manifests/multicluster/link.ts";
import { parseIdentities } from "../manifests/multicluster/install.ts";
import { UsageError } from "./context.ts";
import { type FlagSpec, type ParsedFlags, parseFlags } from "./flags.ts";

export const SUBCOMMANDS = ["install", "link", "unlink", "check", "gateways"] as const;
export type Subcommand = typeof SUBCOMMANDS[number];

const KUBECONFIG: FlagSpec = {
  name: "kubeconfig",
  help: "kubeconfig of the cluster acted on (link: the source)",
  default: "$KUBECONFIG, else ~/.kube/config",
};
const TIMEOUT: FlagSpec = { name: "timeout", help: "longest wait for a rollout", default: "5m" };
const GATEWAY: FlagSpec = {
  name: "gateway",
  bool: true,
  help: "--gateway=false: no gateway",
  default: "true",
};
const CLUSTER_NAME: FlagSpec = {
  name: "cluster-name",
  help: "the target cluster's name in this one (required)",
};

export const FLAGS: Record<Subcommand, readonly FlagSpec[]> = {
  install: [
    KUBECONFIG,
    GATEWAY,
    {
      name: "gateway-allowed-identities",
      help: "comma-separated mTLS identities the gateway lets through (MeshTLSAuthentication)",
      default: "* (any identity of the trust domain)",
    },
    TIMEOUT,
  ],
  link: [
    CLUSTER_NAME,
    { name: "target-kubeconfig", help: "kubeconfig of the target cluster (required)" },
    KUBECONFIG,
    GATEWAY,
    {
      name: "gateway-address",
      help: "comma-separated gateway addresses",
      default: "the target's node InternalIPs",
    },
    {
      name: "api-server-address",
      help: "the target's API server URL as the source's pods reach it",
      default: "the target kubeconfig's server",
    },
    TIMEOUT,
  ],
  unlink: [CLUSTER_NAME, KUBECONFIG],
  check: [KUBECONFIG],
  gateways: [KUBECONFIG],
};

export interface McOptions {
  sub: Subcommand;
  help: boolean;
  kubeconfig?: string;
  gateway: boolean;
  allowedIdentities: string[];
  timeoutMs: number;
  clusterName?: string;
  targetKubeconfig?: string;
  gatewayAddresses?: string[];
  apiServerAddress?: string;
}

/** A boolean flag that defaults to true: only an explicit `--name=false` turns it off. */
function defaultTrue(args: readonly string[], f: ParsedFlags, name: string): boolean {
  return f.bools.has(name) || !args.includes(`--${name}=false`);
}

export function parseMulticlusterArgs(args: readonly string[]): McOptions {
  const [sub, ...rest] = args;
  if (!sub || sub === "--help" || sub === "-h" || sub === "help") {
    return { sub: "check", help: true, gateway: true, allowedIdentities: ["*"], timeoutMs: 300_000 };
  }
  if (!(SUBCOMMANDS as readonly string[]).includes(sub)) {
    throw new UsageError(`unknown subcommand "${sub}" (one of ${SUBCOMMANDS.join(", ")})`);
  }
  const s = sub as Subcommand;
  const f = parseFlags(rest, FLAGS[s]);
  if (f.positionals.length) throw new UsageError(`unexpected argument "${f.positionals[0]}"`);
  const v = (k: string) => f.values.get(k);
  let timeoutMs = 300_000;
  if (v("timeout") !== undefined) {
    try {
      timeoutMs = parseDurationMs(v("timeout")!, "--timeout");
    } catch (e) {
      throw new UsageError((e as Error).message);
    }
  }
  let allowedIdentities = ["*"];
  if (v("gateway-allowed-identities") !== undefined) {
    try {
      allowedIdentities = parseIdentities(v("gateway-allowed-identities")!);
    } catch (e) {
      throw new UsageError(`--gateway-allowed-identities: ${(e as Error).message}`);
    }
  }
  const o: McOptions = {
    sub: s,
    help: f.help,
    gateway: defaultTrue(rest, f, "gateway"),
    allowedIdentities,
    timeoutMs,
    ...(v("kubeconfig") !== undefined ? { kubeconfig: v("kubeconfig") } : {}),
  };
  if (f.help) return o;
  if (s === "link" || s === "unlink") {
    const name = v("cluster-name");
    if (!name) throw new UsageError("--cluster-name is required");
    const bad = validClusterName(name);
    if (bad) throw new UsageError(`--cluster-name: ${bad}`);
    o.clusterName = name;
  }
  if (s === "link") {
    o.targetKubeconfig = v("target-kubeconfig");
    if (!o.targetKubeconfig) throw new UsageError("--target-kubeconfig is required");
    const addr = v("gateway-address");
    if (addr !== undefined) {
      if (!o.gateway) throw new UsageError("--gateway-address makes no sense with --gateway=false");
      const list = addr.split(",").map((x) => x.trim());
      if (list.some((x) => !/^[A-Za-z0-9.:-]+$/.test(x))) {
        throw new UsageError(`--gateway-address: "${addr}" is not a list of addresses`);
      }
      o.gatewayAddresses = list;
    }
    const api = v("api-server-address");
    if (api !== undefined) {
      let u: URL;
      try {
        u = new URL(api);
      } catch {
        throw new UsageError(`--api-server-address: "${api}" is not a URL (https://HOST:PORT)`);
      }
      if (u.protocol !== "https:") throw new UsageError(`--api-server-address: "${api}" is not https://`);
      o.apiServerAddress = api.replace(/\/$/, "");
    }
  }
  return o;
}
