/**
 * What the rotation command needs to know of each component: which anchors it trusts right now and which issuer
 * signed its leaf (proxy) or signs for it (identity). Read by `readRotationState` (manifests/check/rotation_state.ts,
 * shared with `mesh:check`) from the metrics of the rotation contract (issue 21); here only the raw facts are kept,
 * because each step judges them against its own target (e.g. remove-anchor against the anchors that stay).
 */
import type { PodRotationState } from "../check/rotation_state.ts";

/** One component that verifies peers or signs: a meshed pod's proxy, or the identity controller. */
export interface View {
  /** `namespace/pod`, with ` (identity)` for the identity controller. */
  name: string;
  kind: "proxy" | "identity";
  /** Fingerprints of the anchors it trusts; undefined when it does not report them. */
  anchors?: string[];
  /** Proxy: the issuer of its leaf. Identity: the issuer it signs with. Undefined when not reported. */
  issuer?: string;
  /** Why it could not be read, or what it reports is unusable (unreachable, metrics missing, two issuers). */
  error?: string;
}

/** The view of one component as `readRotationState` found it. */
export function viewOf(p: PodRotationState): View {
  const anchors = p.anchors?.map((a) => a.fingerprint).sort();
  const issuer = p.issuer?.fingerprint;
  const unreadable = p.status === "unknown" || !anchors || !issuer;
  return {
    name: `${p.namespace}/${p.name}${p.kind === "identity" ? " (identity)" : ""}`,
    kind: p.kind,
    ...(anchors ? { anchors } : {}),
    ...(issuer ? { issuer } : {}),
    ...(unreadable ? { error: p.reasons.join("; ") || "reports no rotation metrics" } : {}),
  };
}
