/**
 * Inbound HTTP local rate limits (`HttpLocalRateLimit` of an inbound Server; the
 * HTTPLocalRateLimitPolicy resource), as Linkerd's proxy applies them: a token bucket for the whole
 * server (`total`), one per client identity (`identity`; clients without an identity share one),
 * and override buckets shared by the identities listed with them (an overridden identity skips the
 * per-identity bucket). A bucket holds `rps` tokens (the burst) and refills `rps` per second.
 */
import type { HttpLocalRateLimit } from "../../proto/gen_messages/inbound.ts";
import type { Metadata } from "../../proto/gen_messages/meta.ts";
import type { Clock } from "../../proto/support/clock.ts";

class TokenBucket {
  tokens: number;
  at: number;

  constructor(readonly rps: number, now: number) {
    this.tokens = rps;
    this.at = now;
  }

  take(now: number): boolean {
    if (now > this.at) {
      this.tokens = Math.min(this.rps, this.tokens + ((now - this.at) * this.rps) / 1000);
      this.at = now;
    }
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }

  full(now: number): boolean {
    return this.tokens + ((now - this.at) * this.rps) / 1000 >= this.rps;
  }
}

export interface RateLimited {
  readonly scope: "total" | "identity" | "override";
  readonly rps: number;
}

/** The policy a limit came from (HTTPLocalRateLimitPolicy), for the `ratelimit_*` metric labels. */
export interface RateLimitRef {
  readonly group: string;
  readonly kind: string;
  readonly name: string;
}

function rateLimitRef(m: Metadata | undefined): RateLimitRef | undefined {
  const k = m?.kind;
  if (!k) return undefined;
  if (k.$case === "default") return { group: "", kind: "default", name: k.value };
  return { group: k.value.group, kind: k.value.kind, name: k.value.name };
}

/** Per-identity buckets kept before idle (refilled) ones are dropped. */
const MAX_IDENTITIES = 4096;

export class LocalRateLimit {
  readonly #clock: Clock;
  readonly #total: TokenBucket | undefined;
  readonly #identityRps: number;
  readonly #identities = new Map<string, TokenBucket>();
  readonly #overrides = new Map<string, TokenBucket>();
  readonly #limited: Record<RateLimited["scope"], RateLimited>;

  constructor(
    config: { totalRps?: number; identityRps?: number; overrides?: { rps: number; identities: string[] }[] },
    clock: Clock,
    readonly ref?: RateLimitRef,
  ) {
    this.#clock = clock;
    const now = clock.now();
    this.#total = config.totalRps ? new TokenBucket(config.totalRps, now) : undefined;
    this.#identityRps = config.identityRps ?? 0;
    for (const o of config.overrides ?? []) {
      if (!o.rps) continue;
      const shared = new TokenBucket(o.rps, now);
      for (const id of o.identities) this.#overrides.set(id, shared);
    }
    this.#limited = {
      total: { scope: "total", rps: config.totalRps ?? 0 },
      identity: { scope: "identity", rps: this.#identityRps },
      override: { scope: "override", rps: 0 },
    };
  }

  /** Takes a token for one request; undefined = allowed, else which limit refused it. */
  check(clientId: string | undefined): RateLimited | undefined {
    const now = this.#clock.now();
    if (this.#total && !this.#total.take(now)) return this.#limited.total;
    if (clientId !== undefined) {
      const o = this.#overrides.get(clientId);
      if (o) return o.take(now) ? undefined : { scope: "override", rps: o.rps };
    }
    if (this.#identityRps === 0) return undefined;
    const key = clientId ?? "";
    let b = this.#identities.get(key);
    if (!b) {
      if (this.#identities.size >= MAX_IDENTITIES) this.#sweep(now);
      b = new TokenBucket(this.#identityRps, now);
      this.#identities.set(key, b);
    }
    return b.take(now) ? undefined : this.#limited.identity;
  }

  #sweep(now: number): void {
    for (const [k, b] of this.#identities) if (b.full(now)) this.#identities.delete(k);
  }
}

/** The limits of a Server's HTTP protocol, or undefined when it sets none. */
export function localRateLimit(p: HttpLocalRateLimit | undefined, clock: Clock): LocalRateLimit | undefined {
  if (!p) return undefined;
  const totalRps = p.total?.requestsPerSecond || undefined;
  const identityRps = p.identity?.requestsPerSecond || undefined;
  const overrides = p.overrides.map((o) => ({
    rps: o.limit?.requestsPerSecond ?? 0,
    identities: o.clients?.identities.map((i) => i.name) ?? [],
  })).filter((o) => o.rps > 0 && o.identities.length > 0);
  if (!totalRps && !identityRps && overrides.length === 0) return undefined;
  return new LocalRateLimit({ totalRps, identityRps, overrides }, clock, rateLimitRef(p.metadata));
}
