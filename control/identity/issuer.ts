/**
 * The issuer: an intermediate CA certificate and key, checked against the trust anchors once at
 * load, with everything the signing path needs precomputed (issuer name, key identifier, chain,
 * expiry clamp) so that issuing a leaf is one DER assembly and one signature.
 */
import {
  children,
  derTime,
  ecdsaRawToDer,
  expectTlv,
  oid,
  Tag,
  tlv,
  unsignedInteger,
} from "../../proto/support/der.ts";
import { importSigningKey, parseCertificates, PemError } from "./pem.ts";
import { x509 } from "../../proto/support/x509.ts";

export class IssuerError extends Error {
  override name = "IssuerError";
}

/** Issuer certificate (optionally followed by further intermediates) and its private key, PEM. */
export interface IssuerMaterial {
  certPem: string;
  keyPem: string;
  /** Where it came from, for logs (e.g. `secret linkerd/linkerd-identity-issuer@12345`). */
  origin: string;
  /** The CA a cert-manager Secret names in `ca.crt` (checked against the anchors, never trusted from here). */
  caPem?: string;
}

export class TrustAnchors {
  private constructor(readonly pem: string, readonly certs: x509.X509Certificate[]) {}

  static parse(pem: string): TrustAnchors {
    try {
      return new TrustAnchors(pem, parseCertificates(pem, "trust anchors"));
    } catch (e) {
      if (e instanceof PemError) throw new IssuerError(e.message);
      throw e;
    }
  }
}

export interface IssuedCertificate {
  leaf: Uint8Array;
  /** Intermediates from the issuer up to, not including, the anchor. */
  intermediates: Uint8Array[];
  notAfter: Date;
}

export interface IssueOptions {
  lifetimeMs: number;
  clockSkewMs: number;
}

const ECDSA_SHA256 = tlv(Tag.sequence, oid("1.2.840.10045.4.3.2"));
const VERSION_3 = tlv(0xa0, tlv(Tag.integer, new Uint8Array([2])));
const TRUE = tlv(Tag.boolean, new Uint8Array([0xff]));
const EXT_KEY_USAGE = tlv(
  Tag.sequence,
  oid("2.5.29.15"),
  TRUE,
  tlv(Tag.octetString, tlv(Tag.bitString, new Uint8Array([7, 0x80]))), // digitalSignature
);
const EXT_EXT_KEY_USAGE = tlv(
  Tag.sequence,
  oid("2.5.29.37"),
  tlv(Tag.octetString, tlv(Tag.sequence, oid("1.3.6.1.5.5.7.3.1"), oid("1.3.6.1.5.5.7.3.2"))),
);
const EXT_NOT_CA = tlv(Tag.sequence, oid("2.5.29.19"), TRUE, tlv(Tag.octetString, tlv(Tag.sequence)));
const OID_SAN = oid("2.5.29.17");
const OID_AKI = oid("2.5.29.35");
const SIGN_ALG = { name: "ECDSA", hash: "SHA-256" };
const EMPTY_NAME_LEN = 2; // DER of an empty SEQUENCE

function hexToBytes(hex: string): Uint8Array {
  const out = new Uint8Array(hex.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = parseInt(hex.slice(2 * i, 2 * i + 2), 16);
  return out;
}

/** The raw subject Name of a certificate (tbs field 6, after the optional version). */
function subjectDer(cert: x509.X509Certificate): Uint8Array {
  const der = new Uint8Array(cert.rawData);
  const outer = expectTlv(der, 0, der.length, Tag.sequence, "certificate");
  const tbs = expectTlv(der, outer.valueStart, outer.end, Tag.sequence, "tbsCertificate");
  const fields = children(der, tbs);
  const i = fields[0].tag === 0xa0 ? 1 : 0;
  const subject = fields[i + 4];
  return der.slice(subject.start, subject.end);
}

function describe(cert: x509.X509Certificate): string {
  return `"${cert.subject}"`;
}

async function keyIdentifier(cert: x509.X509Certificate): Promise<Uint8Array> {
  const ski = cert.getExtension(x509.SubjectKeyIdentifierExtension);
  if (ski) return hexToBytes(ski.keyId);
  // RFC 5280 method 1: SHA-1 of the subjectPublicKey bits.
  const spki = new Uint8Array(cert.publicKey.rawData);
  const seq = expectTlv(spki, 0, spki.length, Tag.sequence, "spki");
  const alg = expectTlv(spki, seq.valueStart, seq.end, Tag.sequence, "spki algorithm");
  const bits = expectTlv(spki, alg.end, seq.end, Tag.bitString, "spki key");
  return new Uint8Array(await crypto.subtle.digest("SHA-1", spki.subarray(bits.valueStart + 1, bits.end)));
}

function checkCa(cert: x509.X509Certificate, role: string): void {
  const bc = cert.getExtension(x509.BasicConstraintsExtension);
  if (!bc?.ca) {
    throw new IssuerError(`${role} ${describe(cert)} is not a CA (basicConstraints cA is not set)`);
  }
  const ku = cert.getExtension(x509.KeyUsagesExtension);
  if (ku && (ku.usages & x509.KeyUsageFlags.keyCertSign) === 0) {
    throw new IssuerError(`${role} ${describe(cert)} key usage does not allow certificate signing`);
  }
}

function checkValidAt(cert: x509.X509Certificate, role: string, now: number): void {
  if (now < cert.notBefore.getTime()) {
    throw new IssuerError(`${role} ${describe(cert)} is not valid before ${cert.notBefore.toISOString()}`);
  }
  if (now > cert.notAfter.getTime()) {
    throw new IssuerError(`${role} ${describe(cert)} expired at ${cert.notAfter.toISOString()}`);
  }
}

async function signedBy(cert: x509.X509Certificate, by: x509.X509Certificate): Promise<boolean> {
  if (cert.issuer !== by.subject) return false;
  try {
    return await cert.verify({ publicKey: by.publicKey, signatureOnly: true });
  } catch {
    return false;
  }
}

export class Issuer {
  private constructor(
    readonly certificate: x509.X509Certificate,
    readonly anchor: x509.X509Certificate,
    readonly anchors: TrustAnchors,
    readonly origin: string,
    private readonly key: CryptoKey,
    private readonly issuerName: Uint8Array,
    private readonly authorityKeyIdExt: Uint8Array,
    private readonly chain: Uint8Array[],
    /** Earliest notAfter along issuer → anchor: no leaf may outlive it. */
    readonly chainNotAfter: number,
  ) {}

  /** Checks `material` against `anchors` at `now`; throws IssuerError with the reason. */
  static async load(material: IssuerMaterial, anchors: TrustAnchors, now: number): Promise<Issuer> {
    let certs: x509.X509Certificate[];
    let key: CryptoKey;
    try {
      certs = parseCertificates(material.certPem, `issuer certificate (${material.origin})`);
      key = await importSigningKey(material.keyPem, `issuer key (${material.origin})`);
    } catch (e) {
      if (e instanceof PemError) throw new IssuerError(e.message);
      throw e;
    }
    const anchorDers = anchors.certs.map((a) => new Uint8Array(a.rawData));
    const isAnchor = (c: x509.X509Certificate) => {
      const d = new Uint8Array(c.rawData);
      return anchorDers.some((a) => a.length === d.length && a.every((b, i) => b === d[i]));
    };
    const issuer = certs[0];
    checkCa(issuer, "issuer certificate");
    checkValidAt(issuer, "issuer certificate", now);

    const probe = new Uint8Array(32);
    const sig = await crypto.subtle.sign(SIGN_ALG, key, probe);
    const publicKey = await issuer.publicKey.export({ name: "ECDSA", namedCurve: "P-256" }, ["verify"])
      .catch(() => undefined);
    if (!publicKey || !(await crypto.subtle.verify(SIGN_ALG, publicKey, sig, probe))) {
      throw new IssuerError(
        `issuer key (${material.origin}) does not match issuer certificate ${describe(issuer)}`,
      );
    }

    // Walk the given intermediates, then find the anchor that signed the last of them.
    const path = certs.filter((c) => !isAnchor(c) || c === issuer);
    let notAfter = issuer.notAfter.getTime();
    for (let i = 1; i < path.length; i++) {
      if (!(await signedBy(path[i - 1], path[i]))) {
        throw new IssuerError(
          `issuer chain: ${describe(path[i - 1])} is not signed by the next certificate ${describe(path[i])}`,
        );
      }
      checkCa(path[i], "intermediate certificate");
      checkValidAt(path[i], "intermediate certificate", now);
      notAfter = Math.min(notAfter, path[i].notAfter.getTime());
    }
    const last = path[path.length - 1];
    let anchor: x509.X509Certificate | undefined;
    for (const a of anchors.certs) {
      if (await signedBy(last, a)) {
        anchor = a;
        break;
      }
    }
    if (!anchor) {
      throw new IssuerError(
        `issuer certificate ${describe(issuer)} (issued by "${last.issuer}") does not chain to any of the ` +
          `${anchors.certs.length} trust anchor(s): ${anchors.certs.map(describe).join(", ")}`,
      );
    }
    checkValidAt(anchor, "trust anchor", now);
    notAfter = Math.min(notAfter, anchor.notAfter.getTime());
    const chain = path.filter((c) => !isAnchor(c)).map((c) => new Uint8Array(c.rawData));
    return new Issuer(
      issuer,
      anchor,
      anchors,
      material.origin,
      key,
      subjectDer(issuer),
      tlv(
        Tag.sequence,
        OID_AKI,
        tlv(Tag.octetString, tlv(Tag.sequence, tlv(0x80, await keyIdentifier(issuer)))),
      ),
      chain,
      notAfter,
    );
  }

  get notAfter(): Date {
    return this.certificate.notAfter;
  }

  /** The issuer certificate and the intermediates between it and its anchor, issuer first. */
  get chainCertificates(): x509.X509Certificate[] {
    return this.chain.map((d) => new x509.X509Certificate(new Uint8Array(d)));
  }

  /**
   * Signs a leaf for `dnsName` with the CSR's subject and key. The caller has already checked the
   * CSR (`subject`, `spki` are its DER slices).
   */
  async issue(
    csr: { subject: Uint8Array; spki: Uint8Array },
    dnsName: string,
    now: number,
    opts: IssueOptions,
  ): Promise<IssuedCertificate> {
    const notBefore = Math.floor((now - opts.clockSkewMs) / 1000) * 1000;
    const notAfter =
      Math.floor(Math.min(now + opts.lifetimeMs + opts.clockSkewMs, this.chainNotAfter) / 1000) *
      1000;
    const serial = crypto.getRandomValues(new Uint8Array(16));
    serial[0] = (serial[0] & 0x7f) | 0x40; // positive, and always 16 bytes long
    const dns = new Uint8Array(dnsName.length);
    for (let i = 0; i < dnsName.length; i++) dns[i] = dnsName.charCodeAt(i);
    const sanValue = tlv(Tag.octetString, tlv(Tag.sequence, tlv(0x82, dns)));
    // RFC 5280: with an empty subject the SAN extension must be critical.
    const san = csr.subject.length === EMPTY_NAME_LEN
      ? tlv(Tag.sequence, OID_SAN, TRUE, sanValue)
      : tlv(Tag.sequence, OID_SAN, sanValue);
    const tbs = tlv(
      Tag.sequence,
      VERSION_3,
      unsignedInteger(serial),
      ECDSA_SHA256,
      this.issuerName,
      tlv(Tag.sequence, derTime(notBefore), derTime(notAfter)),
      csr.subject,
      csr.spki,
      tlv(0xa3, tlv(Tag.sequence, EXT_KEY_USAGE, EXT_EXT_KEY_USAGE, EXT_NOT_CA, this.authorityKeyIdExt, san)),
    );
    const raw = new Uint8Array(await crypto.subtle.sign(SIGN_ALG, this.key, tbs));
    const leaf = tlv(
      Tag.sequence,
      tbs,
      ECDSA_SHA256,
      tlv(Tag.bitString, new Uint8Array([0]), ecdsaRawToDer(raw)),
    );
    return { leaf, intermediates: this.chain, notAfter: new Date(notAfter) };
  }
}
