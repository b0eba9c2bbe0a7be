/**
 * What the rotation command learns from the mesh itself: per proxy, which anchors it trusts right now and which
 * issuer signed its current leaf; per identity controller, which anchors it trusts and which issuer it signs
 * with. Both come from the metrics named in the rotation contract (issue 21):
 *
 *   proxy     weft_identity_trust_anchor_expiration_timestamp_seconds{fingerprint_sha256,subject}
 *             weft_identity_leaf_issuer_info{fingerprint_sha256,subject}
 *   identity  weft_identity_trust_anchor_expiration_timestamp_seconds{fingerprint_sha256,subject}
 *             weft_identity_issuer_info{fingerprint_sha256,subject}
 *
 * Parsing is pure; reading them from pods is `kube_cluster.ts`.
 */

export const ANCHOR_METRIC = "weft_identity_trust_anchor_expiration_timestamp_seconds";
export const LEAF_ISSUER_METRIC = "weft_identity_leaf_issuer_info";
export const IDENTITY_ISSUER_METRIC = "weft_identity_issuer_info";

/** One component that verifies peers or signs: a meshed pod's proxy, or the identity controller. */
export interface View {
  /** `namespace/pod`, with ` (identity)` for the identity controller. */
  name: string;
  kind: "proxy" | "identity";
  /** Fingerprints of the anchors it trusts; undefined when it does not report them. */
  anchors?: string[];
  /** Proxy: the issuer of its leaf. Identity: the issuer it signs with. Undefined when not reported. */
  issuer?: string;
  /** Why it could not be read (unreachable, not ready, metrics missing). */
  error?: string;
}

/** The fingerprint labels of every sample of `name` with a value other than 0, from Prometheus text. */
export function fingerprintsOf(text: string, name: string): string[] {
  const out = new Set<string>();
  for (const line of text.split("\n")) {
    if (!line.startsWith(name + "{")) continue;
    const close = line.lastIndexOf("}");
    const value = Number(line.slice(close + 1).trim().split(/\s+/)[0]);
    const fp = /(?:^|[{,])fingerprint_sha256="([0-9a-f]+)"/.exec(line.slice(name.length, close + 1))?.[1];
    if (fp && value !== 0) out.add(fp);
  }
  return [...out];
}

/** A proxy's view from its admin /metrics. */
export function proxyView(name: string, metrics: string): View {
  const anchors = fingerprintsOf(metrics, ANCHOR_METRIC);
  const issuers = fingerprintsOf(metrics, LEAF_ISSUER_METRIC);
  return viewOf(name, "proxy", anchors, issuers, LEAF_ISSUER_METRIC);
}

/** The identity controller's view from its admin /metrics. */
export function identityView(name: string, metrics: string): View {
  const anchors = fingerprintsOf(metrics, ANCHOR_METRIC);
  const issuers = fingerprintsOf(metrics, IDENTITY_ISSUER_METRIC);
  return viewOf(name, "identity", anchors, issuers, IDENTITY_ISSUER_METRIC);
}

function viewOf(
  name: string,
  kind: View["kind"],
  anchors: string[],
  issuers: string[],
  issuerMetric: string,
): View {
  const missing = [anchors.length === 0 ? ANCHOR_METRIC : "", issuers.length === 0 ? issuerMetric : ""]
    .filter((m) => m);
  return {
    name,
    kind,
    ...(anchors.length ? { anchors: anchors.sort() } : {}),
    ...(issuers.length === 1 ? { issuer: issuers[0] } : {}),
    ...(missing.length
      ? {
        error: `its metrics have no ${missing.join(" and no ")} (${
          kind === "proxy" ? "a proxy" : "an identity controller"
        } without issue 21's metrics?)`,
      }
      : issuers.length > 1
      ? { error: `it reports ${issuers.length} issuers in ${issuerMetric}` }
      : {}),
  };
}
