/**
 * Test certificates: a P-256 trust anchor that issues mesh leaf certificates the way Linkerd's
 * identity does (SAN = the identity name, ServerAuth + ClientAuth). For tests only.
 */
import { x509 } from "../../proto/support/x509.ts";
import type { TlsCredentials } from "../core/cert_store.ts";

const ALG = { name: "ECDSA", namedCurve: "P-256", hash: "SHA-256" } as const;

export interface TestCa {
  certPem: string;
  /** Issues a leaf for `name`; validity defaults to [now-1m, now+24h]. */
  issue(name: string, opts?: { notBefore?: Date; notAfter?: Date }): Promise<TlsCredentials>;
}

function pem(label: string, der: ArrayBuffer): string {
  const b64 = btoa(String.fromCharCode(...new Uint8Array(der)));
  return `-----BEGIN ${label}-----\n${b64.match(/.{1,64}/g)!.join("\n")}\n-----END ${label}-----\n`;
}

function serial(): string {
  return Array.from(crypto.getRandomValues(new Uint8Array(8)), (b) => b.toString(16).padStart(2, "0")).join(
    "",
  )
    .replace(/^[89a-f]/, "1");
}

export async function createTestCa(name: string): Promise<TestCa> {
  const keys = await crypto.subtle.generateKey(ALG, true, ["sign", "verify"]) as CryptoKeyPair;
  const now = Date.now();
  const root = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: serial(),
    name: `CN=${name}`,
    notBefore: new Date(now - 3_600_000),
    notAfter: new Date(now + 30 * 86_400_000),
    signingAlgorithm: ALG,
    keys,
    extensions: [
      new x509.BasicConstraintsExtension(true, 1, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
    ],
  });
  const certPem = root.toString("pem") + "\n";
  return {
    certPem,
    async issue(leafName, opts = {}) {
      const leafKeys = await crypto.subtle.generateKey(ALG, true, ["sign", "verify"]) as CryptoKeyPair;
      const notAfter = opts.notAfter ?? new Date(Date.now() + 86_400_000);
      const leaf = await x509.X509CertificateGenerator.create({
        serialNumber: serial(),
        subject: `CN=${leafName}`,
        issuer: root.subject,
        notBefore: opts.notBefore ?? new Date(Date.now() - 60_000),
        notAfter,
        signingAlgorithm: ALG,
        publicKey: leafKeys.publicKey,
        signingKey: keys.privateKey,
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
        certChainPem: leaf.toString("pem") + "\n",
        trustAnchorsPem: certPem,
        expiresAt: notAfter,
      };
    },
  };
}
