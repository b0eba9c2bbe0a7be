/** Time and timers, passed in so tests can drive them (see fake_clock.ts). Shared by control and proxy. */
export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
  /** Runs `cb` after `ms`; returns a function that cancels it. */
  after(ms: number, cb: () => void): () => void;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  after(ms, cb) {
    const t = setTimeout(cb, ms);
    return () => clearTimeout(t);
  },
};
