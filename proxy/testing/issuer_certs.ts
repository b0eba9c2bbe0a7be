/**
 * Test certificates with the mesh's real shape: a trust anchor (pathlen 1) signs issuers (pathlen 0),
 * each issuer signs leaves, and a leaf's chain is leaf then its issuer, as identity hands it out.
 * For tests only.
 */
import { x509 } from "../../proto/support/x509.ts";
import type { TlsCredentials } from "../core/cert_store.ts";

const ALG = { name: "ECDSA", namedCurve: "P-256", hash: "SHA-256" } as const;

function pem(label: string, der: ArrayBuffer): string {
  const b64 = btoa(String.fromCharCode(...new Uint8Array(der)));
  return `-----BEGIN ${label}-----\n${b64.match(/.{1,64}/g)!.join("\n")}\n-----END ${label}-----\n`;
}

function serial(): string {
  const hex = Array.from(crypto.getRandomValues(new Uint8Array(8)), (b) => b.toString(16).padStart(2, "0"));
  return hex.join("").replace(/^[89a-f]/, "1");
}

function genKeys(): Promise<CryptoKeyPair> {
  return crypto.subtle.generateKey(ALG, true, ["sign", "verify"]) as Promise<CryptoKeyPair>;
}

export interface TestIssuer {
  /** The issuer certificate, PEM. */
  certPem: string;
  /** A leaf for `name`, chain = leaf + this issuer; trust anchors = the anchor that signed the issuer. */
  issue(name: string, opts?: { notBefore?: Date; notAfter?: Date }): Promise<TlsCredentials>;
}

export interface TestAnchor {
  certPem: string;
  /** An intermediate CA (the mesh's issuer) under this anchor. */
  issuer(name: string, opts?: { notBefore?: Date; notAfter?: Date }): Promise<TestIssuer>;
}

export async function createTestAnchor(name: string, opts: { notAfter?: Date } = {}): Promise<TestAnchor> {
  const keys = await genKeys();
  const now = Date.now();
  const root = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: serial(),
    name: `CN=${name}`,
    notBefore: new Date(now - 3_600_000),
    notAfter: opts.notAfter ?? new Date(now + 30 * 86_400_000),
    signingAlgorithm: ALG,
    keys,
    extensions: [
      new x509.BasicConstraintsExtension(true, 1, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
    ],
  });
  const anchorPem = root.toString("pem") + "\n";
  return {
    certPem: anchorPem,
    async issuer(issuerName, iopts = {}) {
      const ikeys = await genKeys();
      const cert = await x509.X509CertificateGenerator.create({
        serialNumber: serial(),
        subject: `CN=${issuerName}`,
        issuer: root.subject,
        notBefore: iopts.notBefore ?? new Date(Date.now() - 3_600_000),
        notAfter: iopts.notAfter ?? new Date(Date.now() + 7 * 86_400_000),
        signingAlgorithm: ALG,
        publicKey: ikeys.publicKey,
        signingKey: keys.privateKey,
        extensions: [
          new x509.BasicConstraintsExtension(true, 0, true),
          new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
        ],
      });
      const issuerPem = cert.toString("pem") + "\n";
      return {
        certPem: issuerPem,
        async issue(leafName, lopts = {}) {
          const leafKeys = await genKeys();
          const notAfter = lopts.notAfter ?? new Date(Date.now() + 86_400_000);
          const leaf = await x509.X509CertificateGenerator.create({
            serialNumber: serial(),
            subject: `CN=${leafName}`,
            issuer: cert.subject,
            notBefore: lopts.notBefore ?? new Date(Date.now() - 60_000),
            notAfter,
            signingAlgorithm: ALG,
            publicKey: leafKeys.publicKey,
            signingKey: ikeys.privateKey,
            extensions: [
              new x509.BasicConstraintsExtension(false, undefined, true),
              new x509.KeyUsagesExtension(
                x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment,
                true,
              ),
              new x509.ExtendedKeyUsageExtension([
                x509.ExtendedKeyUsage.serverAuth,
                x509.ExtendedKeyUsage.clientAuth,
              ]),
              new x509.SubjectAlternativeNameExtension([{ type: "dns", value: leafName }]),
            ],
          });
          return {
            localName: leafName,
            keyPem: pem("PRIVATE KEY", await crypto.subtle.exportKey("pkcs8", leafKeys.privateKey)),
            certChainPem: leaf.toString("pem") + "\n" + issuerPem,
            trustAnchorsPem: anchorPem,
            expiresAt: notAfter,
          };
        },
      };
    },
  };
}
