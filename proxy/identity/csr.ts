/**
 * Builds the proxy's PKCS#10 certificate signing request (RFC 2986): subject CN and a single DNS
 * subjectAltName, both the local identity name, for an ECDSA P-256 key, signed with
 * ECDSA-SHA256 through WebCrypto.
 */
import { ascii, ecdsaRawToDer, oid, Tag, tlv } from "../../proto/support/der.ts";

const OID_CN = oid("2.5.4.3");
const OID_SAN = oid("2.5.29.17");
const OID_EXTENSION_REQUEST = oid("1.2.840.113549.1.9.14");
const ECDSA_SHA256 = tlv(Tag.sequence, oid("1.2.840.10045.4.3.2"));
const VERSION_1 = tlv(Tag.integer, new Uint8Array([0]));
const SIGN = { name: "ECDSA", hash: "SHA-256" };

/** Characters PrintableString allows (X.680); identity names always fit in it. */
const PRINTABLE = /^[A-Za-z0-9 '()+,\-./:=?]*$/;

/** Throws unless `name` can be a dNSName (IA5String: ASCII). */
function checkName(name: string): void {
  if (name.length === 0) throw new Error("CSR: the local identity name is empty");
  if (!/^[\x21-\x7e]+$/.test(name)) {
    throw new Error(`CSR: the local identity name ${JSON.stringify(name)} is not printable ASCII`);
  }
}

/** DER of a CSR for `name`, signed with `keys` (ECDSA P-256). */
export async function buildCsr(name: string, keys: CryptoKeyPair): Promise<Uint8Array> {
  checkName(name);
  const spki = new Uint8Array(await crypto.subtle.exportKey("spki", keys.publicKey));
  const cn = tlv(PRINTABLE.test(name) ? Tag.printableString : Tag.utf8String, ascii(name));
  const subject = tlv(Tag.sequence, tlv(Tag.set, tlv(Tag.sequence, OID_CN, cn)));
  const san = tlv(Tag.sequence, OID_SAN, tlv(Tag.octetString, tlv(Tag.sequence, tlv(0x82, ascii(name)))));
  const attributes = tlv(
    0xa0,
    tlv(Tag.sequence, OID_EXTENSION_REQUEST, tlv(Tag.set, tlv(Tag.sequence, san))),
  );
  const info = tlv(Tag.sequence, VERSION_1, subject, spki, attributes);
  const raw = new Uint8Array(await crypto.subtle.sign(SIGN, keys.privateKey, info));
  return tlv(Tag.sequence, info, ECDSA_SHA256, tlv(Tag.bitString, new Uint8Array([0]), ecdsaRawToDer(raw)));
}
