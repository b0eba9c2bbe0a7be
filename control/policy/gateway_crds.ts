/**
 * Gateway API CRDs (HTTPRoute, GRPCRoute) are shared with other projects: install ours only when
 * the CRD is absent, update it only when we installed it, and never touch one another owner
 * installed. Deploy tooling calls `decideCrdInstall` with what the API server has.
 */

/** Label our CRD manifests carry; its presence on a live CRD means we own it. */
export const CRD_OWNER_LABEL = "app.kubernetes.io/managed-by";
export const CRD_OWNER_VALUE = "weft";

export interface LiveCrd {
  metadata: { name: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  spec?: { versions?: { name: string; served?: boolean }[] };
}

export type CrdDecision =
  | { action: "create" }
  | { action: "update" }
  | { action: "skip"; reason: string; warning?: string };

export function decideCrdInstall(
  name: string,
  live: LiveCrd | undefined,
  needVersions: string[],
): CrdDecision {
  if (!live) return { action: "create" };
  if (live.metadata.labels?.[CRD_OWNER_LABEL] === CRD_OWNER_VALUE) return { action: "update" };
  const owner = live.metadata.labels?.[CRD_OWNER_LABEL] ??
    live.metadata.annotations?.["gateway.networking.k8s.io/bundle-version"] ?? "another owner";
  const served = new Set((live.spec?.versions ?? []).filter((v) => v.served !== false).map((v) => v.name));
  const missing = needVersions.filter((v) => !served.has(v));
  return {
    action: "skip",
    reason: `CRD ${name} was installed by ${owner}; left unchanged`,
    warning: missing.length
      ? `CRD ${name} does not serve ${missing.join(", ")}: the policy controller cannot watch those routes`
      : undefined,
  };
}
