/** A TokenReviewer for tests: answers from a table, counts calls, can hold answers back. */
import type { TokenReviewer, TokenReviewResult } from "./token_review.ts";

export class FakeReviewer implements TokenReviewer {
  calls: { token: string; audiences: string[] }[] = [];
  #gate: Promise<void> | undefined;
  #open: (() => void) | undefined;

  constructor(readonly answers: Record<string, TokenReviewResult | Error>) {}

  /** Makes reviews wait until `release()`. */
  hold(): void {
    this.#gate = new Promise((r) => this.#open = r);
  }

  release(): void {
    this.#open?.();
    this.#gate = undefined;
  }

  async review(token: string, audiences: string[]): Promise<TokenReviewResult> {
    this.calls.push({ token, audiences });
    if (this.#gate) await this.#gate;
    const a = this.answers[token];
    if (a instanceof Error) throw a;
    return a ?? { authenticated: false, error: "[invalid bearer token, token lookup failed]" };
  }
}

export function serviceAccountToken(namespace: string, sa: string): TokenReviewResult {
  return {
    authenticated: true,
    username: `system:serviceaccount:${namespace}:${sa}`,
    audiences: ["identity.l5d.io"],
  };
}
