/**
 * The balancer's clock: Clock's interface (ms since the epoch + timers) but with sub-millisecond
 * resolution, because loopback RTTs are often below 1 ms and Date.now() would round them to 0.
 */
import { type Clock, systemClock } from "../../proto/support/clock.ts";

const origin = performance.timeOrigin;

export const preciseClock: Clock = {
  now: () => origin + performance.now(),
  after: systemClock.after,
};
