/**
 * The expiry check run by deploy scripts and CI: reports when each trust anchor and the issuer
 * expire, verifies the issuer chains to an anchor, and fails when anything expires within the
 * threshold (a rotation is due) or is already invalid.
 */
import { Issuer, type TrustAnchors } from "../identity/issuer.ts";
import { parseCertificates } from "../identity/pem.ts";
import { formatDuration } from "../../proto/go_duration.ts";
import { x509 } from "../../proto/support/x509.ts";

export interface ExpiryReport {
  lines: string[];
  /** 0: all good; 1: something expires within the threshold or is invalid. */
  code: number;
}

function describe(role: string, c: x509.X509Certificate, now: number): string {
  const left = c.notAfter.getTime() - now;
  const when = left < 0 ? `EXPIRED ${formatLeft(-left)} ago` : `expires in ${formatLeft(left)}`;
  return `${role} "${c.subject}" (serial ${c.serialNumber}): valid until ${c.notAfter.toISOString()}, ${when}`;
}

function formatLeft(ms: number): string {
  const days = Math.floor(ms / 86_400_000);
  if (days >= 2) return `${days}d`;
  return formatDuration(Math.max(1000, Math.floor(ms / 1000) * 1000));
}

export async function checkExpiry(opts: {
  anchors: TrustAnchors;
  /** Issuer certificate PEM; when given with `issuerKeyPem` the key is checked too. */
  issuerPem?: string;
  issuerKeyPem?: string;
  thresholdMs: number;
  /** The issuer's own threshold (default `thresholdMs`): issuers live far shorter than anchors. */
  issuerThresholdMs?: number;
  now: number;
}): Promise<ExpiryReport> {
  const lines: string[] = [];
  let code = 0;
  const check = (role: string, c: x509.X509Certificate) => {
    lines.push(describe(role, c, opts.now));
    const threshold = role === "issuer" ? opts.issuerThresholdMs ?? opts.thresholdMs : opts.thresholdMs;
    if (c.notAfter.getTime() - opts.now < threshold) {
      lines.push(
        `WARNING: ${role} "${c.subject}" expires within ${formatDuration(threshold)}: rotate it`,
      );
      code = 1;
    }
    if (c.notBefore.getTime() > opts.now) {
      lines.push(`ERROR: ${role} "${c.subject}" is not valid before ${c.notBefore.toISOString()}`);
      code = 1;
    }
  };
  for (const a of opts.anchors.certs) check("trust anchor", a);
  if (opts.issuerPem !== undefined) {
    const issuer = parseCertificates(opts.issuerPem, "issuer certificate")[0];
    check("issuer", issuer);
    if (opts.issuerKeyPem !== undefined) {
      try {
        await Issuer.load(
          { certPem: opts.issuerPem, keyPem: opts.issuerKeyPem, origin: "check" },
          opts.anchors,
          opts.now,
        );
        lines.push("issuer chains to a trust anchor and its key matches");
      } catch (e) {
        lines.push(`ERROR: ${(e as Error).message}`);
        code = 1;
      }
    } else {
      const signer = await findSigner(issuer, opts.anchors.certs);
      if (signer) lines.push(`issuer is signed by trust anchor "${signer.subject}"`);
      else {
        lines.push(`ERROR: issuer "${issuer.subject}" is not signed by any trust anchor`);
        code = 1;
      }
    }
  }
  return { lines, code };
}

async function findSigner(
  cert: x509.X509Certificate,
  anchors: x509.X509Certificate[],
): Promise<x509.X509Certificate | undefined> {
  for (const a of anchors) {
    if (a.subject !== cert.issuer) continue;
    if (await cert.verify({ publicKey: a.publicKey, signatureOnly: true }).catch(() => false)) return a;
  }
  return undefined;
}
