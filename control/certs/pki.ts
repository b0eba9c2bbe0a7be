/**
 * Creates the mesh's CA material with @peculiar/x509: a self-signed trust anchor (root) and an
 * issuer (intermediate) signed by it, both ECDSA P-256, as Linkerd's `linkerd check` expects; and
 * the pieces every certificate the project makes shares (key pair, serial number, key PEM), which
 * deploy's webhook certificates use too.
 */
import { x509 } from "../../proto/support/x509.ts";
import { toPem } from "../identity/pem.ts";

/** The key and signature algorithm of every certificate: ECDSA P-256 with SHA-256. */
export const P256 = { name: "ECDSA", namedCurve: "P-256", hash: "SHA-256" };

export interface CaMaterial {
  certPem: string;
  /** PKCS#8 PEM. */
  keyPem: string;
  cert: x509.X509Certificate;
}

export interface CreateOptions {
  commonName: string;
  lifetimeMs: number;
  now: number;
  /** Back-dates notBefore so nodes with a slightly slow clock accept the certificate. */
  skewMs?: number;
}

export interface SelfSignedCaOptions extends CreateOptions {
  /** How many intermediate CAs may follow this one (1 for the trust anchor, 0 for a CA signing leaves). */
  pathLength: number;
}

/** 16 random bytes as hex, positive and without a leading zero byte, as RFC 5280 asks of a serial. */
export function serialNumber(): string {
  const b = crypto.getRandomValues(new Uint8Array(16));
  b[0] = (b[0] & 0x7f) | 0x40;
  return [...b].map((v) => v.toString(16).padStart(2, "0")).join("");
}

/** A new extractable P-256 signing key pair. */
export async function generateKeys(): Promise<CryptoKeyPair> {
  return await crypto.subtle.generateKey(P256, true, ["sign", "verify"]) as CryptoKeyPair;
}

/** The private key as PKCS#8 PEM. */
export async function privateKeyPem(keys: CryptoKeyPair): Promise<string> {
  return toPem(new Uint8Array(await crypto.subtle.exportKey("pkcs8", keys.privateKey)), "PRIVATE KEY");
}

function caExtensions(pathLength: number | undefined): x509.Extension[] {
  return [
    new x509.BasicConstraintsExtension(true, pathLength, true),
    new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
  ];
}

export async function createTrustAnchor(opts: CreateOptions): Promise<CaMaterial> {
  return await createSelfSignedCa({ ...opts, pathLength: 1 });
}

export async function createSelfSignedCa(opts: SelfSignedCaOptions): Promise<CaMaterial> {
  const keys = await generateKeys();
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: serialNumber(),
    name: `CN=${opts.commonName}`,
    notBefore: new Date(opts.now - (opts.skewMs ?? 0)),
    notAfter: new Date(opts.now + opts.lifetimeMs),
    signingAlgorithm: P256,
    keys,
    extensions: [
      ...caExtensions(opts.pathLength),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  });
  return { certPem: cert.toString("pem") + "\n", keyPem: await privateKeyPem(keys), cert };
}

/** Creates an issuer signed by `anchor` (whose key must be given in `anchor.keyPem`). */
export async function createIssuer(
  anchor: { certPem: string; keyPem: string },
  opts: CreateOptions,
): Promise<CaMaterial> {
  const anchorCert = new x509.X509Certificate(anchor.certPem);
  const anchorKey = await importPkcs8(anchor.keyPem);
  const keys = await generateKeys();
  const notAfter = Math.min(opts.now + opts.lifetimeMs, anchorCert.notAfter.getTime());
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: serialNumber(),
    subject: `CN=${opts.commonName}`,
    issuer: anchorCert.subject,
    notBefore: new Date(opts.now - (opts.skewMs ?? 0)),
    notAfter: new Date(notAfter),
    signingAlgorithm: P256,
    publicKey: keys.publicKey,
    signingKey: anchorKey,
    extensions: [
      ...caExtensions(0),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
      await x509.AuthorityKeyIdentifierExtension.create(anchorCert),
    ],
  });
  return { certPem: cert.toString("pem") + "\n", keyPem: await privateKeyPem(keys), cert };
}

async function importPkcs8(pem: string): Promise<CryptoKey> {
  const der = x509.PemConverter.decodeFirst(pem);
  return await crypto.subtle.importKey("pkcs8", der, { name: "ECDSA", namedCurve: "P-256" }, false, ["sign"]);
}
