/**
 * How a CA certificate is named in metrics, logs and check output during a rotation (issue 21's
 * contract): the SHA-256 of its DER as lowercase hex without colons, and its subject CN.
 */
import { x509 } from "../../proto/support/x509.ts";
import { parseCertificates } from "./pem.ts";

export interface CertInfo {
  fingerprint: string;
  /** The subject CN (the whole subject when it has no CN). */
  subject: string;
  notBefore: Date;
  notAfter: Date;
  cert: x509.X509Certificate;
}

function hex(bytes: ArrayBuffer): string {
  return Array.from(new Uint8Array(bytes), (b) => b.toString(16).padStart(2, "0")).join("");
}

export async function sha256Fingerprint(cert: x509.X509Certificate): Promise<string> {
  return hex(await crypto.subtle.digest("SHA-256", cert.rawData));
}

export function commonName(cert: x509.X509Certificate): string {
  return /(?:^|,\s*)CN=([^,]+)/.exec(cert.subject)?.[1] ?? cert.subject;
}

export async function certInfo(cert: x509.X509Certificate): Promise<CertInfo> {
  return {
    fingerprint: await sha256Fingerprint(cert),
    subject: commonName(cert),
    notBefore: cert.notBefore,
    notAfter: cert.notAfter,
    cert,
  };
}

/** Every certificate of a PEM text, named; throws a PemError naming `what` when one does not parse. */
export async function certInfos(pem: string, what: string): Promise<CertInfo[]> {
  return await Promise.all(parseCertificates(pem, what).map(certInfo));
}

/** The first 12 hex digits, for one-line output. */
export function shortFingerprint(fp: string): string {
  return fp.slice(0, 12);
}

/** PEM of one certificate, ending in a newline. */
export function certPem(cert: x509.X509Certificate): string {
  return cert.toString("pem").trim() + "\n";
}
