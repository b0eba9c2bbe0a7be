/**
 * Reads a DER PKCS#10 certificate signing request and verifies its self-signature. Only what
 * issuance needs is extracted; the subject and public key are kept as DER slices so the leaf
 * carries them byte for byte.
 */
import { createHash, createPublicKey, verify } from "node:crypto";
import {
  bytesEqual,
  children,
  decodeAscii,
  DerError,
  expectTlv,
  oid,
  readTlv,
  Tag,
  type Tlv,
} from "../../proto/support/der.ts";

export class CsrError extends Error {
  override name = "CsrError";
}

export interface ParsedCsr {
  /** DER of the subject Name. */
  subject: Uint8Array;
  /** The subject's common name, or undefined when it has none. */
  commonName: string | undefined;
  dnsNames: string[];
  ipAddresses: number;
  emailAddresses: number;
  uris: number;
  /** SAN entries of any other kind (directory names, other names, registered IDs). */
  otherNames: number;
  /** DER SubjectPublicKeyInfo, an ECDSA P-256 key. */
  spki: Uint8Array;
}

const OID_CN = oid("2.5.4.3");
const OID_EC_PUBLIC_KEY = oid("1.2.840.10045.2.1");
const OID_P256 = oid("1.2.840.10045.3.1.7");
const OID_EXTENSION_REQUEST = oid("1.2.840.113549.1.9.14");
const OID_SAN = oid("2.5.29.17");

const SIGNATURE_HASHES: [Uint8Array, string][] = [
  [oid("1.2.840.10045.4.3.2"), "sha256"],
  [oid("1.2.840.10045.4.3.3"), "sha384"],
  [oid("1.2.840.10045.4.3.4"), "sha512"],
];

/** Names of public key algorithms a CSR may plausibly carry, for error messages. */
const KEY_ALGORITHMS: [Uint8Array, string][] = [
  [oid("1.2.840.113549.1.1.1"), "RSA"],
  [oid("1.2.840.113549.1.1.10"), "RSA-PSS"],
  [oid("1.3.101.112"), "Ed25519"],
  [oid("1.3.101.113"), "Ed448"],
];
const CURVES: [Uint8Array, string][] = [
  [oid("1.3.132.0.34"), "P-384"],
  [oid("1.3.132.0.35"), "P-521"],
];

const utf8 = new TextDecoder("utf-8", { fatal: true });

function isOid(buf: Uint8Array, t: Tlv, want: Uint8Array): boolean {
  return bytesEqual(buf, t.start, t.end, want);
}

function nameOf(buf: Uint8Array, t: Tlv, table: [Uint8Array, string][]): string {
  for (const [o, n] of table) if (isOid(buf, t, o)) return n;
  return "an unsupported algorithm";
}

function readCommonName(buf: Uint8Array, name: Tlv): string | undefined {
  let cn: string | undefined;
  for (const rdn of children(buf, name)) {
    if (rdn.tag !== Tag.set) throw new DerError("subject: RDN is not a SET");
    for (const atv of children(buf, rdn)) {
      if (atv.tag !== Tag.sequence) throw new DerError("subject: attribute is not a SEQUENCE");
      const type = expectTlv(buf, atv.valueStart, atv.end, Tag.oid, "subject attribute type");
      if (!isOid(buf, type, OID_CN)) continue;
      const value = readTlv(buf, type.end, atv.end);
      if (cn !== undefined) throw new CsrError("CSR subject has more than one CN");
      cn = value.tag === Tag.utf8String
        ? utf8.decode(buf.subarray(value.valueStart, value.end))
        : decodeAscii(buf, value.valueStart, value.end);
    }
  }
  return cn;
}

function readSans(buf: Uint8Array, attrs: Tlv, out: ParsedCsr): void {
  for (const attr of children(buf, attrs)) {
    const type = expectTlv(buf, attr.valueStart, attr.end, Tag.oid, "CSR attribute type");
    if (!isOid(buf, type, OID_EXTENSION_REQUEST)) continue;
    const values = expectTlv(buf, type.end, attr.end, Tag.set, "extensionRequest values");
    for (const exts of children(buf, values)) {
      if (exts.tag !== Tag.sequence) throw new DerError("extensionRequest: Extensions is not a SEQUENCE");
      for (const ext of children(buf, exts)) {
        const extId = expectTlv(buf, ext.valueStart, ext.end, Tag.oid, "extension id");
        if (!isOid(buf, extId, OID_SAN)) continue;
        let p = extId.end;
        let v = readTlv(buf, p, ext.end);
        if (v.tag === Tag.boolean) {
          p = v.end;
          v = readTlv(buf, p, ext.end);
        }
        if (v.tag !== Tag.octetString) throw new DerError("subjectAltName value is not an OCTET STRING");
        const names = expectTlv(buf, v.valueStart, v.end, Tag.sequence, "subjectAltName");
        for (const gn of children(buf, names)) {
          switch (gn.tag) {
            case 0x82:
              out.dnsNames.push(decodeAscii(buf, gn.valueStart, gn.end));
              break;
            case 0x81:
              out.emailAddresses++;
              break;
            case 0x86:
              out.uris++;
              break;
            case 0x87:
              out.ipAddresses++;
              break;
            default:
              out.otherNames++;
          }
        }
      }
    }
  }
}

/**
 * Remembers CSRs whose self-signature has verified, by SHA-256 of their bytes: a proxy sends the
 * same CSR on every renewal, and verifying costs as much as signing the leaf.
 */
export class VerifiedCsrCache {
  #seen = new Set<string>();
  constructor(readonly capacity = 10_000) {}

  static key(der: Uint8Array): string {
    return createHash("sha256").update(der).digest("base64");
  }

  has(key: string): boolean {
    return this.#seen.has(key);
  }

  add(key: string): void {
    if (this.#seen.size >= this.capacity) {
      // Insertion order: drop the oldest entry.
      const oldest = this.#seen.values().next().value;
      if (oldest !== undefined) this.#seen.delete(oldest);
    }
    this.#seen.add(key);
  }

  get size(): number {
    return this.#seen.size;
  }
}

/**
 * Parses `der` and verifies its self-signature (skipped when `cache` has already seen these
 * exact bytes verify); throws CsrError naming the first problem.
 */
export function parseCsr(der: Uint8Array, cache?: VerifiedCsrCache): ParsedCsr {
  return readCsr(der).verify(cache);
}

/**
 * A CSR whose structure and names have been read but whose self-signature is not checked yet:
 * reading costs microseconds, verifying an ECDSA signature about as much as signing a leaf, so
 * Certify checks names (and the token) first and verifies only for callers that got that far.
 */
export interface UnverifiedCsr {
  readonly fields: ParsedCsr;
  /** Verifies the self-signature (or finds it in `cache`); throws CsrError. */
  verify(cache?: VerifiedCsrCache): ParsedCsr;
}

/** Reads `der` without verifying its signature; throws CsrError naming the first problem. */
export function readCsr(der: Uint8Array): UnverifiedCsr {
  let csr: ParsedCsr;
  let hash: string;
  let signed: Uint8Array;
  let signature: Uint8Array;
  try {
    const outer = expectTlv(der, 0, der.length, Tag.sequence, "CertificationRequest");
    if (outer.end !== der.length) throw new DerError(`${der.length - outer.end} trailing bytes`);
    const info = expectTlv(der, outer.valueStart, outer.end, Tag.sequence, "CertificationRequestInfo");
    const version = expectTlv(der, info.valueStart, info.end, Tag.integer, "version");
    if (version.end - version.valueStart !== 1 || der[version.valueStart] !== 0) {
      throw new DerError("version is not 0 (v1)");
    }
    const subject = expectTlv(der, version.end, info.end, Tag.sequence, "subject");
    const spki = expectTlv(der, subject.end, info.end, Tag.sequence, "subjectPKInfo");
    const attrs = spki.end < info.end ? expectTlv(der, spki.end, info.end, 0xa0, "attributes") : undefined;
    if (attrs && attrs.end !== info.end) throw new DerError("extra fields after the attributes");
    const sigAlg = expectTlv(der, info.end, outer.end, Tag.sequence, "signatureAlgorithm");
    const sig = expectTlv(der, sigAlg.end, outer.end, Tag.bitString, "signature");
    if (sig.end !== outer.end) throw new DerError("extra fields after the signature");

    csr = {
      subject: der.subarray(subject.start, subject.end),
      commonName: readCommonName(der, subject),
      dnsNames: [],
      ipAddresses: 0,
      emailAddresses: 0,
      uris: 0,
      otherNames: 0,
      spki: der.subarray(spki.start, spki.end),
    };
    if (attrs) readSans(der, attrs, csr);

    const keyAlg = expectTlv(der, spki.valueStart, spki.end, Tag.sequence, "public key algorithm");
    const keyOid = expectTlv(der, keyAlg.valueStart, keyAlg.end, Tag.oid, "public key algorithm id");
    if (!isOid(der, keyOid, OID_EC_PUBLIC_KEY)) {
      throw new CsrError(`CSR key is ${nameOf(der, keyOid, KEY_ALGORITHMS)}, want ECDSA P-256`);
    }
    const curve = readTlv(der, keyOid.end, keyAlg.end);
    if (curve.tag !== Tag.oid || !isOid(der, curve, OID_P256)) {
      const curveName = curve.tag === Tag.oid ? nameOf(der, curve, CURVES) : "explicit parameters";
      throw new CsrError(`CSR key is ECDSA on ${curveName}, want ECDSA P-256`);
    }

    const sigOid = expectTlv(der, sigAlg.valueStart, sigAlg.end, Tag.oid, "signature algorithm id");
    const h = SIGNATURE_HASHES.find(([o]) => isOid(der, sigOid, o));
    if (!h) throw new CsrError("CSR signature algorithm is not ECDSA with SHA-256/384/512");
    hash = h[1];
    if (sig.end - sig.valueStart < 2 || der[sig.valueStart] !== 0) {
      throw new DerError("signature BIT STRING has unused bits");
    }
    signature = der.subarray(sig.valueStart + 1, sig.end);
    signed = der.subarray(info.start, info.end);
  } catch (e) {
    if (e instanceof CsrError) throw e;
    if (e instanceof DerError || e instanceof TypeError || e instanceof RangeError) {
      throw new CsrError(`CSR is not valid DER PKCS#10: ${e.message}`);
    }
    throw e;
  }
  const fields = csr;
  return {
    fields,
    verify: (cache) => verifySignature(der, fields, hash, signed, signature, cache),
  };
}

function verifySignature(
  der: Uint8Array,
  csr: ParsedCsr,
  hash: string,
  signed: Uint8Array,
  signature: Uint8Array,
  cache: VerifiedCsrCache | undefined,
): ParsedCsr {
  const cacheKey = cache ? VerifiedCsrCache.key(der) : undefined;
  if (cacheKey !== undefined && cache!.has(cacheKey)) return csr;
  let key;
  try {
    key = createPublicKey({ key: csr.spki as Buffer, format: "der", type: "spki" });
  } catch {
    throw new CsrError("CSR public key is not a valid ECDSA P-256 key");
  }
  let ok = false;
  try {
    // node:crypto takes the DER signature as is; sync, but cheaper than WebCrypto's verify here.
    ok = verify(hash, signed, key, signature);
  } catch {
    ok = false;
  }
  if (!ok) throw new CsrError("CSR signature does not verify with its public key");
  if (cacheKey !== undefined) cache!.add(cacheKey);
  return csr;
}
