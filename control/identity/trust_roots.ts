/**
 * What identity writes into the trust-roots ConfigMap next to the anchors (issue 21's contract):
 *
 *   weft-issuers.crt   every issuer certificate identity knows of that is valid now and chains to an
 *                      anchor in `ca-bundle.crt`, the current issuer first (its intermediates, if any,
 *                      right after it), expired ones pruned;
 *   weft-renew-before  when the current issuer is not the one published first: a time before which
 *                      every leaf came from an older issuer, so proxies holding such a leaf renew early.
 *
 * Pure: `planTrustRoots` turns the ConfigMap's data and what identity has loaded into the keys to
 * write (nothing when the ConfigMap already says it). The publisher (trust_roots_publisher.ts) does
 * the I/O.
 */
import { x509 } from "../../proto/support/x509.ts";
import { type CertInfo, certInfo, certPem } from "./cert_info.ts";
import { parseCertificates } from "./pem.ts";

export const TRUST_ANCHORS_KEY = "ca-bundle.crt";
export const ISSUERS_KEY = "weft-issuers.crt";
export const RENEW_BEFORE_KEY = "weft-renew-before";

/** An issuer chain identity loaded: the issuer first, then intermediates below the anchor. */
export interface LoadedIssuer {
  chain: x509.X509Certificate[];
  /** When it became the issuer identity signs with. */
  since: number;
}

export interface PlanInput {
  /** The ConfigMap's data as it is now. */
  data: Record<string, string>;
  /** The issuer identity signs with now. */
  current: LoadedIssuer;
  /** Other issuers this process has loaded (the current one may be among them). */
  previous: LoadedIssuer[];
  /** The skew allowance identity subtracts from each leaf's notBefore. */
  clockSkewMs: number;
  now: number;
}

export interface TrustRootsPlan {
  /** Keys to merge into the ConfigMap; empty when it is up to date. */
  patch: Record<string, string>;
  /** The issuers `weft-issuers.crt` lists (after the patch), in order. */
  issuers: CertInfo[];
  /** Why something was left out or could not be decided, for the log. */
  notes: string[];
  /** The earliest notAfter among the listed issuers: the list changes then. */
  nextExpiry?: number;
}

/**
 * The renew-before time for an issuer that became current at `since`: leaves carry
 * notBefore = floor((issued − skew) / 1 s), so every leaf the previous issuer signed (issued ≤ since)
 * has notBefore ≤ floor((since − skew) / 1 s), strictly below this value, while a leaf the new issuer
 * signs more than a second later is at or above it (one signed within that second renews once more).
 */
export function renewBeforeFor(since: number, clockSkewMs: number): Date {
  return new Date(Math.floor((since - clockSkewMs) / 1000) * 1000 + 1000);
}

/** RFC 3339 UTC without fractional seconds, as the contract's readers parse it. */
export function formatRenewBefore(d: Date): string {
  return d.toISOString().replace(/\.\d{3}Z$/, "Z");
}

/** A `weft-renew-before` value, or undefined when it is missing or not an RFC 3339 time. */
export function parseRenewBefore(value: string | undefined): Date | undefined {
  if (!value) return undefined;
  const v = value.trim();
  if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/.test(v)) return undefined;
  const d = new Date(v);
  return Number.isNaN(d.getTime()) ? undefined : d;
}

async function signedBy(cert: x509.X509Certificate, by: x509.X509Certificate): Promise<boolean> {
  if (cert.issuer !== by.subject) return false;
  try {
    return await cert.verify({ publicKey: by.publicKey, signatureOnly: true });
  } catch {
    return false;
  }
}

function isCa(cert: x509.X509Certificate): boolean {
  return cert.getExtension(x509.BasicConstraintsExtension)?.ca === true;
}

/**
 * The certificates of `candidates` (in their order) that are CAs valid at `now` and chain to one
 * of `anchors` through each other.
 */
export async function liveIssuers(
  candidates: CertInfo[],
  anchors: x509.X509Certificate[],
  now: number,
): Promise<CertInfo[]> {
  const usable = candidates.filter((c) =>
    isCa(c.cert) && c.notBefore.getTime() <= now && now <= c.notAfter.getTime()
  );
  const anchorFps = new Set(await Promise.all(anchors.map((a) => certInfo(a).then((i) => i.fingerprint))));
  const trusted = new Set<string>();
  // A fixpoint: each round admits the certificates signed by an anchor or by one already admitted.
  for (let grew = true; grew;) {
    grew = false;
    for (const c of usable) {
      if (trusted.has(c.fingerprint) || anchorFps.has(c.fingerprint)) continue;
      let ok = false;
      for (const a of anchors) if (!ok && await signedBy(c.cert, a)) ok = true;
      for (const t of usable) {
        if (!ok && trusted.has(t.fingerprint) && await signedBy(c.cert, t.cert)) ok = true;
      }
      if (ok) {
        trusted.add(c.fingerprint);
        grew = true;
      }
    }
  }
  return usable.filter((c) => trusted.has(c.fingerprint));
}

export async function planTrustRoots(input: PlanInput): Promise<TrustRootsPlan> {
  const { data, now } = input;
  const notes: string[] = [];
  let anchors: x509.X509Certificate[];
  try {
    anchors = parseCertificates(data[TRUST_ANCHORS_KEY] ?? "", TRUST_ANCHORS_KEY);
  } catch (e) {
    // Without the anchors nothing can be said about which issuers chain: write nothing.
    return { patch: {}, issuers: [], notes: [`${(e as Error).message}; not publishing issuers`] };
  }
  let published: CertInfo[] = [];
  if (data[ISSUERS_KEY]?.trim()) {
    try {
      published = await Promise.all(parseCertificates(data[ISSUERS_KEY], ISSUERS_KEY).map(certInfo));
    } catch (e) {
      notes.push(`${(e as Error).message}; rewriting it`);
    }
  }
  const ordered: CertInfo[] = [];
  const seen = new Set<string>();
  const add = async (certs: x509.X509Certificate[]) => {
    for (const c of certs) {
      const info = await certInfo(c);
      if (!seen.has(info.fingerprint)) {
        seen.add(info.fingerprint);
        ordered.push(info);
      }
    }
  };
  await add(input.current.chain);
  for (const p of [...input.previous].sort((a, b) => b.since - a.since)) await add(p.chain);
  for (const p of published) await add([p.cert]);

  const issuers = await liveIssuers(ordered, anchors, now);
  const current = await certInfo(input.current.chain[0]);
  if (issuers[0]?.fingerprint !== current.fingerprint) {
    notes.push(
      `the current issuer "${current.subject}" (sha256 ${current.fingerprint}) is not valid or does not chain ` +
        `to an anchor in ${TRUST_ANCHORS_KEY}; it is left out of ${ISSUERS_KEY}`,
    );
  }
  const patch: Record<string, string> = {};
  const text = issuers.map((i) => certPem(i.cert)).join("");
  if ((data[ISSUERS_KEY] ?? "") !== text) patch[ISSUERS_KEY] = text;

  // The issuer changed since the list was last published: leaves from before the change renew.
  // Nothing published yet means a fresh install (or an upgrade): no proxy needs telling.
  const publishedFirst = published[0]?.fingerprint;
  if (publishedFirst !== undefined && publishedFirst !== current.fingerprint) {
    const want = renewBeforeFor(input.current.since, input.clockSkewMs);
    const have = parseRenewBefore(data[RENEW_BEFORE_KEY]);
    // A later time (e.g. written by the rotation command) already covers ours.
    if (!have || have.getTime() < want.getTime()) patch[RENEW_BEFORE_KEY] = formatRenewBefore(want);
  }
  const expiries = issuers.map((i) => i.notAfter.getTime());
  return {
    patch,
    issuers,
    notes,
    ...(expiries.length ? { nextExpiry: Math.min(...expiries) } : {}),
  };
}
