/**
 * The trust bundle the proxy verifies peers against right now: the trust anchors and the issuers
 * identity publishes (`weft-issuers.crt`), each published issuer kept only if it chains to one of
 * these anchors. Parsed once per change, never per connection; the TLS layer keys its contexts and
 * verifier caches on the bundle object, so a new bundle applies to the next connection.
 */
import { X509Certificate } from "node:crypto";

export interface TrustBundle {
  /** The anchors as PEM (what TLS contexts are built from). */
  anchorsPem: string;
  anchors: readonly X509Certificate[];
  /** Published issuers that chain to an anchor, PEM; empty when none were published. */
  issuersPem: string;
  issuers: readonly X509Certificate[];
}

export class TrustBundleError extends Error {
  override name = "TrustBundleError";
}

export function pemCertificates(pem: string): string[] {
  return pem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
}

function parseAll(pem: string, what: string): X509Certificate[] {
  const blocks = pemCertificates(pem);
  return blocks.map((b, i) => {
    try {
      return new X509Certificate(b);
    } catch (e) {
      throw new TrustBundleError(`${what}: certificate #${i + 1} does not parse: ${(e as Error).message}`);
    }
  });
}

export function withinValidity(c: X509Certificate, now: number): boolean {
  return Date.parse(c.validFrom) <= now && now <= Date.parse(c.validTo);
}

/** `cert` names `issuer` as its issuer and carries its signature. */
export function signedBy(cert: X509Certificate, issuer: X509Certificate): boolean {
  try {
    return cert.checkIssued(issuer) && cert.verify(issuer.publicKey);
  } catch {
    return false;
  }
}

/** SHA-256 of the DER, lowercase hex without colons (the contract's fingerprint form). */
export function fingerprintHex(c: X509Certificate): string {
  return c.fingerprint256.replaceAll(":", "").toLowerCase();
}

/** The CN of a certificate's subject, or the whole subject text when it has none. */
export function commonName(c: X509Certificate): string {
  const cn = c.subject.split("\n").find((l) => l.startsWith("CN="));
  return cn ? cn.slice(3) : c.subject.replaceAll("\n", ", ");
}

/**
 * Builds a bundle. Anchors that do not parse, or none at all, throw (the caller keeps its old
 * bundle). A published issuer that is not a CA, not valid now or not signed by one of the anchors
 * is left out and named in `ignored`: identity publishes, the proxy decides.
 */
export function buildTrustBundle(
  anchorsPem: string,
  issuersPem = "",
  now = Date.now(),
): { bundle: TrustBundle; ignored: string[] } {
  const anchors = parseAll(anchorsPem, "trust anchors");
  if (anchors.length === 0) throw new TrustBundleError("trust anchors: no PEM certificate in the bundle");
  const ignored: string[] = [];
  const issuers: X509Certificate[] = [];
  const kept: string[] = [];
  const blocks = pemCertificates(issuersPem);
  blocks.forEach((b, i) => {
    let c: X509Certificate;
    try {
      c = new X509Certificate(b);
    } catch (e) {
      ignored.push(`published issuer #${i + 1} does not parse: ${(e as Error).message}`);
      return;
    }
    const name = `published issuer "${commonName(c)}"`;
    if (!c.ca) ignored.push(`${name} is not a CA certificate`);
    else if (!withinValidity(c, now)) {
      ignored.push(`${name} is not valid now (${c.validFrom} .. ${c.validTo})`);
    } else if (!anchors.some((a) => signedBy(c, a))) ignored.push(`${name} does not chain to a trust anchor`);
    else {
      issuers.push(c);
      kept.push(b + "\n");
    }
  });
  return {
    bundle: {
      anchorsPem: anchors.map((a) => a.toString()).join(""),
      anchors,
      issuersPem: kept.join(""),
      issuers,
    },
    ignored,
  };
}

/** Holds the current bundle; `set` swaps it and tells the listeners. */
export class TrustStore {
  #current: TrustBundle;
  #listeners = new Set<(b: TrustBundle) => void>();

  constructor(initial: TrustBundle) {
    this.#current = initial;
  }

  current(): TrustBundle {
    return this.#current;
  }

  set(bundle: TrustBundle): void {
    this.#current = bundle;
    for (const l of this.#listeners) l(bundle);
  }

  onChange(cb: (b: TrustBundle) => void): () => void {
    this.#listeners.add(cb);
    return () => this.#listeners.delete(cb);
  }
}
