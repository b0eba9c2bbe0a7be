/**
 * The proxy's private key and CSR, generated in memory at start (never written to disk) and
 * reused for every renewal: the key is what peers pin via the certificate, the CSR is re-signed
 * only when the key changes.
 */
import { toPem } from "../../proto/support/pem.ts";
import { buildCsr } from "./csr.ts";

const EC = { name: "ECDSA", namedCurve: "P-256", hash: "SHA-256" };

export interface LocalKey {
  /** PKCS#8 PEM, for the TLS layer. */
  keyPem: string;
  /** DER SubjectPublicKeyInfo, to check that a certificate carries this key. */
  spki: Uint8Array;
  /** DER PKCS#10 with CN and a single DNS SAN equal to the local name. */
  csr: Uint8Array;
}

export async function generateLocalKey(localName: string): Promise<LocalKey> {
  const keys = await crypto.subtle.generateKey(EC, true, ["sign", "verify"]) as CryptoKeyPair;
  const pkcs8 = new Uint8Array(await crypto.subtle.exportKey("pkcs8", keys.privateKey));
  return {
    keyPem: toPem(pkcs8, "PRIVATE KEY"),
    spki: new Uint8Array(await crypto.subtle.exportKey("spki", keys.publicKey)),
    csr: await buildCsr(localName, keys),
  };
}
