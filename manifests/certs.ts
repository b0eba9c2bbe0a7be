/**
 * Certificates deploy creates and keeps: the mesh's trust anchor and issuer (unless given), a CA for
 * the admission webhooks and each webhook's serving certificate. Every decision here is a pure
 * function of what the cluster already holds and the clock, so deploy reuses valid material and a
 * second run changes nothing; a certificate is only replaced when it is missing, invalid or due.
 */
import { x509 } from "../proto/support/x509.ts";
import {
  createIssuer,
  createSelfSignedCa,
  createTrustAnchor,
  generateKeys,
  P256,
  privateKeyPem,
  serialNumber,
} from "../control/certs/pki.ts";
import { Issuer, IssuerError, TrustAnchors } from "../control/identity/issuer.ts";
import { importSigningKey, parseCertificates, PemError } from "../control/identity/pem.ts";

const DAY = 86_400_000;

export const LIFETIMES = {
  trustAnchor: 3650 * DAY,
  issuer: 365 * DAY,
  webhookCa: 3650 * DAY,
  webhookServing: 365 * DAY,
};
/** Deploy replaces a certificate with less than this left (mesh:check's default threshold is 60 days). */
export const RENEW_BEFORE_MS = 90 * DAY;

export interface Pair {
  certPem: string;
  keyPem: string;
}

export interface IdentityMaterial {
  anchorsPem: string;
  issuer: Pair;
}

export type IdentityPlan =
  | { action: "keep"; material: IdentityMaterial; note?: string }
  | { action: "create" }
  | { action: "use-given"; material: IdentityMaterial; replaces: boolean }
  | { action: "renew-issuer"; anchorsPem: string; reason: string };

export class CertError extends Error {
  override name = "CertError";
}

function left(c: x509.X509Certificate, now: number): string {
  const ms = c.notAfter.getTime() - now;
  return ms < 0 ? `expired ${c.notAfter.toISOString()}` : `expires ${c.notAfter.toISOString()}`;
}

/** Checks an issuer against anchors; the message names what is wrong. */
export async function validateIdentity(m: IdentityMaterial, now: number, origin: string): Promise<Issuer> {
  try {
    const anchors = TrustAnchors.parse(m.anchorsPem);
    return await Issuer.load({ ...m.issuer, origin }, anchors, now);
  } catch (e) {
    if (e instanceof IssuerError || e instanceof PemError) throw new CertError(`${origin}: ${e.message}`);
    throw new CertError(`${origin}: ${(e as Error).message}`);
  }
}

/**
 * What to do about the trust anchors and the issuer. `existing` is what the cluster has (either part may be
 * missing), `given` what the user passed, `anchorKey` whether deploy has the anchor's key (it made it).
 */
export async function planIdentity(o: {
  existing: { anchorsPem?: string; issuer?: Pair };
  given?: IdentityMaterial;
  anchorKeyPem?: string;
  now: number;
}): Promise<IdentityPlan> {
  const { existing, now } = o;
  if (o.given) {
    await validateIdentity(o.given, now, "the given --trust-anchors/--issuer-cert/--issuer-key");
    const same = existing.anchorsPem === o.given.anchorsPem &&
      existing.issuer?.certPem === o.given.issuer.certPem &&
      existing.issuer?.keyPem === o.given.issuer.keyPem;
    if (same) return { action: "keep", material: o.given };
    return { action: "use-given", material: o.given, replaces: existing.anchorsPem !== undefined };
  }
  if (existing.anchorsPem === undefined && existing.issuer === undefined) return { action: "create" };
  if (existing.anchorsPem === undefined || existing.issuer === undefined) {
    throw new CertError(
      `the cluster has ${
        existing.anchorsPem === undefined
          ? "an issuer Secret but no trust roots ConfigMap"
          : "trust roots but no issuer Secret"
      }: ` +
        `a partial install. Pass --trust-anchors, --issuer-cert and --issuer-key, or run \`deno task undeploy\` first`,
    );
  }
  const material = { anchorsPem: existing.anchorsPem, issuer: existing.issuer };
  let issuer: Issuer | undefined;
  let problem: string | undefined;
  try {
    issuer = await validateIdentity(material, now, "the issuer in the cluster");
  } catch (e) {
    problem = (e as Error).message;
  }
  const due = issuer && issuer.certificate.notAfter.getTime() - now < RENEW_BEFORE_MS;
  if (issuer && !due) return { action: "keep", material };
  const reason = problem ?? `the issuer ${left(issuer!.certificate, now)}`;
  const anchorOk = TrustAnchors.parse(existing.anchorsPem).certs.some((a) =>
    a.notAfter.getTime() - now > RENEW_BEFORE_MS
  );
  if (o.anchorKeyPem && anchorOk) return { action: "renew-issuer", anchorsPem: existing.anchorsPem, reason };
  if (issuer) {
    return {
      action: "keep",
      material,
      note: `${reason}; rotate it with \`deno task certs create --anchor-cert=… --anchor-key=…\` and ` +
        `deploy --trust-anchors/--issuer-cert/--issuer-key (deploy does not have the trust anchor's key)`,
    };
  }
  throw new CertError(
    `${reason}. Proxies cannot be certified. Pass a valid --trust-anchors/--issuer-cert/--issuer-key ` +
      `(deno task certs create), or undeploy and deploy to start over with new anchors`,
  );
}

export interface CreatedIdentity {
  material: IdentityMaterial;
  anchor: Pair;
}

export async function createIdentity(o: {
  namespace: string;
  trustDomain: string;
  now: number;
}): Promise<CreatedIdentity> {
  const anchor = await createTrustAnchor({
    commonName: `root.${o.namespace}.${o.trustDomain}`,
    lifetimeMs: LIFETIMES.trustAnchor,
    now: o.now,
    skewMs: 60_000,
  });
  const issuer = await renewIssuer(anchor, o);
  return { material: { anchorsPem: anchor.certPem, issuer }, anchor };
}

export async function renewIssuer(
  anchor: Pair,
  o: { namespace: string; trustDomain: string; now: number },
): Promise<Pair> {
  const issuer = await createIssuer(anchor, {
    commonName: `identity.${o.namespace}.${o.trustDomain}`,
    lifetimeMs: LIFETIMES.issuer,
    now: o.now,
    skewMs: 60_000,
  });
  return { certPem: issuer.certPem, keyPem: issuer.keyPem };
}

// ---- admission webhook certificates ----

/** The self-signed CA whose certificate is every webhook configuration's caBundle. */
export async function createWebhookCa(namespace: string, now: number): Promise<Pair> {
  const ca = await createSelfSignedCa({
    commonName: `webhook-ca.${namespace}.weft`,
    lifetimeMs: LIFETIMES.webhookCa,
    now,
    skewMs: 60_000,
    pathLength: 0,
  });
  return { certPem: ca.certPem, keyPem: ca.keyPem };
}

/** A serving certificate for `dnsNames`, signed by the webhook CA. */
export async function issueServingCert(ca: Pair, dnsNames: string[], now: number): Promise<Pair> {
  const caCert = new x509.X509Certificate(ca.certPem);
  const caKey = await importSigningKey(ca.keyPem, "webhook CA key");
  const keys = await generateKeys();
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: serialNumber(),
    subject: `CN=${dnsNames[0]}`,
    issuer: caCert.subject,
    notBefore: new Date(now - 60_000),
    notAfter: new Date(Math.min(now + LIFETIMES.webhookServing, caCert.notAfter.getTime())),
    signingAlgorithm: P256,
    publicKey: keys.publicKey,
    signingKey: caKey,
    extensions: [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
      new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
      new x509.SubjectAlternativeNameExtension(dnsNames.map((value) => ({ type: "dns" as const, value }))),
      await x509.AuthorityKeyIdentifierExtension.create(caCert),
    ],
  });
  return { certPem: cert.toString("pem") + "\n", keyPem: await privateKeyPem(keys) };
}

/** Whether `key` is the private key of `cert` (a signature made with one verifies with the other). */
async function keyMatches(cert: x509.X509Certificate, keyPemText: string, what: string): Promise<boolean> {
  const key = await importSigningKey(keyPemText, what);
  const probe = new Uint8Array(32);
  const sig = await crypto.subtle.sign(P256, key, probe);
  const pub = await cert.publicKey.export(P256, ["verify"]);
  return await crypto.subtle.verify(P256, pub, sig, probe);
}

/** Problems of a certificate for its role, or [] when it can stay. `renewBeforeMs` = 0 only checks validity. */
export async function certProblems(o: {
  pair: Pair;
  what: string;
  now: number;
  renewBeforeMs: number;
  /** Must be signed by this CA (PEM). */
  caPem?: string;
  /** Must name each of these. */
  dnsNames?: string[];
  /** Must be a CA. */
  ca?: boolean;
}): Promise<string[]> {
  let cert: x509.X509Certificate;
  try {
    cert = parseCertificates(o.pair.certPem, o.what)[0];
  } catch (e) {
    return [(e as Error).message];
  }
  const out: string[] = [];
  if (cert.notBefore.getTime() > o.now) {
    out.push(`${o.what} is not valid before ${cert.notBefore.toISOString()}`);
  }
  if (cert.notAfter.getTime() <= o.now) out.push(`${o.what} expired ${cert.notAfter.toISOString()}`);
  else if (cert.notAfter.getTime() - o.now < o.renewBeforeMs) {
    out.push(
      `${o.what} expires ${cert.notAfter.toISOString()}, within ${Math.round(o.renewBeforeMs / DAY)}d`,
    );
  }
  try {
    if (!(await keyMatches(cert, o.pair.keyPem, `${o.what} key`))) {
      out.push(`${o.what}: the key does not match`);
    }
  } catch (e) {
    out.push((e as Error).message);
  }
  if (o.ca) {
    const bc = cert.getExtension(x509.BasicConstraintsExtension);
    if (!bc?.ca) out.push(`${o.what} is not a CA certificate`);
  }
  if (o.dnsNames) {
    const san = cert.getExtension(x509.SubjectAlternativeNameExtension);
    const names = new Set(san?.names.items.filter((n) => n.type === "dns").map((n) => n.value) ?? []);
    const missing = o.dnsNames.filter((n) => !names.has(n));
    if (missing.length) out.push(`${o.what} does not name ${missing.join(", ")}`);
  }
  if (o.caPem) {
    const ca = new x509.X509Certificate(o.caPem);
    const ok = cert.issuer === ca.subject &&
      await cert.verify({ publicKey: ca.publicKey, signatureOnly: true }).catch(() => false);
    if (!ok) out.push(`${o.what} is not signed by the webhook CA "${ca.subject}"`);
  }
  return out;
}

/** DNS names the API server may use for a webhook Service (it dials `<svc>.<ns>.svc`). */
export function serviceDnsNames(services: string[], namespace: string, clusterDomain: string): string[] {
  return services.flatMap((s) => [`${s}.${namespace}.svc`, `${s}.${namespace}.svc.${clusterDomain}`]);
}
