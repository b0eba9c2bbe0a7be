/**
 * Checks a mesh peer's leaf certificate against the trust bundle. Deno's node:tls server asks for
 * client certificates but does not verify them, so the inbound side does it here. It does expose
 * what the client sent after its leaf (`getPeerCertificate(true)`'s issuerCertificate links; see
 * docs/identity.md), so a leaf may chain to a trust anchor through an issuer this proxy has never
 * seen: leaf → presented or known issuer (a CA, valid now, signed by an anchor) → anchor. Known
 * issuers are this proxy's own intermediates and those identity published, both checked against
 * the anchors before use. The leaf's first DNS SAN is the client identity.
 */
import { X509Certificate } from "node:crypto";
import { pemCertificates, signedBy, type TrustBundle, withinValidity } from "../core/trust_store.ts";

/** A certificate the peer sent after its leaf, as node:tls describes it (SHA-256 with colons). */
export interface PresentedCert {
  raw: Uint8Array;
  fingerprint256: string;
}

export type PeerVerdict = { ok: true; identity: string } | { ok: false; reason: string };

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

/** At most this many presented intermediates are looked at (a mesh chain has one). */
const MAX_PRESENTED = 4;
const MAX_CACHE = 4096;

interface Cached {
  verdict: PeerVerdict;
  /** The verdict holds in [from, until]: the leaf's and, for a trusted leaf, its issuer's validity. */
  from: number;
  until: number;
  der: Uint8Array;
}

export class PeerVerifier {
  readonly #anchors: readonly X509Certificate[];
  /** Issuers known to chain to an anchor now: our own intermediates and the published ones. */
  readonly #known: X509Certificate[];
  /**
   * Trusted leaves by fingerprint: the signature checks are the costly part, and leaves repeat.
   * A leaf once shown to chain stays trusted whatever the peer presents with it later.
   */
  #trusted = new Map<string, Cached>();
  /** Refusals by leaf and presented intermediates: the same leaf may verify with another chain. */
  #refused = new Map<string, Cached>();

  constructor(bundle: TrustBundle, ownChainPem: string, now = Date.now()) {
    this.#anchors = bundle.anchors;
    const own = pemCertificates(ownChainPem).slice(1).map((p) => new X509Certificate(p)).filter((c) =>
      c.ca && withinValidity(c, now) && this.#anchors.some((a) => signedBy(c, a))
    );
    this.#known = [...own, ...bundle.issuers];
  }

  /** Cheap first look: the cached verdict for a trusted leaf, before the chain is fetched. */
  cachedTrusted(leafDer: Uint8Array, fingerprint256: string, now = Date.now()): PeerVerdict | undefined {
    const hit = this.#trusted.get(fingerprint256);
    if (hit && hit.from <= now && now <= hit.until && sameBytes(hit.der, leafDer)) return hit.verdict;
    return undefined;
  }

  /**
   * `fingerprint256` (node:tls computes it for every peer certificate) finds a repeated leaf
   * without parsing it again; a verdict is only reused for the very bytes it was given for.
   * `presented` are the certificates the peer sent after its leaf, in its order.
   */
  verify(
    leafDer: Uint8Array,
    now = Date.now(),
    fingerprint256?: string,
    presented: readonly PresentedCert[] = [],
  ): PeerVerdict {
    if (fingerprint256 !== undefined) {
      const known = this.cachedTrusted(leafDer, fingerprint256, now);
      if (known) return known;
    }
    let leaf: X509Certificate;
    try {
      leaf = new X509Certificate(leafDer);
    } catch (e) {
      return { ok: false, reason: `unparsable certificate: ${(e as Error).message}` };
    }
    const key = leaf.fingerprint256;
    const trusted = this.cachedTrusted(leafDer, key, now);
    if (trusted) return trusted;
    const refusedKey = presented.length === 0
      ? key
      : `${key}/${presented.map((p) => p.fingerprint256).join("/")}`;
    const refused = this.#refused.get(refusedKey);
    if (refused && refused.from <= now && now <= refused.until && sameBytes(refused.der, leafDer)) {
      return refused.verdict;
    }
    const notBefore = Date.parse(leaf.validFrom), notAfter = Date.parse(leaf.validTo);
    if (!(notBefore <= now && now <= notAfter)) {
      return { ok: false, reason: `certificate not valid now (valid ${leaf.validFrom} .. ${leaf.validTo})` };
    }
    const via = this.#chain(leaf, presented, now);
    let verdict: PeerVerdict;
    if (via === undefined) {
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
    const entry = {
      verdict,
      from: notBefore,
      until: via === undefined ? notAfter : Math.min(notAfter, via.until),
      der: leafDer.slice(),
    };
    const cache = verdict.ok ? this.#trusted : this.#refused;
    if (cache.size >= MAX_CACHE) cache.clear();
    cache.set(verdict.ok ? key : refusedKey, entry);
    return verdict;
  }

  /** How the leaf reaches an anchor, and until when that path holds; undefined when it does not. */
  #chain(
    leaf: X509Certificate,
    presented: readonly PresentedCert[],
    now: number,
  ): { until: number } | undefined {
    for (const a of this.#anchors) {
      if (signedBy(leaf, a)) return { until: Date.parse(a.validTo) };
    }
    for (const k of this.#known) {
      if (signedBy(leaf, k)) return { until: Date.parse(k.validTo) };
    }
    // An issuer the peer sent: only the one that signed the leaf matters, and it must itself be a
    // CA under an anchor (mesh issuers sit right under the anchor; deeper chains are not followed).
    for (const p of presented.slice(0, MAX_PRESENTED)) {
      let c: X509Certificate;
      try {
        c = new X509Certificate(p.raw);
      } catch {
        continue;
      }
      if (!c.ca || !withinValidity(c, now) || !signedBy(leaf, c)) continue;
      const anchor = this.#anchors.find((a) => signedBy(c, a));
      if (anchor) return { until: Math.min(Date.parse(c.validTo), Date.parse(anchor.validTo)) };
    }
    return undefined;
  }
}
