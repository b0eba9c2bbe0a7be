/**
 * Peak-EWMA load estimate of one endpoint, as Linkerd's balancer uses it (Finagle's algorithm, via
 * tower's `PeakEwma`): the RTT estimate jumps to any slower observation at once (peak sensitivity)
 * and decays exponentially toward faster ones and, while idle, toward zero, so an endpoint that
 * has not been tried lately becomes cheap and is explored again. Load = estimate × (pending + 1).
 */

export interface PeakEwmaConfig {
  /** Estimate for an endpoint with no observations yet. Linkerd's default: 30 ms. */
  defaultRttMs: number;
  /** Decay time constant. Linkerd's default: 10 s. */
  decayMs: number;
}

export const DEFAULT_PEAK_EWMA: Readonly<PeakEwmaConfig> = { defaultRttMs: 30, decayMs: 10_000 };

export class PeakEwma {
  /** Current RTT estimate (ms) as of `updatedAt`. */
  rttMs: number;
  updatedAt: number;
  /** Requests picked for this endpoint whose responses have not arrived. */
  pending = 0;
  readonly #decayMs: number;

  constructor(config: PeakEwmaConfig, now: number) {
    this.rttMs = config.defaultRttMs;
    this.updatedAt = now;
    this.#decayMs = config.decayMs;
  }

  /** Records one RTT sample taken at `now`. */
  observe(rttMs: number, now: number): void {
    if (rttMs > this.rttMs) {
      this.rttMs = rttMs;
    } else {
      const elapsed = now > this.updatedAt ? now - this.updatedAt : 0;
      const w = Math.exp(-elapsed / this.#decayMs);
      this.rttMs = this.rttMs * w + rttMs * (1 - w);
    }
    this.updatedAt = now;
  }

  /**
   * The load used to compare endpoints. Reading decays the estimate toward zero (an observation
   * of 0 without the peak rule), exactly as the reference implementations do on every load read.
   */
  cost(now: number): number {
    if (now > this.updatedAt) {
      this.rttMs *= Math.exp(-(now - this.updatedAt) / this.#decayMs);
      this.updatedAt = now;
    }
    return this.rttMs * (this.pending + 1);
  }
}
