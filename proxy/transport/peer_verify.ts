/**
 * Checks a mesh peer's leaf certificate against the trust anchors. Deno's node:tls server asks
 * for client certificates but neither verifies them nor exposes the intermediates, so the
 * inbound side does it here: the leaf must be within its validity period and signed by a trust
 * anchor or by one of our own intermediates (a mesh has one issuer, which signs every proxy's
 * leaf), and its DNS SAN is the client identity.
 */
import { X509Certificate } from "node:crypto";

export type PeerVerdict = { ok: true; identity: string } | { ok: false; reason: string };

function pemBlocks(pem: string): string[] {
  return pem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
}

export function dnsSans(cert: X509Certificate): string[] {
  return (cert.subjectAltName ?? "").split(",").map((s) => s.trim()).filter((s) => s.startsWith("DNS:")).map((
    s,
  ) => s.slice(4));
}

function within(cert: X509Certificate, now: number): boolean {
  return Date.parse(cert.validFrom) <= now && now <= Date.parse(cert.validTo);
}

function signedBy(cert: X509Certificate, issuer: X509Certificate): boolean {
  try {
    return cert.checkIssued(issuer) && cert.verify(issuer.publicKey);
  } catch {
    return false;
  }
}

export class PeerVerifier {
  #issuers: X509Certificate[];
  /** Verdicts by leaf DER fingerprint: the signature check is the costly part, leaves repeat. */
  #cache = new Map<string, { verdict: PeerVerdict; notBefore: number; notAfter: number }>();

  constructor(trustAnchorsPem: string, ownChainPem: string, now = Date.now()) {
    const anchors = pemBlocks(trustAnchorsPem).map((p) => new X509Certificate(p));
    const intermediates = pemBlocks(ownChainPem).slice(1).map((p) => new X509Certificate(p)).filter((c) =>
      c.ca && within(c, now) && anchors.some((a) => signedBy(c, a))
    );
    this.#issuers = [...intermediates, ...anchors];
  }

  verify(leafDer: Uint8Array, now = Date.now()): PeerVerdict {
    let leaf: X509Certificate;
    try {
      leaf = new X509Certificate(leafDer);
    } catch (e) {
      return { ok: false, reason: `unparsable certificate: ${(e as Error).message}` };
    }
    const key = leaf.fingerprint256;
    const hit = this.#cache.get(key);
    if (hit && hit.notBefore <= now && now <= hit.notAfter) return hit.verdict;
    const notBefore = Date.parse(leaf.validFrom), notAfter = Date.parse(leaf.validTo);
    if (!(notBefore <= now && now <= notAfter)) {
      return { ok: false, reason: `certificate not valid now (valid ${leaf.validFrom} .. ${leaf.validTo})` };
    }
    let verdict: PeerVerdict;
    if (!this.#issuers.some((i) => signedBy(leaf, i))) {
      verdict = {
        ok: false,
        reason: `certificate issued by "${leaf.issuer}" does not chain to the trust anchors`,
      };
    } else {
      const sans = dnsSans(leaf);
      verdict = sans.length === 0
        ? { ok: false, reason: "certificate has no DNS SAN" }
        : { ok: true, identity: sans[0] };
    }
    if (this.#cache.size > 4096) this.#cache.clear();
    this.#cache.set(key, { verdict, notBefore, notAfter });
    return verdict;
  }
}
