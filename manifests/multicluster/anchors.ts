/**
 * Whether two clusters' trust anchor bundles share a certificate: a proxy of one accepts a peer of the other only
 * when the peer's chain ends at an anchor it trusts, so `link` refuses clusters with nothing in common and
 * `check` reports it. Certificates compare by their DER bytes (the PEM text may differ in line breaks).
 */

/** The base64 body of each PEM CERTIFICATE block, whitespace removed. */
export function pemCertificates(pem: string): string[] {
  const out: string[] = [];
  const re = /-----BEGIN CERTIFICATE-----([\s\S]*?)-----END CERTIFICATE-----/g;
  for (const m of pem.matchAll(re)) out.push(m[1].replace(/\s+/g, ""));
  return out;
}

/** The certificates (base64 DER) present in both bundles. */
export function sharedAnchors(a: string, b: string): string[] {
  const inB = new Set(pemCertificates(b));
  return pemCertificates(a).filter((c) => inB.has(c));
}

export const NO_SHARED_ANCHOR = "clusters do not share a trust anchor";

/** Throws when the bundles share nothing, naming how many each has. */
export function requireSharedAnchor(source: string, target: string, targetName: string): void {
  if (sharedAnchors(source, target).length > 0) return;
  throw new Error(
    `${NO_SHARED_ANCHOR}: the source has ${pemCertificates(source).length} anchor(s), ${targetName} has ` +
      `${pemCertificates(target).length}, none in common; deploy both with the same --trust-anchors ` +
      "(docs/multicluster.md)",
  );
}
