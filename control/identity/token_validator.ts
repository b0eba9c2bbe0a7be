/**
 * Turns a proxy's token into the ServiceAccount it belongs to, through TokenReview. Concurrent
 * requests with the same token share one review, and reviews are rate-limited with a bounded
 * queue, so a mass pod start (or a retry storm) cannot flood the API server.
 */
import { parseServiceAccountUsername } from "../../proto/identity_name.ts";
import type { Clock } from "../../proto/support/clock.ts";
import type { IdentityMetrics } from "./metrics.ts";
import { RateLimitedError, RateLimiter, type RateLimiterOptions } from "./rate_limiter.ts";
import type { TokenReviewer, TokenReviewResult } from "./token_review.ts";

export type TokenRejectReason = "token_unauthenticated" | "token_audience" | "token_not_serviceaccount";

/** The token was reviewed and refused. */
export class TokenRejected extends Error {
  override name = "TokenRejected";
  constructor(readonly reason: TokenRejectReason, message: string) {
    super(message);
  }
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
  rateLimit: RateLimiterOptions;
  /** Bound on one TokenReview call, including its wait for the rate limit. */
  timeoutMs: number;
}

export class TokenValidator {
  readonly #inflight = new Map<string, Promise<ServiceAccountRef>>();
  readonly #limiter: RateLimiter;

  constructor(
    private readonly reviewer: TokenReviewer,
    private readonly opts: TokenValidatorOptions,
    private readonly clock: Clock,
    private readonly metrics?: IdentityMetrics,
  ) {
    this.#limiter = new RateLimiter(opts.rateLimit, clock);
    metrics?.tokenReviewQueue.collectFrom(() => this.#limiter.queued);
  }

  get inflight(): number {
    return this.#inflight.size;
  }

  /** Resolves to the token's ServiceAccount, or rejects with TokenRejected / TokenReviewUnavailable. */
  validate(token: string): Promise<ServiceAccountRef> {
    const shared = this.#inflight.get(token);
    if (shared) {
      this.metrics?.tokenReviewsCoalesced.inc();
      return shared;
    }
    const p = this.#review(token).finally(() => this.#inflight.delete(token));
    this.#inflight.set(token, p);
    return p;
  }

  async #review(token: string): Promise<ServiceAccountRef> {
    const deadline = new AbortController();
    const cancel = this.clock.after(this.opts.timeoutMs, () => deadline.abort());
    let result: TokenReviewResult;
    const begin = performance.now();
    try {
      try {
        await this.#limiter.acquire(deadline.signal);
      } catch (e) {
        this.metrics?.tokenReviews.inc({ result: "throttled" });
        const why = e instanceof RateLimitedError
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
    }
    this.metrics?.tokenReviewDuration.observe((performance.now() - begin) / 1000);
    return this.#interpret(result);
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
    if (r.audiences && !r.audiences.some((a) => this.opts.audiences.includes(a))) {
      this.metrics?.tokenReviews.inc({ result: "unauthenticated" });
      throw new TokenRejected(
        "token_audience",
        `token audiences ${JSON.stringify(r.audiences)} do not include ${
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
    this.#limiter.close();
  }
}
