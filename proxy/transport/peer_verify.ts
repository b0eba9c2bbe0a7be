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

/** The DNS names of a subjectAltName text as node:crypto and node:tls print it (`DNS:a, DNS:b`). */
export function dnsSansOf(subjectAltName: string | undefined): string[] {
  return (subjectAltName ?? "").split(",").map((s) => s.trim()).filter((s) => s.startsWith("DNS:")).map((
    s,
  ) => s.slice(4));
}

export function dnsSans(cert: X509Certificate): string[] {
  return dnsSansOf(cert.subjectAltName);
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
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
  #cache = new Map<string, { verdict: PeerVerdict; notBefore: number; notAfter: number; der: Uint8Array }>();

  constructor(trustAnchorsPem: string, ownChainPem: string, now = Date.now()) {
    const anchors = pemBlocks(trustAnchorsPem).map((p) => new X509Certificate(p));
    const intermediates = pemBlocks(ownChainPem).slice(1).map((p) => new X509Certificate(p)).filter((c) =>
      c.ca && within(c, now) && anchors.some((a) => signedBy(c, a))
    );
    this.#issuers = [...intermediates, ...anchors];
  }

  /**
   * `fingerprint256`, when the caller has it (node:tls computes it for every peer certificate),
   * finds a repeated leaf without parsing it again (parsing is most of a cached verdict's cost);
   * the verdict is only reused for the very bytes it was given for, whatever fingerprint is passed.
   */
  verify(leafDer: Uint8Array, now = Date.now(), fingerprint256?: string): PeerVerdict {
    if (fingerprint256 !== undefined) {
      const known = this.#cache.get(fingerprint256);
      if (known && known.notBefore <= now && now <= known.notAfter && sameBytes(known.der, leafDer)) {
        return known.verdict;
      }
    }
    let leaf: X509Certificate;
    try {
      leaf = new X509Certificate(leafDer);
    } catch (e) {
      return { ok: false, reason: `unparsable certificate: ${(e as Error).message}` };
    }
    const key = leaf.fingerprint256;
    const hit = this.#cache.get(key);
    if (hit && hit.notBefore <= now && now <= hit.notAfter && sameBytes(hit.der, leafDer)) return hit.verdict;
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
    this.#cache.set(key, { verdict, notBefore, notAfter, der: leafDer.slice() });
    return verdict;
  }
}
