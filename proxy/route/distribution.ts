/**
 * A route rule's backends (`Distribution`): first-available or weighted-random, chosen per
 * request. Weighted choice honours weights statistically (traffic splits); a backend that is not
 * available (caller's predicate, e.g. its balancer is failing fast) is skipped by re-choosing among
 * the available ones by weight, and when none is available the first draw stands so the request
 * meets that backend's queue and failfast.
 */
import type { Rng } from "../core/rng.ts";

export class Distribution<B> {
  readonly kind: "empty" | "first_available" | "random_available";
  readonly backends: readonly B[];
  readonly weights: readonly number[];
  readonly #cumulative: number[];
  readonly #total: number;

  private constructor(kind: Distribution<B>["kind"], backends: B[], weights: number[]) {
    this.kind = kind;
    this.backends = backends;
    this.weights = weights;
    let t = 0;
    this.#cumulative = weights.map((w) => (t += w));
    this.#total = t;
  }

  static empty<B>(): Distribution<B> {
    return new Distribution<B>("empty", [], []);
  }

  static firstAvailable<B>(backends: B[]): Distribution<B> {
    return new Distribution("first_available", backends, backends.map(() => 1));
  }

  static randomAvailable<B>(backends: { backend: B; weight: number }[]): Distribution<B> {
    return new Distribution(
      "random_available",
      backends.map((b) => b.backend),
      backends.map((b) => b.weight),
    );
  }

  /**
   * The backend for one request; undefined when there is none (empty distribution, or every
   * weight is 0 — Gateway API sends such a rule no traffic).
   */
  choose(rng: Rng, available?: (b: B) => boolean): B | undefined {
    const bs = this.backends;
    if (bs.length === 0) return undefined;
    if (this.kind === "first_available") {
      if (available) { for (const b of bs) if (available(b)) return b; }
      return bs[0];
    }
    if (this.#total <= 0) return undefined;
    const drawn = this.#index(rng() * this.#total);
    const b = bs[drawn];
    if (!available || available(b)) return b;
    let sub = 0;
    for (let i = 0; i < bs.length; i++) {
      if (i !== drawn && this.weights[i] > 0 && available(bs[i])) sub += this.weights[i];
    }
    if (sub === 0) return b;
    let x = rng() * sub;
    for (let i = 0; i < bs.length; i++) {
      if (i === drawn || this.weights[i] <= 0 || !available(bs[i])) continue;
      x -= this.weights[i];
      if (x < 0) return bs[i];
    }
    return b;
  }

  #index(x: number): number {
    const c = this.#cumulative;
    let lo = 0;
    let hi = c.length - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (x < c[mid]) hi = mid;
      else lo = mid + 1;
    }
    return lo;
  }
}
