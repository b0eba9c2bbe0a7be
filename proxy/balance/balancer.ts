/**
 * Per-request endpoint choice for one backend: power-of-two-choices over peak-EWMA load, with
 * failure accrual (circuit breaking) and a bounded queue with failfast, as Linkerd's balancer does.
 *
 * - `update(map)` replaces the endpoint set (e.g. `EndpointSet.endpoints` from discovery): entries
 *   whose key stays keep their load statistics and breaker state; a changed value (metadata) is
 *   swapped in place; removed keys are never picked again (leases already out finish normally).
 * - `pick()` is synchronous and allocates one small Lease; `acquire(signal)` waits in the queue
 *   when nothing is ready.
 * - The caller reports each request through its lease: `responded()` when the response head
 *   arrives (RTT sample, pending count), `done(success)` once the response is classified (failure
 *   accrual). `done` alone does both.
 *
 * Failure accrual (policy `FailureAccrual.consecutive_failures`): `maxFailures` consecutive failures
 * eject an endpoint for a backoff (min·2^n, capped at max, plus jitter); when it ends the endpoint
 * admits exactly one probe request; success restores it, failure ejects it again with the next
 * backoff. Ejection never drops the number of ready endpoints below `minReady` (at least 1, or the
 * policy's `EjectionConfig.min_ready_endpoints` when larger): such an endpoint stays in rotation
 * ("eject_deferred") and the next failure tries again. So a backend whose endpoints all fail keeps
 * sending to the least-recently-ejected one rather than answering nothing but 503s, while a
 * backend with healthy peers sheds the failing ones.
 *
 * Reachability (`setReachable`, from outbound/reachability.ts): an endpoint whose connection cannot
 * be made is out of rotation until it can, whatever its accrual state and with no `minReady` floor,
 * as Linkerd's balancer only routes to endpoints whose connection is up.
 *
 * Queue (policy `Backend.queue`): requests that find no ready endpoint wait, at most `capacity` of
 * them (beyond: 503 `queue_full` at once). When no waiting request has been served for
 * `failfastMs`, the balancer enters failfast: every waiter and every new request fails at once
 * with 503 (`no_endpoints` when the set is empty, else `failfast`) until an endpoint is ready.
 */
import type { Clock } from "../../proto/support/clock.ts";
import type { Backoff } from "../config/config.ts";
import { backoffDelay } from "../core/backoff.ts";
import { HttpError } from "../http/message.ts";
import { preciseClock } from "../core/clock.ts";
import { DEFAULT_PEAK_EWMA, PeakEwma, type PeakEwmaConfig } from "./peak_ewma.ts";
import { type Rng, systemRng } from "../core/rng.ts";
import { BalancerStats } from "../metrics/balancer_stats.ts";
// The counters live with the metrics (the layer below), so the families read them without importing this.
export { BalancerStats, QUEUE_LATENCY_BOUNDS } from "../metrics/balancer_stats.ts";

export interface FailureAccrualConfig {
  /** Consecutive failures that eject an endpoint (Linkerd's annotation default: 7). */
  maxFailures: number;
  /** Ejection backoff (Linkerd's annotation defaults: 1 s … 1 min, jitter 0.5). */
  backoff: Backoff;
  /** Ejection never leaves fewer ready endpoints than this (values below 1 count as 1). */
  minReady: number;
}

export interface QueueConfig {
  /** Requests that may wait for an endpoint. */
  capacity: number;
  /** How long the balancer may stay unable to serve waiters before failing them. */
  failfastMs: number;
}

/** Linkerd's outbound defaults (LINKERD2_PROXY_OUTBOUND_HTTP_QUEUE_CAPACITY / _FAILFAST_TIMEOUT). */
export const DEFAULT_QUEUE: Readonly<QueueConfig> = { capacity: 10_000, failfastMs: 3_000 };

export type BalancerEvent =
  | "eject"
  | "eject_deferred"
  | "probation"
  | "restore"
  | "unreachable"
  | "reachable";

export interface BalancerOptions {
  /** For error messages (e.g. the Destination.Get path). */
  name?: string;
  ewma?: PeakEwmaConfig;
  queue?: QueueConfig;
  /** No failure accrual when undefined. */
  accrual?: FailureAccrualConfig;
  clock?: Clock;
  rng?: Rng;
  /** Endpoint breaker transitions, for logs and metrics; must not throw or block. */
  onEvent?: (event: BalancerEvent, key: string) => void;
  /** Where the queue and endpoint-update counts go (shared per parent and backend); default: its own. */
  stats?: BalancerStats;
}

export type EndpointState = "ready" | "ejected" | "probation" | "probing";

const READY = 0;
const EJECTED = 1;
const PROBATION = 2;
const PROBING = 3;
const STATE_NAMES: EndpointState[] = ["ready", "ejected", "probation", "probing"];

class Entry<T> {
  state = READY;
  failures = 0;
  /** Ejections since the endpoint was last healthy: the backoff exponent. */
  ejections = 0;
  /** Position in the ready array, -1 when not ready. */
  readyIndex = -1;
  removed = false;
  /** Its connection cannot be made (see `setReachable`): out of rotation whatever its state. */
  down = false;
  cancelTimer: (() => void) | undefined;
  readonly ewma: PeakEwma;

  constructor(readonly key: string, public value: T, ewma: PeakEwmaConfig, now: number) {
    this.ewma = new PeakEwma(ewma, now);
  }
}

interface Waiter<T> {
  resolve: (l: Lease<T>) => void;
  reject: (e: unknown) => void;
  signal: AbortSignal | undefined;
  onAbort: (() => void) | undefined;
  settled: boolean;
  /** When it entered the queue (the balancer clock). */
  t0: number;
}

/** One request's hold on an endpoint. */
export class Lease<T> {
  #core: Core<T>;
  #entry: Entry<T>;
  #start: number;
  #probe: boolean;
  #responded = false;
  #done = false;

  constructor(core: Core<T>, entry: Entry<T>, start: number, probe: boolean) {
    this.#core = core;
    this.#entry = entry;
    this.#start = start;
    this.#probe = probe;
  }

  get key(): string {
    return this.#entry.key;
  }

  /** The endpoint's current value (metadata updates are visible). */
  get endpoint(): T {
    return this.#entry.value;
  }

  /** True when this request is the single probe of an endpoint coming back from ejection. */
  get probe(): boolean {
    return this.#probe;
  }

  /**
   * The response head arrived (or the request failed): records the RTT. Idempotent. `now` lets a
   * caller that already read the clock (e.g. for latency metrics) share the reading.
   */
  responded(now: number = this.#core.clock.now()): void {
    if (this.#responded) return;
    this.#responded = true;
    const e = this.#entry;
    e.ewma.pending--;
    e.ewma.observe(now - this.#start, now);
  }

  /** The request's outcome for failure accrual; also `responded()` if not yet. Idempotent. */
  done(success: boolean, now?: number): void {
    if (this.#done) return;
    this.#done = true;
    if (!this.#responded) this.responded(now);
    this.#core.outcome(this.#entry, this.#probe, success);
  }
}

class Core<T> {
  readonly clock: Clock;
  readonly rng: Rng;
  readonly name: string;
  readonly ewma: PeakEwmaConfig;
  readonly queue: QueueConfig;
  readonly accrual: FailureAccrualConfig | undefined;
  readonly minReady: number;
  readonly onEvent: BalancerOptions["onEvent"];
  readonly stats: BalancerStats;
  readonly entries = new Map<string, Entry<T>>();
  readonly ready: Entry<T>[] = [];
  waiters: Waiter<T>[] = [];
  head = 0;
  waiting = 0;
  failfast = false;
  cancelFailfast: (() => void) | undefined;
  closed = false;

  constructor(o: BalancerOptions) {
    this.clock = o.clock ?? preciseClock;
    this.rng = o.rng ?? systemRng;
    this.name = o.name ?? "backend";
    this.ewma = o.ewma ?? DEFAULT_PEAK_EWMA;
    this.queue = o.queue ?? DEFAULT_QUEUE;
    this.accrual = o.accrual;
    this.minReady = Math.max(1, o.accrual?.minReady ?? 1);
    this.onEvent = o.onEvent;
    this.stats = o.stats ?? new BalancerStats();
    // A new balancer's gate starts open, as Linkerd's failfast gate does.
    this.stats.gateTimeout = this.queue.failfastMs / 1000;
    this.stats.gateOpen();
  }

  addReady(e: Entry<T>): void {
    if (e.readyIndex >= 0 || e.down) return;
    e.readyIndex = this.ready.length;
    this.ready.push(e);
  }

  removeReady(e: Entry<T>): void {
    const i = e.readyIndex;
    if (i < 0) return;
    const last = this.ready.pop()!;
    if (last !== e) {
      this.ready[i] = last;
      last.readyIndex = i;
    }
    e.readyIndex = -1;
  }

  pick(now?: number): Lease<T> | undefined {
    const r = this.ready;
    const n = r.length;
    if (n === 0 || this.closed) return undefined;
    now ??= this.clock.now();
    let e: Entry<T>;
    if (n === 1) {
      e = r[0];
    } else {
      const i = (this.rng() * n) | 0;
      let j = (this.rng() * (n - 1)) | 0;
      if (j >= i) j++;
      const a = r[i];
      const b = r[j];
      e = b.ewma.cost(now) < a.ewma.cost(now) ? b : a;
    }
    e.ewma.pending++;
    let probe = false;
    if (e.state === PROBATION) {
      e.state = PROBING;
      this.removeReady(e);
      probe = true;
    }
    return new Lease(this, e, now, probe);
  }

  outcome(e: Entry<T>, probe: boolean, success: boolean): void {
    const a = this.accrual;
    if (a === undefined || e.removed) return;
    if (probe) {
      if (success) {
        e.failures = 0;
        e.ejections = 0;
        this.restore(e, "restore");
      } else {
        e.ejections++;
        this.tryEject(e, a);
      }
      return;
    }
    if (e.state !== READY) return; // a straggler from before the ejection
    if (success) {
      e.failures = 0;
      return;
    }
    if (++e.failures >= a.maxFailures) this.tryEject(e, a);
  }

  restore(e: Entry<T>, event: BalancerEvent): void {
    e.state = READY;
    this.addReady(e);
    this.onEvent?.(event, e.key);
    this.becameReady();
  }

  tryEject(e: Entry<T>, a: FailureAccrualConfig): void {
    const othersReady = this.ready.length - (e.readyIndex >= 0 ? 1 : 0);
    if (othersReady < this.minReady) {
      // Keep it in rotation; one more failure tries again.
      e.failures = a.maxFailures - 1;
      if (e.state !== READY) this.restore(e, "eject_deferred");
      else this.onEvent?.("eject_deferred", e.key);
      return;
    }
    this.removeReady(e);
    e.state = EJECTED;
    e.failures = 0;
    const delay = backoffDelay(a.backoff, e.ejections, this.rng);
    e.cancelTimer = this.clock.after(delay, () => {
      e.cancelTimer = undefined;
      if (e.removed || e.state !== EJECTED) return;
      e.state = PROBATION;
      this.addReady(e);
      this.onEvent?.("probation", e.key);
      this.becameReady();
    });
    this.onEvent?.("eject", e.key);
  }

  /** Something became ready: leave failfast and serve waiters in order. */
  becameReady(): void {
    if (this.ready.length === 0) return;
    if (this.failfast) {
      this.failfast = false;
      this.stats.gateOpen();
    }
    if (this.waiting === 0) return;
    let served = false;
    const now = this.clock.now();
    while (this.waiting > 0 && this.ready.length > 0) {
      const w = this.waiters[this.head++];
      if (w.settled) continue;
      const lease = this.pick(now)!;
      this.settle(w);
      this.stats.dequeued((now - w.t0) / 1000);
      w.resolve(lease);
      served = true;
    }
    this.compact();
    if (served) {
      this.stopFailfastTimer();
      if (this.waiting > 0) this.startFailfastTimer();
    }
  }

  settle(w: Waiter<T>): void {
    w.settled = true;
    this.waiting--;
    if (w.onAbort) w.signal!.removeEventListener("abort", w.onAbort);
  }

  compact(): void {
    if (this.waiting === 0) {
      this.waiters = [];
      this.head = 0;
      this.stopFailfastTimer();
    } else if (this.head > 64 && this.head * 2 > this.waiters.length) {
      this.waiters = this.waiters.slice(this.head).filter((w) => !w.settled);
      this.head = 0;
    }
  }

  startFailfastTimer(): void {
    if (this.cancelFailfast) return;
    this.cancelFailfast = this.clock.after(this.queue.failfastMs, () => {
      this.cancelFailfast = undefined;
      this.enterFailfast();
    });
  }

  stopFailfastTimer(): void {
    this.cancelFailfast?.();
    this.cancelFailfast = undefined;
  }

  unavailable(): HttpError {
    if (this.closed) {
      return new HttpError(503, `balancer for ${this.name} is closed`, "no_endpoints", 14);
    }
    if (this.entries.size === 0) {
      return new HttpError(
        503,
        `no endpoints for ${this.name} (waited ${this.queue.failfastMs} ms)`,
        "no_endpoints",
        14,
      );
    }
    return new HttpError(
      503,
      `none of the ${this.entries.size} endpoints of ${this.name} became available within ${this.queue.failfastMs} ms`,
      "failfast",
      14,
    );
  }

  /** Fails every waiter; `shut` (the failfast timer, not `close`) counts as the gate shutting. */
  enterFailfast(shut = true): void {
    if (shut && !this.failfast) this.stats.gateShut();
    this.failfast = true;
    const err = this.unavailable();
    const ws = this.waiters;
    const now = this.head < ws.length ? this.clock.now() : 0;
    for (let i = this.head; i < ws.length; i++) {
      const w = ws[i];
      if (w.settled) continue;
      this.settle(w);
      this.stats.dequeued((now - w.t0) / 1000);
      w.reject(err);
    }
    this.compact();
  }

  /** A request given to the balancer and served at once: it passed the queue without waiting. */
  servedAtOnce(): void {
    const s = this.stats;
    s.queueRequests++;
    s.queueLatency[0]++;
  }

  acquire(signal: AbortSignal | undefined): Promise<Lease<T>> {
    const lease = this.pick();
    if (lease) {
      this.servedAtOnce();
      return Promise.resolve(lease);
    }
    if (signal?.aborted) return Promise.reject(signal.reason);
    if (this.failfast || this.closed) return Promise.reject(this.unavailable());
    if (this.waiting >= this.queue.capacity) {
      return Promise.reject(
        new HttpError(
          503,
          `${this.waiting} requests already wait for an endpoint of ${this.name}`,
          "queue_full",
          14,
        ),
      );
    }
    this.stats.queueRequests++;
    return new Promise<Lease<T>>((resolve, reject) => {
      const w: Waiter<T> = {
        resolve,
        reject,
        signal,
        onAbort: undefined,
        settled: false,
        t0: this.clock.now(),
      };
      if (signal) {
        w.onAbort = () => {
          if (w.settled) return;
          this.settle(w);
          this.stats.dequeued((this.clock.now() - w.t0) / 1000);
          this.compact();
          reject(signal.reason);
        };
        signal.addEventListener("abort", w.onAbort, { once: true });
      }
      this.waiters.push(w);
      this.waiting++;
      this.startFailfastTimer();
    });
  }
}

export class Balancer<T> {
  #core: Core<T>;

  constructor(options: BalancerOptions = {}) {
    this.#core = new Core(options);
  }

  #initiallyDown: ((key: string) => boolean) | undefined;

  /**
   * Where a new endpoint's reachability comes from (an endpoint already known to be unreachable
   * starts out of rotation).
   */
  set reachability(isDown: ((key: string) => boolean) | undefined) {
    this.#initiallyDown = isDown;
  }

  /**
   * Takes an endpoint out of rotation while its connection cannot be made, and puts it back (in the
   * state failure accrual left it) when it can. Waiters are served as soon as one comes back.
   */
  setReachable(key: string, reachable: boolean): void {
    const c = this.#core;
    const e = c.entries.get(key);
    if (!e || e.down === !reachable) return;
    e.down = !reachable;
    if (e.down) {
      c.removeReady(e);
      c.onEvent?.("unreachable", key);
      return;
    }
    c.onEvent?.("reachable", key);
    if (e.state === READY || e.state === PROBATION) {
      c.addReady(e);
      c.becameReady();
    }
  }

  /** Replaces the endpoint set; see the module comment for what is kept. */
  update(endpoints: ReadonlyMap<string, T>): void {
    const c = this.#core;
    for (const [key, e] of c.entries) {
      if (endpoints.has(key)) continue;
      e.removed = true;
      e.cancelTimer?.();
      e.cancelTimer = undefined;
      c.removeReady(e);
      c.entries.delete(key);
      c.stats.updatesRemove++;
    }
    let added = false;
    const now = c.clock.now();
    for (const [key, value] of endpoints) {
      const e = c.entries.get(key);
      if (e) {
        if (e.value !== value) {
          e.value = value;
          c.stats.updatesAdd++;
        }
        continue;
      }
      const fresh = new Entry(key, value, c.ewma, now);
      fresh.down = this.#initiallyDown?.(key) ?? false;
      c.entries.set(key, fresh);
      c.addReady(fresh);
      c.stats.updatesAdd++;
      added = true;
    }
    if (added) c.becameReady();
  }

  /**
   * A ready endpoint chosen by P2C, or undefined when none is ready (never waits). `now` (the
   * balancer clock's reading, e.g. shared with latency metrics) saves a clock read.
   */
  pick(now?: number): Lease<T> | undefined {
    const c = this.#core;
    const lease = c.pick(now);
    if (lease) c.servedAtOnce();
    return lease;
  }

  /** `pick()`, or wait in the queue; rejects with HttpError 503 or the signal's reason. */
  acquire(signal?: AbortSignal): Promise<Lease<T>> {
    return this.#core.acquire(signal);
  }

  /** Endpoints in the set. */
  get size(): number {
    return this.#core.entries.size;
  }

  /** Endpoints that can take a request now (ready, or in probation with the probe unused). */
  get readyCount(): number {
    return this.#core.ready.length;
  }

  /** Requests waiting in the queue. */
  get waiting(): number {
    return this.#core.waiting;
  }

  /** Queue and endpoint-update counts (`outbound_http_balancer_*`). */
  get stats(): BalancerStats {
    return this.#core.stats;
  }

  /** The failfast timeout, ms. */
  get failfastMs(): number {
    return this.#core.queue.failfastMs;
  }

  /** True while new requests fail at once (see the module comment). */
  get failingFast(): boolean {
    return this.#core.failfast && this.#core.ready.length === 0;
  }

  stateOf(key: string): EndpointState | undefined {
    const e = this.#core.entries.get(key);
    return e ? STATE_NAMES[e.state] : undefined;
  }

  /** Current load estimate of an endpoint (for tests and diagnostics). */
  loadOf(key: string): { rttMs: number; pending: number } | undefined {
    const e = this.#core.entries.get(key);
    return e ? { rttMs: e.ewma.rttMs, pending: e.ewma.pending } : undefined;
  }

  /** Stops timers and fails waiting requests; later acquires fail at once. */
  close(): void {
    const c = this.#core;
    c.closed = true;
    for (const e of c.entries.values()) {
      e.cancelTimer?.();
      e.cancelTimer = undefined;
    }
    c.enterFailfast(false);
    c.stopFailfastTimer();
  }
}
