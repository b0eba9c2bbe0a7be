/** Open connections, so shutdown can wait for them to finish and then close what is left. */
import type { Duplex } from "node:stream";

export class ConnTracker {
  #open = new Set<Duplex>();
  #idle: (() => void)[] = [];

  get size(): number {
    return this.#open.size;
  }

  add(s: Duplex): void {
    this.#open.add(s);
    s.once("close", () => {
      this.#open.delete(s);
      if (this.#open.size === 0) { for (const w of this.#idle.splice(0)) w(); }
    });
  }

  /** Resolves true when every connection closed within `timeoutMs`, else destroys the rest. */
  drain(timeoutMs: number): Promise<boolean> {
    if (this.#open.size === 0) return Promise.resolve(true);
    return new Promise((resolve) => {
      const t = setTimeout(() => {
        for (const s of this.#open) s.destroy();
        resolve(false);
      }, timeoutMs);
      this.#idle.push(() => {
        clearTimeout(t);
        resolve(true);
      });
    });
  }
}
