/** PEM helpers for the identity client. */
import { x509 } from "../../proto/support/x509.ts";

export function toPem(der: Uint8Array, label = "CERTIFICATE"): string {
  let bin = "";
  for (let i = 0; i < der.length; i++) bin += String.fromCharCode(der[i]);
  const lines = btoa(bin).match(/.{1,64}/g) ?? [];
  return `-----BEGIN ${label}-----\n${lines.join("\n")}\n-----END ${label}-----\n`;
}

/** Parses a PEM bundle of certificates; throws naming `what` when there is no usable one. */
export function parseCertificateBundle(pem: string, what: string): x509.X509Certificate[] {
  const blocks = [...pem.matchAll(/-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g)];
  if (blocks.length === 0) throw new Error(`${what}: no PEM CERTIFICATE block found`);
  return blocks.map((m, i) => {
    try {
      return new x509.X509Certificate(m[0]);
    } catch (e) {
      throw new Error(`${what}: certificate #${i + 1} does not parse: ${(e as Error).message}`);
    }
  });
}
