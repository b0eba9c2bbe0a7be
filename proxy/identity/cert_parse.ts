/**
 * Reads the few X.509 fields the proxy checks in an issued chain and its trust anchors (RFC
 * 5280): names, validity, public key, DNS SANs, basic constraints, extended key usage and the
 * signature. Everything else is skipped unread. Built on the shared DER reader instead of a
 * general X.509 library, which cost every proxy 5–6 MiB (docs/proxy_memory.md).
 */
import { decodeDer, decodeOid, type DerNode, Tag } from "../../proto/support/der.ts";
import { decodePem, PemError } from "../../proto/support/pem.ts";

export class CertificateParseError extends Error {
  override name = "CertificateParseError";
}

export interface ParsedCertificate {
  der: Uint8Array;
  /** DER of the issuer and subject Names: chains link by exact bytes, as Linkerd's proxy does. */
  issuer: Uint8Array;
  subject: Uint8Array;
  /** The names as `CN=…, O=…` text, for messages. */
  issuerText: string;
  subjectText: string;
  notBefore: Date;
  notAfter: Date;
  /** DER SubjectPublicKeyInfo. */
  spki: Uint8Array;
  /** dNSName entries of the subjectAltName extension, in order. */
  dnsNames: string[];
  /** basicConstraints cA. */
  isCa: boolean;
  /** extKeyUsage purposes as dotted OIDs; undefined when the extension is absent. */
  extKeyUsage: string[] | undefined;
  /** The signed bytes (tbsCertificate) and how they were signed. */
  signed: Uint8Array;
  /** Hash for node:crypto's verify; undefined when the algorithm is not one the proxy checks. */
  signatureHash: "sha256" | "sha384" | "sha512" | undefined;
  signatureAlgorithm: string;
  /** The signature as the certificate carries it (DER `SEQUENCE { r, s }` for ECDSA). */
  signature: Uint8Array;
}

export const OID_SERVER_AUTH = "1.3.6.1.5.5.7.3.1";
const OID_SAN = "2.5.29.17";
const OID_BASIC_CONSTRAINTS = "2.5.29.19";
const OID_EXT_KEY_USAGE = "2.5.29.37";

const SIGNATURE_ALGORITHMS: Record<string, [name: string, hash: "sha256" | "sha384" | "sha512"]> = {
  "1.2.840.10045.4.3.2": ["ecdsa-with-SHA256", "sha256"],
  "1.2.840.10045.4.3.3": ["ecdsa-with-SHA384", "sha384"],
  "1.2.840.10045.4.3.4": ["ecdsa-with-SHA512", "sha512"],
  "1.2.840.113549.1.1.11": ["sha256WithRSAEncryption", "sha256"],
  "1.2.840.113549.1.1.12": ["sha384WithRSAEncryption", "sha384"],
  "1.2.840.113549.1.1.13": ["sha512WithRSAEncryption", "sha512"],
};

const ATTRIBUTE_NAMES: Record<string, string> = {
  "2.5.4.3": "CN",
  "2.5.4.5": "serialNumber",
  "2.5.4.6": "C",
  "2.5.4.7": "L",
  "2.5.4.8": "ST",
  "2.5.4.10": "O",
  "2.5.4.11": "OU",
  "0.9.2342.19200300.100.1.25": "DC",
  "1.2.840.113549.1.9.1": "E",
};

const utf8 = new TextDecoder("utf-8", { fatal: true });
const utf16be = new TextDecoder("utf-16be", { fatal: true });
const latin1 = new TextDecoder("latin1");

function child(parent: DerNode, i: number, tag: number, what: string): DerNode {
  const c = parent.children?.[i];
  if (!c) throw new CertificateParseError(`${what} is missing`);
  if (c.tag !== tag) {
    throw new CertificateParseError(`${what}: expected tag 0x${hex(tag)}, got 0x${hex(c.tag)}`);
  }
  return c;
}

function hex(n: number): string {
  return n.toString(16).padStart(2, "0");
}

function readTime(node: DerNode, what: string): Date {
  const s = latin1.decode(node.value);
  let m: RegExpExecArray | null;
  let year: number;
  if (node.tag === Tag.utcTime && (m = /^(\d\d)(\d\d)(\d\d)(\d\d)(\d\d)(\d\d)Z$/.exec(s))) {
    const yy = Number(m[1]);
    year = yy < 50 ? 2000 + yy : 1900 + yy; // RFC 5280 4.1.2.5.1
  } else if (node.tag === Tag.generalizedTime && (m = /^(\d{4})(\d\d)(\d\d)(\d\d)(\d\d)(\d\d)Z$/.exec(s))) {
    year = Number(m[1]);
  } else {
    throw new CertificateParseError(`${what} is not a UTCTime or GeneralizedTime in DER form`);
  }
  const [mo, d, h, mi, sec] = m.slice(2).map(Number);
  const t = new Date(0);
  t.setUTCFullYear(year, mo - 1, d); // not Date.UTC, which maps years 0–99 to 1900–1999
  t.setUTCHours(h, mi, sec);
  // Out-of-range fields roll over (month 13, second 61); a real date comes back unchanged.
  if (
    t.getUTCMonth() !== mo - 1 || t.getUTCDate() !== d || t.getUTCHours() !== h || t.getUTCMinutes() !== mi ||
    t.getUTCSeconds() !== sec
  ) {
    throw new CertificateParseError(`${what} "${s}" is not a valid date`);
  }
  return t;
}

function readString(node: DerNode): string {
  switch (node.tag) {
    case Tag.utf8String:
      return utf8.decode(node.value);
    case 0x1e: // BMPString
      return utf16be.decode(node.value);
    case Tag.printableString:
    case Tag.ia5String:
    case 0x14: // TeletexString
      return latin1.decode(node.value);
    default:
      return "#" + [...node.der].map(hex).join("");
  }
}

function nameText(name: DerNode, what: string): string {
  const rdns: string[] = [];
  for (const rdn of name.children ?? []) {
    if (rdn.tag !== Tag.set) throw new CertificateParseError(`${what}: a relative name is not a SET`);
    const parts: string[] = [];
    for (const atv of rdn.children ?? []) {
      if (atv.tag !== Tag.sequence) {
        throw new CertificateParseError(`${what}: an attribute is not a SEQUENCE`);
      }
      const type = child(atv, 0, Tag.oid, `${what} attribute type`);
      const value = atv.children?.[1];
      if (!value) throw new CertificateParseError(`${what}: an attribute has no value`);
      const oid = decodeOid(type.value);
      parts.push(`${ATTRIBUTE_NAMES[oid] ?? oid}=${readString(value)}`);
    }
    rdns.push(parts.join("+"));
  }
  return rdns.join(", ");
}

interface Extensions {
  dnsNames: string[];
  isCa: boolean;
  extKeyUsage: string[] | undefined;
}

function readExtensions(list: DerNode): Extensions {
  const out: Extensions = { dnsNames: [], isCa: false, extKeyUsage: undefined };
  const seen = new Set<string>();
  for (const [i, ext] of (list.children ?? []).entries()) {
    const what = `extension #${i + 1}`;
    if (ext.tag !== Tag.sequence) throw new CertificateParseError(`${what} is not a SEQUENCE`);
    const id = decodeOid(child(ext, 0, Tag.oid, `${what} id`).value);
    if (seen.has(id)) throw new CertificateParseError(`extension ${id} appears twice`);
    seen.add(id);
    const hasCritical = ext.children?.[1]?.tag === Tag.boolean;
    const value = child(ext, hasCritical ? 2 : 1, Tag.octetString, `extension ${id} value`).value;
    if (id === OID_SAN) {
      const names = decodeDer(value);
      if (names.tag !== Tag.sequence) throw new CertificateParseError("subjectAltName is not a SEQUENCE");
      for (const gn of names.children ?? []) {
        if (gn.tag === 0x82) out.dnsNames.push(latin1.decode(gn.value)); // [2] dNSName, IA5String
      }
    } else if (id === OID_BASIC_CONSTRAINTS) {
      const bc = decodeDer(value);
      if (bc.tag !== Tag.sequence) throw new CertificateParseError("basicConstraints is not a SEQUENCE");
      const ca = bc.children?.[0];
      out.isCa = ca?.tag === Tag.boolean && ca.value.length === 1 && ca.value[0] !== 0;
    } else if (id === OID_EXT_KEY_USAGE) {
      const eku = decodeDer(value);
      if (eku.tag !== Tag.sequence) throw new CertificateParseError("extKeyUsage is not a SEQUENCE");
      out.extKeyUsage = (eku.children ?? []).map((p) => {
        if (p.tag !== Tag.oid) throw new CertificateParseError("extKeyUsage holds a non-OID");
        return decodeOid(p.value);
      });
    }
  }
  return out;
}

/** Parses one DER certificate; throws CertificateParseError naming the first problem. */
export function parseCertificate(input: Uint8Array): ParsedCertificate {
  // A plain view of the same bytes (gRPC hands out Buffers), so every field is a plain Uint8Array.
  const der = new Uint8Array(input.buffer, input.byteOffset, input.byteLength);
  try {
    const cert = decodeDer(der);
    if (cert.tag !== Tag.sequence) throw new CertificateParseError("certificate is not a SEQUENCE");
    if (cert.children?.length !== 3) {
      throw new CertificateParseError(`certificate has ${cert.children?.length ?? 0} fields, want 3`);
    }
    const tbs = child(cert, 0, Tag.sequence, "tbsCertificate");
    const sigAlg = child(cert, 1, Tag.sequence, "signatureAlgorithm");
    const sigBits = child(cert, 2, Tag.bitString, "signatureValue");
    if (sigBits.value.length < 2 || sigBits.value[0] !== 0) {
      throw new CertificateParseError("signatureValue is empty or has unused bits");
    }
    const sigOid = decodeOid(child(sigAlg, 0, Tag.oid, "signature algorithm id").value);

    // tbsCertificate: [0] version (optional), serial, signature, issuer, validity, subject, spki,
    // then optional [1] [2] unique ids and [3] extensions.
    const f = tbs.children ?? [];
    const v = f[0]?.tag === 0xa0 ? 1 : 0;
    child(tbs, v, Tag.integer, "serialNumber");
    child(tbs, v + 1, Tag.sequence, "tbsCertificate signature");
    const issuer = child(tbs, v + 2, Tag.sequence, "issuer");
    const validity = child(tbs, v + 3, Tag.sequence, "validity");
    const subject = child(tbs, v + 4, Tag.sequence, "subject");
    const spki = child(tbs, v + 5, Tag.sequence, "subjectPublicKeyInfo");
    const extField = f.slice(v + 6).find((n) => n.tag === 0xa3);
    const extList = extField ? child(extField, 0, Tag.sequence, "extensions") : undefined;
    const notBefore = validity.children?.[0], notAfter = validity.children?.[1];
    if (!notBefore || !notAfter) throw new CertificateParseError("validity needs notBefore and notAfter");

    const alg = SIGNATURE_ALGORITHMS[sigOid];
    return {
      der,
      issuer: issuer.der,
      subject: subject.der,
      issuerText: nameText(issuer, "issuer"),
      subjectText: nameText(subject, "subject"),
      notBefore: readTime(notBefore, "notBefore"),
      notAfter: readTime(notAfter, "notAfter"),
      spki: spki.der,
      ...(extList ? readExtensions(extList) : { dnsNames: [], isCa: false, extKeyUsage: undefined }),
      signed: tbs.der,
      signatureHash: alg?.[1],
      signatureAlgorithm: alg?.[0] ?? sigOid,
      signature: sigBits.value.subarray(1),
    };
  } catch (e) {
    if (e instanceof CertificateParseError) throw e;
    // DerError, or TypeError from a string that is not valid UTF-8/UTF-16.
    throw new CertificateParseError(e instanceof Error ? e.message : String(e));
  }
}

/** Parses a PEM bundle of certificates; throws naming `what` when there is no usable one. */
export function parseCertificateBundle(pem: string, what: string): ParsedCertificate[] {
  let ders: Uint8Array[];
  try {
    ders = decodePem(pem, "CERTIFICATE", what);
  } catch (e) {
    if (e instanceof PemError) throw new CertificateParseError(e.message);
    throw e;
  }
  return ders.map((der, i) => {
    try {
      return parseCertificate(der);
    } catch (e) {
      throw new CertificateParseError(
        `${what}: certificate #${i + 1} does not parse: ${(e as Error).message}`,
      );
    }
  });
}
