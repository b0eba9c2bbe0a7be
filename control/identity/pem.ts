/** PEM helpers for certificates and private keys (issuer material, trust anchor bundles). */
import { createPrivateKey } from "node:crypto";
import { x509 } from "../../proto/support/x509.ts";

export class PemError extends Error {
  override name = "PemError";
}

/** Every CERTIFICATE block of `pem`, parsed; throws PemError naming `what` when there is none. */
export function parseCertificates(pem: string, what: string): x509.X509Certificate[] {
  const blocks = [...pem.matchAll(/-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g)];
  if (blocks.length === 0) throw new PemError(`${what}: no PEM CERTIFICATE block found`);
  return blocks.map((m, i) => {
    try {
      return new x509.X509Certificate(m[0]);
    } catch (e) {
      throw new PemError(`${what}: certificate #${i + 1} does not parse: ${(e as Error).message}`);
    }
  });
}

/**
 * Imports an ECDSA P-256 private key for signing from PKCS#8 ("PRIVATE KEY") or SEC1
 * ("EC PRIVATE KEY", as `step` and openssl write it) PEM.
 */
export async function importSigningKey(pem: string, what: string): Promise<CryptoKey> {
  let pkcs8: Uint8Array<ArrayBuffer>;
  try {
    const key = createPrivateKey(pem);
    if (key.asymmetricKeyType !== "ec" || key.asymmetricKeyDetails?.namedCurve !== "prime256v1") {
      const curve = key.asymmetricKeyDetails?.namedCurve;
      throw new PemError(
        `${what}: key is ${key.asymmetricKeyType}${curve ? ` (${curve})` : ""}, want ECDSA P-256`,
      );
    }
    pkcs8 = Uint8Array.from(key.export({ format: "der", type: "pkcs8" }));
  } catch (e) {
    if (e instanceof PemError) throw e;
    throw new PemError(`${what}: not a PEM private key: ${(e as Error).message}`);
  }
  return await crypto.subtle.importKey("pkcs8", pkcs8, { name: "ECDSA", namedCurve: "P-256" }, false, [
    "sign",
  ]);
}

export function toPem(der: Uint8Array, label = "CERTIFICATE"): string {
  const b64 = btoa(String.fromCharCode(...der));
  const lines = b64.match(/.{1,64}/g) ?? [];
  return `-----BEGIN ${label}-----\n${lines.join("\n")}\n-----END ${label}-----\n`;
}
