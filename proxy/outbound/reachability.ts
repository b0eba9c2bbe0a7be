/**
 * Which outbound endpoints cannot be connected to right now, shared by the HTTP balancers and the
 * TCP path. As Linkerd's proxy only routes to endpoints whose connection is up, an endpoint whose
 * connect fails (refused, unreachable, timed out) or whose HTTP/2 connection stops answering PINGs
 * leaves rotation at once, instead of taking half the requests until discovery drops it (a dead node
 * is NotReady only after the node-monitor grace period, ~40–50 s). While it is down, a TCP connect
 * probes it in the background with jittered exponential backoff; the first success brings it back.
 *
 * Nothing is kept for healthy endpoints. A down entry is forgotten after `forgetAfterMs` even if
 * still unreachable (an endpoint removed from discovery must not be probed for ever); a later
 * failure marks it again.
 */
import type { Backoff } from "../config/config.ts";
import { backoffDelay } from "../core/backoff.ts";
import type { Clock } from "../../proto/support/clock.ts";
import { systemClock } from "../../proto/support/clock.ts";
import { type Rng, systemRng } from "../core/rng.ts";

export type ReachabilityListener = (up: boolean) => void;

export interface ReachabilityOptions {
  /** Connects to `ip:port` and closes at once; resolves true when the connect succeeded. */
  probe: (ip: string, port: number) => Promise<boolean>;
  backoff: Backoff;
  forgetAfterMs?: number;
  clock?: Clock;
  rng?: Rng;
  /** Transitions, for debug logs. */
  log?: (msg: string) => void;
}

interface Down {
  since: number;
  attempts: number;
  cancel: (() => void) | undefined;
  /** Where the probe connects (the peer proxy's inbound port for meshed endpoints). */
  ip: string;
  port: number;
}

export class EndpointReachability {
  readonly #o: ReachabilityOptions;
  readonly #clock: Clock;
  readonly #rng: Rng;
  readonly #forgetAfterMs: number;
  readonly #down = new Map<string, Down>();
  readonly #listeners = new Map<string, Set<ReachabilityListener>>();
  #closed = false;

  constructor(o: ReachabilityOptions) {
    this.#o = o;
    this.#clock = o.clock ?? systemClock;
    this.#rng = o.rng ?? systemRng;
    this.#forgetAfterMs = o.forgetAfterMs ?? 120_000;
  }

  /** True while `key` (the endpoint's `ip:port`) is known to be unreachable. */
  isDown(key: string): boolean {
    return this.#down.has(key);
  }

  /** Number of endpoints currently down (for tests and metrics). */
  get downCount(): number {
    return this.#down.size;
  }

  /**
   * A connect to endpoint `key` failed (or its connection died without answering); `ip:port` is
   * where a probe should connect. Marks it down and starts probing, unless it already is.
   */
  failed(key: string, ip: string, port: number): void {
    if (this.#closed || this.#down.has(key)) return;
    const d: Down = { since: this.#clock.now(), attempts: 0, cancel: undefined, ip, port };
    this.#down.set(key, d);
    this.#o.log?.(`endpoint ${key} unreachable; probing ${ip}:${port}`);
    this.#notify(key, false);
    this.#schedule(key, d);
  }

  /** A connect to `key` succeeded (a request's own, or a probe's): it is up again. */
  succeeded(key: string): void {
    const d = this.#down.get(key);
    if (!d) return;
    d.cancel?.();
    this.#down.delete(key);
    this.#o.log?.(`endpoint ${key} reachable again`);
    this.#notify(key, true);
  }

  /** Calls `fn(up)` on each transition of `key`; returns the unsubscribe function. */
  watch(key: string, fn: ReachabilityListener): () => void {
    let set = this.#listeners.get(key);
    if (!set) this.#listeners.set(key, set = new Set());
    set.add(fn);
    return () => {
      const s = this.#listeners.get(key);
      if (!s) return;
      s.delete(fn);
      if (s.size === 0) this.#listeners.delete(key);
    };
  }

  close(): void {
    this.#closed = true;
    for (const d of this.#down.values()) d.cancel?.();
    this.#down.clear();
    this.#listeners.clear();
  }

  #notify(key: string, up: boolean): void {
    const set = this.#listeners.get(key);
    if (!set) return;
    for (const fn of [...set]) {
      try {
        fn(up);
      } catch { /* a listener's failure must not stop the others */ }
    }
  }

  #schedule(key: string, d: Down): void {
    const delay = backoffDelay(this.#o.backoff, d.attempts, this.#rng);
    d.cancel = this.#clock.after(delay, async () => {
      d.cancel = undefined;
      if (this.#down.get(key) !== d) return;
      if (this.#clock.now() - d.since >= this.#forgetAfterMs) {
        // Still unreachable after this long: stop probing, as it is most likely gone from discovery.
        this.#down.delete(key);
        this.#notify(key, true);
        return;
      }
      d.attempts++;
      let ok = false;
      try {
        ok = await this.#o.probe(d.ip, d.port);
      } catch {
        ok = false;
      }
      if (this.#down.get(key) !== d) return;
      if (ok) this.succeeded(key);
      else this.#schedule(key, d);
    });
  }
}
