/** A manually advanced Clock for tests. */
import type { Clock } from "./clock.ts";

interface Timer {
  at: number;
  seq: number;
  cb: () => void;
}

export class FakeClock implements Clock {
  #now: number;
  #seq = 0;
  #timers = new Set<Timer>();

  constructor(start = Date.UTC(2026, 0, 1)) {
    this.#now = start;
  }

  now(): number {
    return this.#now;
  }

  after(ms: number, cb: () => void): () => void {
    const t = { at: this.#now + Math.max(0, ms), seq: this.#seq++, cb };
    this.#timers.add(t);
    return () => this.#timers.delete(t);
  }

  get pendingTimers(): number {
    return this.#timers.size;
  }

  /** Moves time forward by `ms`, firing due timers in order (including ones they schedule). */
  advance(ms: number): void {
    const target = this.#now + ms;
    for (;;) {
      let next: Timer | undefined;
      for (const t of this.#timers) {
        if (t.at <= target && (!next || t.at < next.at || (t.at === next.at && t.seq < next.seq))) next = t;
      }
      if (!next) break;
      this.#timers.delete(next);
      this.#now = next.at;
      next.cb();
    }
    this.#now = target;
  }
}
