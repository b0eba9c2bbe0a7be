/**
 * Turns a proxy's token into the ServiceAccount it belongs to, through TokenReview. Concurrent
 * requests with the same token share one review, and reviews are rate-limited behind a fair
 * queue (round-robin per client key, each key's queue bounded, and a bound on all of them), so a
 * mass pod start or a retry storm cannot flood the API server, and one client sending many
 * tokens cannot keep everyone else's reviews waiting behind its own. A client whose tokens the
 * API server refused in the last minute, or that already has HEAVY_CLIENT_REVIEWS reviews waiting
 * or in flight, is served after the others and not from the last half of the burst: a flooder cannot
 * take the turns or empty the burst that well-behaved clients would use.
 */
import { parseServiceAccountUsername } from "../../proto/identity_name.ts";
import type { Clock } from "../../proto/support/clock.ts";
import type { IdentityMetrics } from "./metrics.ts";
import { FairQueue, QueueFullError } from "./fair_queue.ts";
import { RateLimitedError, RateLimiter, type RateLimiterOptions } from "./rate_limiter.ts";
import type { TokenReviewer, TokenReviewResult } from "./token_review.ts";

export type TokenRejectReason =
  | "token_unauthenticated"
  | "token_audience"
  | "token_not_serviceaccount"
  | "token_malformed"
  | "token_expired"
  | "token_not_yet_valid";

/** The token was reviewed and refused. */
export class TokenRejected extends Error {
  override name = "TokenRejected";
  constructor(readonly reason: TokenRejectReason, message: string) {
    super(message);
  }
}

/** This client already has its share of reviews waiting; refused at once, it may retry later. */
export class TokenReviewQuotaExceeded extends Error {
  override name = "TokenReviewQuotaExceeded";
  readonly reason = "token_review_client_quota";
}

/** The review could not be made (API error, timeout, rate limit); the caller may retry. */
export class TokenReviewUnavailable extends Error {
  override name = "TokenReviewUnavailable";
  constructor(readonly reason: "token_review_error" | "token_review_throttled", message: string) {
    super(message);
  }
}

export interface ServiceAccountRef {
  namespace: string;
  serviceAccount: string;
}

export interface TokenValidatorOptions {
  audiences: string[];
  /** `maxQueued` bounds the waiters of all clients together. */
  rateLimit: RateLimiterOptions;
  /** Waiters one client key may have; default DEFAULT_MAX_QUEUED_PER_CLIENT. */
  maxQueuedPerClient?: number;
  /** Bound on one TokenReview call, including its wait for the rate limit. */
  timeoutMs: number;
}

/**
 * Enough for a large Deployment's pods (they share a ServiceAccount, hence a key) to wait a few
 * seconds at the default 50/s, small against the default 5,000 in all.
 */
export const DEFAULT_MAX_QUEUED_PER_CLIENT = 200;

/** Reviews waiting or in flight from which a client yields to the others (a flood's first wave). */
export const HEAVY_CLIENT_REVIEWS = 8;
/** How long a refused review keeps its client in the low-priority class. */
export const SUSPECT_FOR_MS = 60_000;
/** Clients remembered as suspect at most (oldest forgotten first), bounding the memory a flood can take. */
const MAX_SUSPECTS = 10_000;

export class TokenValidator {
  readonly #inflight = new Map<string, Promise<ServiceAccountRef>>();
  readonly #limiter: RateLimiter;
  readonly #queue: FairQueue;
  /** Client key → until when its reviews go in the low-priority class. */
  readonly #suspects = new Map<string, number>();
  /** Client key → its reviews waiting or in flight. */
  readonly #reviewing = new Map<string, number>();

  constructor(
    private readonly reviewer: TokenReviewer,
    private readonly opts: TokenValidatorOptions,
    private readonly clock: Clock,
    private readonly metrics?: IdentityMetrics,
  ) {
    this.#limiter = new RateLimiter(opts.rateLimit, clock);
    this.#queue = new FairQueue(
      {
        maxPerKey: opts.maxQueuedPerClient ?? DEFAULT_MAX_QUEUED_PER_CLIENT,
        maxTotal: opts.rateLimit.maxQueued,
        lowPriorityReserve: Math.floor(opts.rateLimit.burst / 2),
      },
      this.#limiter,
      clock,
    );
    metrics?.tokenReviewQueue.collectFrom(() => this.#queue.queued);
  }

  get inflight(): number {
    return this.#inflight.size;
  }

  /**
   * Resolves to the token's ServiceAccount, or rejects with TokenRejected / TokenReviewUnavailable
   * / TokenReviewQuotaExceeded. `client` is the fair-queue key of the caller.
   */
  validate(token: string, client = "unknown client"): Promise<ServiceAccountRef> {
    const shared = this.#inflight.get(token);
    if (shared) {
      this.metrics?.tokenReviewsCoalesced.inc();
      return shared;
    }
    const p = this.#review(token, client).finally(() => this.#inflight.delete(token));
    this.#inflight.set(token, p);
    return p;
  }

  async #review(token: string, client: string): Promise<ServiceAccountRef> {
    const deadline = new AbortController();
    const cancel = this.clock.after(this.opts.timeoutMs, () => deadline.abort());
    let result: TokenReviewResult;
    const begin = performance.now();
    const pending = this.#reviewing.get(client) ?? 0;
    this.#reviewing.set(client, pending + 1);
    try {
      try {
        const yieldToOthers = this.#isSuspect(client) || pending >= HEAVY_CLIENT_REVIEWS;
        await this.#queue.acquire(client, deadline.signal, yieldToOthers);
      } catch (e) {
        this.metrics?.tokenReviews.inc({ result: "throttled" });
        if (e instanceof QueueFullError && e.scope === "client") {
          throw new TokenReviewQuotaExceeded(`TokenReview refused: ${e.message}; retry later`);
        }
        const why = e instanceof RateLimitedError || e instanceof QueueFullError
          ? e.message
          : `no rate-limit slot within ${this.opts.timeoutMs}ms`;
        throw new TokenReviewUnavailable(
          "token_review_throttled",
          `TokenReview throttled: ${why}; retry later`,
        );
      }
      result = await new Promise<TokenReviewResult>((resolve, reject) => {
        deadline.signal.addEventListener(
          "abort",
          () => reject(new Error(`no answer within ${this.opts.timeoutMs}ms`)),
          { once: true },
        );
        this.reviewer.review(token, this.opts.audiences).then(resolve, reject);
      }).catch((e) => {
        this.metrics?.tokenReviews.inc({ result: "error" });
        throw new TokenReviewUnavailable(
          "token_review_error",
          `TokenReview failed: ${e instanceof Error ? e.message : String(e)}`,
        );
      });
    } finally {
      cancel();
      const n = this.#reviewing.get(client)! - 1;
      if (n === 0) this.#reviewing.delete(client);
      else this.#reviewing.set(client, n);
    }
    this.metrics?.tokenReviewDuration.observe((performance.now() - begin) / 1000);
    try {
      const sa = this.#interpret(result);
      this.#suspects.delete(client);
      return sa;
    } catch (e) {
      this.#suspect(client);
      throw e;
    }
  }

  #isSuspect(client: string): boolean {
    const until = this.#suspects.get(client);
    if (until === undefined) return false;
    if (until > this.clock.now()) return true;
    this.#suspects.delete(client);
    return false;
  }

  #suspect(client: string): void {
    this.#suspects.delete(client); // re-insert at the back: the map's order is oldest first
    this.#suspects.set(client, this.clock.now() + SUSPECT_FOR_MS);
    if (this.#suspects.size > MAX_SUSPECTS) {
      this.#suspects.delete(this.#suspects.keys().next().value!);
    }
  }

  #interpret(r: TokenReviewResult): ServiceAccountRef {
    if (!r.authenticated) {
      this.metrics?.tokenReviews.inc({ result: "unauthenticated" });
      const audienceProblem = r.error && /audience/i.test(r.error);
      throw new TokenRejected(
        audienceProblem ? "token_audience" : "token_unauthenticated",
        `token is not authenticated for audience ${this.opts.audiences.map((a) => `"${a}"`).join(", ")}` +
          (r.error ? `: ${r.error}` : ""),
      );
    }
    // An authenticator that ignores audiences answers with none: that is no proof the token was
    // minted for identity, so it is refused whenever audiences were asked for.
    const granted = r.audiences ?? [];
    if (this.opts.audiences.length > 0 && !granted.some((a) => this.opts.audiences.includes(a))) {
      this.metrics?.tokenReviews.inc({ result: "unauthenticated" });
      throw new TokenRejected(
        "token_audience",
        granted.length === 0
          ? `TokenReview lists no audiences for the token, want ${JSON.stringify(this.opts.audiences)}`
          : `token audiences ${JSON.stringify(granted)} do not include ${
            JSON.stringify(this.opts.audiences)
          }`,
      );
    }
    this.metrics?.tokenReviews.inc({ result: "authenticated" });
    const sa = r.username ? parseServiceAccountUsername(r.username) : undefined;
    if (!sa) {
      throw new TokenRejected(
        "token_not_serviceaccount",
        `token belongs to "${r.username ?? ""}", which is not a ServiceAccount`,
      );
    }
    return sa;
  }

  close(): void {
    this.#queue.close();
    this.#limiter.close();
  }
}
