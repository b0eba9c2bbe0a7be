/** When to renew and how long to wait after a failure. Pure, so the schedule is testable. */

/** Share of the remaining lifetime after which to renew. */
export const REFRESH_FRACTION = 0.7;
/** The renewal point moves by up to ± this share of itself, so proxies started together spread out. */
export const REFRESH_JITTER = 0.1;

/** Delay until the next renewal of a certificate expiring at `expiresAt`, in [min, max]. */
export function refreshDelayMs(
  now: number,
  expiresAt: number,
  bounds: { minRefreshMs: number; maxRefreshMs: number },
  random: () => number = Math.random,
): number {
  const remaining = Math.max(0, expiresAt - now);
  const jitter = 1 + REFRESH_JITTER * (2 * random() - 1);
  const delay = remaining * REFRESH_FRACTION * jitter;
  return Math.round(Math.min(bounds.maxRefreshMs, Math.max(bounds.minRefreshMs, delay)));
}

/** Delay before retry number `attempt` (1 = the first retry): exponential, capped, jittered. */
export function backoffDelayMs(
  attempt: number,
  backoff: { minMs: number; maxMs: number; jitter: number },
  random: () => number = Math.random,
): number {
  const base = Math.min(backoff.maxMs, backoff.minMs * 2 ** Math.min(attempt - 1, 30));
  const jittered = base * (1 + backoff.jitter * (2 * random() - 1));
  return Math.round(Math.min(backoff.maxMs, Math.max(backoff.minMs, jittered)));
}

/** Upper bound of the random delay before an early renewal asked for by `weft-renew-before`. */
export const EARLY_RENEWAL_SPREAD_MS = 30_000;

/**
 * Whether a leaf must renew early: it was issued (notBefore) before `renewBefore` and this proxy
 * fetched it before that time too. The second condition stops a loop: identity backdates notBefore
 * by its clock-skew allowance, so a leaf fetched just after `renewBefore` can still start before it.
 */
export function mustRenewEarly(leaf: { notBefore: number; fetchedAt: number }, renewBefore: number): boolean {
  return leaf.notBefore < renewBefore && leaf.fetchedAt < renewBefore;
}

/** The random delay of an early renewal, in [0, 30 s), so a whole mesh does not renew at once. */
export function earlyRenewalDelayMs(random: () => number = Math.random): number {
  return Math.floor(random() * EARLY_RENEWAL_SPREAD_MS);
}
