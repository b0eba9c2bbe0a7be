/**
 * The certificates a rotation moves around, named the same way everywhere (metrics, command output, check
 * output): by the SHA-256 of the DER, lowercase hex without colons. Pure functions over PEM text.
 */
import { x509 } from "../../proto/support/x509.ts";
import { parseCertificates } from "../../control/identity/pem.ts";
import { P256 } from "../../control/certs/pki.ts";
import { importSigningKey } from "../../control/identity/pem.ts";

export interface Cert {
  fingerprint: string;
  subject: string;
  notBefore: Date;
  notAfter: Date;
  pem: string;
  cert: x509.X509Certificate;
}

function hex(b: ArrayBuffer): string {
  return Array.from(new Uint8Array(b), (v) => v.toString(16).padStart(2, "0")).join("");
}

/** The contract's fingerprint: SHA-256 of the DER, lowercase hex. */
export async function fingerprintOf(cert: x509.X509Certificate): Promise<string> {
  return hex(await crypto.subtle.digest("SHA-256", cert.rawData));
}

/** The first 12 hex digits, for one-line output (the full value is printed where it is first named). */
export function short(fp: string): string {
  return fp.slice(0, 12);
}

function commonName(c: x509.X509Certificate): string {
  return /CN=([^,]+)/.exec(c.subject)?.[1] ?? c.subject;
}

/** Every certificate of a PEM text, in order; throws naming `what` when one does not parse. */
export async function parseCerts(pem: string, what: string): Promise<Cert[]> {
  const certs = parseCertificates(pem, what);
  return await Promise.all(certs.map(async (cert) => ({
    fingerprint: await fingerprintOf(cert),
    subject: commonName(cert),
    notBefore: cert.notBefore,
    notAfter: cert.notAfter,
    pem: cert.toString("pem") + "\n",
    cert,
  })));
}

/** A bundle as written to `ca-bundle.crt`: the PEM blocks one after the other. */
export function joinBundle(certs: Cert[]): string {
  return certs.map((c) => c.pem).join("");
}

/** Whether `child` names `parent` as its issuer and carries a valid signature by its key. */
export async function signedBy(child: Cert, parent: Cert): Promise<boolean> {
  if (child.cert.issuer !== parent.cert.subject) return false;
  return await child.cert.verify({ publicKey: parent.cert.publicKey, signatureOnly: true }).catch(() =>
    false
  );
}

/** The anchor among `anchors` that signed `issuer`, if any. */
export async function anchorOf(issuer: Cert, anchors: Cert[]): Promise<Cert | undefined> {
  for (const a of anchors) if (await signedBy(issuer, a)) return a;
  return undefined;
}

export function isCa(c: Cert): boolean {
  return c.cert.getExtension(x509.BasicConstraintsExtension)?.ca === true;
}

/** Whether `keyPem` is the private key of `c` (a signature made with it verifies with the certificate's key). */
export async function keyMatches(c: Cert, keyPem: string, what: string): Promise<boolean> {
  const key = await importSigningKey(keyPem, what);
  const probe = crypto.getRandomValues(new Uint8Array(32));
  const sig = await crypto.subtle.sign(P256, key, probe);
  const pub = await c.cert.publicKey.export(P256, ["verify"]);
  return await crypto.subtle.verify(P256, pub, sig, probe);
}

/** `<short fingerprint> (<CN>, expires <date>)`. */
export function describeCert(c: Cert): string {
  return `${short(c.fingerprint)} (${c.subject}, expires ${c.notAfter.toISOString().slice(0, 10)})`;
}
