/**
 * Random numbers for balancing, traffic splits, failure injection and jitter, passed in so tests
 * can use a seeded sequence and assert distributions deterministically.
 */

/** Uniform in [0, 1), like Math.random. */
export type Rng = () => number;

export const systemRng: Rng = Math.random;

/**
 * A small seeded generator (SplitMix32-style mixing of a Weyl sequence): fast, 32-bit state,
 * good enough equidistribution for load-balancing statistics. Not for cryptography.
 */
export function seededRng(seed: number): Rng {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x9e3779b9) >>> 0;
    let z = s;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
    z ^= z >>> 16;
    return (z >>> 0) / 4294967296;
  };
}
