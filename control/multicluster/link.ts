/**
 * The Link object (`links.multicluster.linkerd.io`, v1alpha2) as the service mirror reads it, with
 * Linkerd's defaults filled in, and the label and annotation names of the multicluster contract
 * (proto/multicluster.ts; names are Linkerd's).
 */
import { parseDurationMs } from "../../proto/go_duration.ts";
import type { LabelSelectorLike } from "../k8s/label_selector.ts";
import type { KubeObject } from "../k8s/mod.ts";
import { Credentials, McAnnotations, McLabels, MULTICLUSTER_NAMESPACE } from "../../proto/multicluster.ts";

export { LINK_GROUP, LINK_VERSION, MULTICLUSTER_NAMESPACE } from "../../proto/multicluster.ts";
export const Labels = McLabels;
export const Annotations = McAnnotations;
export const CREDENTIALS_SECRET_TYPE = Credentials.secretType;

export interface ProbeSpec {
  path: string;
  port: number;
  periodMs: number;
}

/** A Link with every default applied. */
export interface Link {
  name: string;
  namespace: string;
  resourceVersion: string;
  targetClusterName: string;
  targetClusterDomain: string;
  targetClusterLinkerdNamespace: string;
  clusterCredentialsSecret: string;
  /** Comma-separated IPs or DNS names, as in Linkerd. */
  gatewayAddress: string;
  gatewayPort: number;
  gatewayIdentity: string;
  probeSpec: ProbeSpec;
  selector: LabelSelectorLike;
  remoteDiscoverySelector: LabelSelectorLike;
  federatedServiceSelector: LabelSelectorLike;
}

/** The Link object as stored (ports may be strings, as Linkerd writes them). */
export type LinkObject = KubeObject & {
  spec?: {
    targetClusterName?: string;
    targetClusterDomain?: string;
    targetClusterLinkerdNamespace?: string;
    clusterCredentialsSecret?: string;
    gatewayAddress?: string;
    gatewayPort?: string | number;
    gatewayIdentity?: string;
    probeSpec?: { path?: string; port?: string | number; period?: string };
    selector?: LabelSelectorLike;
    remoteDiscoverySelector?: LabelSelectorLike;
    federatedServiceSelector?: LabelSelectorLike;
  };
};

export const DEFAULT_SELECTOR: LabelSelectorLike = { matchLabels: { [Labels.exported]: "true" } };
export const DEFAULT_REMOTE_DISCOVERY_SELECTOR: LabelSelectorLike = {
  matchLabels: { [Labels.exported]: "remote-discovery" },
};
export const DEFAULT_FEDERATED_SELECTOR: LabelSelectorLike = {
  matchLabels: { [Labels.federated]: "member" },
};
export const DEFAULT_PROBE: ProbeSpec = { path: "/ready", port: 30191, periodMs: 3000 };

export class LinkError extends Error {
  override name = "LinkError";
}

function port(v: string | number | undefined, what: string, dflt?: number): number {
  if (v === undefined || v === "") {
    if (dflt !== undefined) return dflt;
    throw new LinkError(`${what} is required`);
  }
  const n = typeof v === "number" ? v : Number(v);
  if (!Number.isInteger(n) || n < 1 || n > 65535) {
    throw new LinkError(`${what}: ${JSON.stringify(v)} is not a port`);
  }
  return n;
}

/** A Link from its object; gateway fields may be empty (flat-only links have no gateway). */
export function parseLink(obj: LinkObject): Link {
  const s = obj.spec ?? {};
  const name = obj.metadata.name ?? "";
  if (!s.targetClusterName) throw new LinkError(`link ${name}: spec.targetClusterName is required`);
  const hasGateway = !!s.gatewayAddress;
  for (
    const [field, sel] of Object.entries({
      selector: s.selector,
      remoteDiscoverySelector: s.remoteDiscoverySelector,
      federatedServiceSelector: s.federatedServiceSelector,
    })
  ) {
    try {
      if (sel) selectorString(sel);
    } catch (e) {
      throw new LinkError(`link ${name}: spec.${field}: ${(e as Error).message}`);
    }
  }
  return {
    name,
    namespace: obj.metadata.namespace ?? MULTICLUSTER_NAMESPACE,
    resourceVersion: obj.metadata.resourceVersion ?? "",
    targetClusterName: s.targetClusterName,
    targetClusterDomain: s.targetClusterDomain || "cluster.local",
    targetClusterLinkerdNamespace: s.targetClusterLinkerdNamespace || "weft",
    clusterCredentialsSecret: s.clusterCredentialsSecret || `cluster-credentials-${s.targetClusterName}`,
    gatewayAddress: s.gatewayAddress ?? "",
    gatewayPort: hasGateway ? port(s.gatewayPort, `link ${name}: spec.gatewayPort`, 30143) : 0,
    gatewayIdentity: s.gatewayIdentity ?? "",
    probeSpec: {
      path: s.probeSpec?.path || DEFAULT_PROBE.path,
      port: port(s.probeSpec?.port, `link ${name}: spec.probeSpec.port`, DEFAULT_PROBE.port),
      periodMs: s.probeSpec?.period
        ? parseDurationMs(s.probeSpec.period, `link ${name}: spec.probeSpec.period`)
        : DEFAULT_PROBE.periodMs,
    },
    selector: s.selector ?? DEFAULT_SELECTOR,
    remoteDiscoverySelector: s.remoteDiscoverySelector ?? DEFAULT_REMOTE_DISCOVERY_SELECTOR,
    federatedServiceSelector: s.federatedServiceSelector ?? DEFAULT_FEDERATED_SELECTOR,
  };
}

/** A label selector as the API server's `labelSelector=` query string. */
export function selectorString(sel: LabelSelectorLike): string {
  const parts: string[] = [];
  for (const [k, v] of Object.entries(sel.matchLabels ?? {})) parts.push(`${k}=${v}`);
  for (const r of sel.matchExpressions ?? []) {
    const values = (r.values ?? []).join(",");
    switch (r.operator) {
      case "In":
        parts.push(`${r.key} in (${values})`);
        break;
      case "NotIn":
        parts.push(`${r.key} notin (${values})`);
        break;
      case "Exists":
        parts.push(r.key);
        break;
      case "DoesNotExist":
        parts.push(`!${r.key}`);
        break;
      default:
        throw new LinkError(`selector operator ${r.operator} is not supported`);
    }
  }
  return parts.join(",");
}
