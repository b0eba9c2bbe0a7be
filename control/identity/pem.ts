/** PEM helpers for certificates and private keys (issuer material, trust anchor bundles). */
import { createPrivateKey } from "node:crypto";
import { decodePem, PemError } from "../../proto/support/pem.ts";
import { x509 } from "../../proto/support/x509.ts";

export { PemError, toPem } from "../../proto/support/pem.ts";

/** Every CERTIFICATE block of `pem`, parsed; throws PemError naming `what` when there is none. */
export function parseCertificates(pem: string, what: string): x509.X509Certificate[] {
  return decodePem(pem, "CERTIFICATE", what).map((der, i) => {
    try {
      return new x509.X509Certificate(der);
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
