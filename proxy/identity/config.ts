/**
 * What the proxy's identity client needs, resolved from `LINKERD2_PROXY_IDENTITY_*` by
 * proxy/config (reference §3.1). Durations are in milliseconds.
 */
export interface ProxyIdentityConfig {
  /** `LINKERD2_PROXY_IDENTITY_LOCAL_NAME`: the name to certify (CN and the one DNS SAN). */
  localName: string;
  /** `LINKERD2_PROXY_IDENTITY_TRUST_ANCHORS`: PEM bundle (content, not a path). */
  trustAnchorsPem: string;
  /** `LINKERD2_PROXY_IDENTITY_TOKEN_FILE`: re-read on every Certify, since tokens rotate. */
  tokenFile: string;
  /** `LINKERD2_PROXY_IDENTITY_SVC_ADDR` (`host:port`) and `…_SVC_NAME` (needed unless the address is loopback). */
  svcAddr: string;
  svcName?: string;
  /** `LINKERD2_PROXY_IDENTITY_MIN_REFRESH` / `…_MAX_REFRESH`: bounds of the renewal delay. */
  minRefreshMs: number;
  maxRefreshMs: number;
  /** Retry delays after a failed Certify: exponential from min to max, ± jitter (a fraction). */
  backoff: { minMs: number; maxMs: number; jitter: number };
  /** Deadline of one Certify call. */
  certifyTimeoutMs: number;
}

export const PROXY_IDENTITY_DEFAULTS = {
  minRefreshMs: 10_000,
  maxRefreshMs: 86_400_000,
  backoff: { minMs: 100, maxMs: 60_000, jitter: 0.1 },
  certifyTimeoutMs: 10_000,
} as const satisfies Partial<ProxyIdentityConfig>;
