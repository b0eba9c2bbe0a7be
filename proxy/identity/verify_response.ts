/**
 * Checks a CertifyResponse before the proxy uses it, as linkerd2-proxy does: `valid_until` in the
 * future, the leaf names this proxy and carries its key, and leaf → intermediates → a trust
 * anchor verifies at the current time.
 */
import type { CertifyResponse } from "../../proto/gen/identity.ts";
import { toPem } from "./pem.ts";
import { x509 } from "../../proto/support/x509.ts";

export class CertifyResponseError extends Error {
  override name = "CertifyResponseError";
}

export interface AcceptedCertificate {
  /** Leaf then intermediates, PEM. */
  certChainPem: string;
  expiresAt: Date;
  leaf: x509.X509Certificate;
}

function parse(der: Uint8Array, what: string): x509.X509Certificate {
  try {
    return new x509.X509Certificate(Uint8Array.from(der));
  } catch (e) {
    throw new CertifyResponseError(`${what} is not a DER certificate: ${(e as Error).message}`);
  }
}

function checkTime(c: x509.X509Certificate, what: string, now: number): void {
  if (now < c.notBefore.getTime()) {
    throw new CertifyResponseError(`${what} "${c.subject}" is not valid before ${c.notBefore.toISOString()}`);
  }
  if (now > c.notAfter.getTime()) {
    throw new CertifyResponseError(`${what} "${c.subject}" expired at ${c.notAfter.toISOString()}`);
  }
}

async function signedBy(c: x509.X509Certificate, by: x509.X509Certificate): Promise<boolean> {
  if (c.issuer !== by.subject) return false;
  return await c.verify({ publicKey: by.publicKey, signatureOnly: true }).catch(() => false);
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((v, i) => v === b[i]);
}

export async function verifyCertifyResponse(
  res: CertifyResponse,
  expect: { localName: string; spki: Uint8Array; anchors: x509.X509Certificate[]; now: number },
): Promise<AcceptedCertificate> {
  const { now } = expect;
  if (!res.validUntil) throw new CertifyResponseError("response has no valid_until");
  const validUntil = Number(res.validUntil.seconds) * 1000 + Math.floor(res.validUntil.nanos / 1e6);
  if (validUntil <= now) {
    throw new CertifyResponseError(`valid_until ${new Date(validUntil).toISOString()} is not in the future`);
  }
  if (res.leafCertificate.length === 0) throw new CertifyResponseError("response has no leaf certificate");
  const leaf = parse(res.leafCertificate, "leaf");
  checkTime(leaf, "leaf", now);
  const dns = leaf.getExtension(x509.SubjectAlternativeNameExtension)?.names.items
    .filter((n) => n.type === "dns").map((n) => n.value) ?? [];
  if (!dns.includes(expect.localName)) {
    throw new CertifyResponseError(
      `leaf names ${JSON.stringify(dns)}, not the local identity "${expect.localName}"`,
    );
  }
  if (!sameBytes(new Uint8Array(leaf.publicKey.rawData), expect.spki)) {
    throw new CertifyResponseError("leaf does not carry this proxy's public key");
  }
  const eku = leaf.getExtension(x509.ExtendedKeyUsageExtension);
  if (eku && !eku.usages.includes(x509.ExtendedKeyUsage.serverAuth)) {
    throw new CertifyResponseError("leaf's extended key usage does not allow TLS server use");
  }

  const intermediates = res.intermediateCertificates.map((d, i) => parse(d, `intermediate #${i + 1}`));
  let cur = leaf;
  for (const [i, inter] of intermediates.entries()) {
    if (!(await signedBy(cur, inter))) {
      throw new CertifyResponseError(
        `"${cur.subject}" is not signed by intermediate #${i + 1} "${inter.subject}"`,
      );
    }
    if (!inter.getExtension(x509.BasicConstraintsExtension)?.ca) {
      throw new CertifyResponseError(`intermediate "${inter.subject}" is not a CA`);
    }
    checkTime(inter, "intermediate", now);
    cur = inter;
  }
  let anchor: x509.X509Certificate | undefined;
  for (const a of expect.anchors) {
    if (await signedBy(cur, a)) {
      anchor = a;
      break;
    }
  }
  if (!anchor) {
    throw new CertifyResponseError(
      `chain ends at "${cur.subject}", issued by "${cur.issuer}": not signed by any trust anchor`,
    );
  }
  checkTime(anchor, "trust anchor", now);

  const expiresAt = new Date(Math.min(leaf.notAfter.getTime(), validUntil));
  const certChainPem = [res.leafCertificate, ...res.intermediateCertificates].map((d) => toPem(d)).join("");
  return { certChainPem, expiresAt, leaf };
}
