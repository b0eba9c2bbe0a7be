/**
 * Checks a CertifyResponse before the proxy uses it, as linkerd2-proxy does: `valid_until` in the
 * future, the leaf names this proxy and carries its key, and leaf → intermediates → a trust
 * anchor verifies at the current time.
 */
import { createPublicKey, verify } from "node:crypto";
import type { CertifyResponse } from "../../proto/gen_messages/identity.ts";
import { toPem } from "../../proto/support/pem.ts";
import { OID_SERVER_AUTH, parseCertificate, type ParsedCertificate } from "./cert_parse.ts";

export class CertifyResponseError extends Error {
  override name = "CertifyResponseError";
}

export interface AcceptedCertificate {
  /** Leaf then intermediates, PEM. */
  certChainPem: string;
  expiresAt: Date;
  leaf: ParsedCertificate;
}

function parse(der: Uint8Array, what: string): ParsedCertificate {
  try {
    return parseCertificate(der);
  } catch (e) {
    throw new CertifyResponseError(`${what} is not a DER certificate: ${(e as Error).message}`);
  }
}

function checkTime(c: ParsedCertificate, what: string, now: number): void {
  if (now < c.notBefore.getTime()) {
    throw new CertifyResponseError(
      `${what} "${c.subjectText}" is not valid before ${c.notBefore.toISOString()}`,
    );
  }
  if (now > c.notAfter.getTime()) {
    throw new CertifyResponseError(`${what} "${c.subjectText}" expired at ${c.notAfter.toISOString()}`);
  }
}

/** `c` names `by` as its issuer (same Name bytes) and `by`'s key verifies its signature. */
function signedBy(c: ParsedCertificate, by: ParsedCertificate): boolean {
  if (!sameBytes(c.issuer, by.subject) || !c.signatureHash) return false;
  try {
    const key = createPublicKey({ key: by.spki as Buffer, format: "der", type: "spki" });
    return verify(c.signatureHash, c.signed, key, c.signature);
  } catch {
    return false; // a key node:crypto cannot use, or a signature of the wrong shape
  }
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((v, i) => v === b[i]);
}

export function verifyCertifyResponse(
  res: CertifyResponse,
  expect: { localName: string; spki: Uint8Array; anchors: ParsedCertificate[]; now: number },
): AcceptedCertificate {
  const { now } = expect;
  if (!res.validUntil) throw new CertifyResponseError("response has no valid_until");
  const validUntil = Number(res.validUntil.seconds) * 1000 + Math.floor(res.validUntil.nanos / 1e6);
  if (validUntil <= now) {
    throw new CertifyResponseError(`valid_until ${new Date(validUntil).toISOString()} is not in the future`);
  }
  if (res.leafCertificate.length === 0) throw new CertifyResponseError("response has no leaf certificate");
  const leaf = parse(res.leafCertificate, "leaf");
  checkTime(leaf, "leaf", now);
  const dns = leaf.dnsNames;
  if (!dns.includes(expect.localName)) {
    throw new CertifyResponseError(
      `leaf names ${JSON.stringify(dns)}, not the local identity "${expect.localName}"`,
    );
  }
  if (!sameBytes(leaf.spki, expect.spki)) {
    throw new CertifyResponseError("leaf does not carry this proxy's public key");
  }
  if (leaf.extKeyUsage && !leaf.extKeyUsage.includes(OID_SERVER_AUTH)) {
    throw new CertifyResponseError("leaf's extended key usage does not allow TLS server use");
  }

  const intermediates = res.intermediateCertificates.map((d, i) => parse(d, `intermediate #${i + 1}`));
  let cur = leaf;
  for (const [i, inter] of intermediates.entries()) {
    if (!signedBy(cur, inter)) {
      throw new CertifyResponseError(
        `"${cur.subjectText}" is not signed by intermediate #${i + 1} "${inter.subjectText}"`,
      );
    }
    if (!inter.isCa) {
      throw new CertifyResponseError(`intermediate "${inter.subjectText}" is not a CA`);
    }
    checkTime(inter, "intermediate", now);
    cur = inter;
  }
  const anchor = expect.anchors.find((a) => signedBy(cur, a));
  if (!anchor) {
    throw new CertifyResponseError(
      `chain ends at "${cur.subjectText}", issued by "${cur.issuerText}": not signed by any trust anchor`,
    );
  }
  checkTime(anchor, "trust anchor", now);

  const expiresAt = new Date(Math.min(leaf.notAfter.getTime(), validUntil));
  const certChainPem = [res.leafCertificate, ...res.intermediateCertificates].map((d) => toPem(d)).join("");
  return { certChainPem, expiresAt, leaf };
}
