/**
 * Leader election over a `coordination.k8s.io/v1` Lease, with client-go's semantics, so that of the
 * replicas of a component only one writes back to the API while the others stay hot.
 *
 * - A candidate reads the Lease; it takes it when it is missing (create), released (empty holder),
 *   its own, or expired. Expiry is judged on the local clock: the record (resourceVersion) has not
 *   changed for `leaseDurationSeconds` since this candidate first saw it, so clocks of other nodes
 *   never matter (as client-go's observedTime).
 * - Every write carries the read resourceVersion (optimistic concurrency): of two candidates racing
 *   for an expired Lease one gets 409 and stays a follower.
 * - The leader renews every `retryPeriod` with the record it last wrote; a 409 (someone else wrote
 *   the Lease) makes it step down at once, and so does failing to renew for `renewDeadline` — also
 *   when the API does not answer at all: a timer, not the request, decides. `renewDeadline` is
 *   shorter than `leaseDuration`, so the old leader has stopped before anyone else can take over.
 * - On abort the leader steps down first, then releases the Lease (empty holder,
 *   `leaseDurationSeconds: 1`) so a follower takes over on its next attempt instead of waiting for
 *   expiry.
 */
import { Gauge, type Registry } from "prom-client";
import type { Clock } from "../../proto/support/clock.ts";
import type { ObjectMeta } from "./types.ts";

export interface LeaseSpec {
  holderIdentity?: string | null;
  leaseDurationSeconds?: number | null;
  /** MicroTime: RFC 3339 with microseconds. */
  acquireTime?: string | null;
  renewTime?: string | null;
  leaseTransitions?: number | null;
}

export interface Lease {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  spec?: LeaseSpec;
}

/** 409 from a create or an update: someone else wrote the Lease first. */
export class LeaseConflictError extends Error {}

/** The calls the elector makes on one Lease (lease_client.ts over the API server; a fake in tests). */
export interface LeaseApi {
  /** The Lease, or undefined when it does not exist. */
  get(signal: AbortSignal): Promise<Lease | undefined>;
  /** Creates it; throws LeaseConflictError when it exists. */
  create(lease: Lease, signal: AbortSignal): Promise<Lease>;
  /** Replaces it; throws LeaseConflictError when its resourceVersion is no longer the given one. */
  update(lease: Lease, signal: AbortSignal): Promise<Lease>;
}

export interface LeaderElectionOptions {
  api: LeaseApi;
  clock: Clock;
  /** Names the Lease in logs and the `weft_leader{lease}` metric. */
  lease: string;
  namespace: string;
  /** This candidate: the pod name. */
  identity: string;
  leaseDurationSeconds?: number;
  renewDeadlineSeconds?: number;
  retryPeriodSeconds?: number;
  registry?: Registry;
  log?: (line: string) => void;
  /** For the followers' jitter (tests pass a constant). */
  random?: () => number;
}

export const LEASE_DURATION_SECONDS = 15;
export const RENEW_DEADLINE_SECONDS = 10;
export const RETRY_PERIOD_SECONDS = 2;

/** Kubernetes MicroTime: `2026-01-01T00:00:00.123000Z`. */
export function microTime(ms: number): string {
  return new Date(ms).toISOString().replace(/\.(\d{3})Z$/, ".$1000Z");
}

type Attempt = "leading" | "following";

export class LeaderElector {
  readonly #o: LeaderElectionOptions;
  readonly #api: LeaseApi;
  readonly #durationMs: number;
  readonly #deadlineMs: number;
  readonly #retryMs: number;
  readonly #gauge: Gauge | undefined;
  readonly #listeners = new Set<(leading: boolean) => void>();
  #leading = false;
  /** The record last read or written, and when (local clock) it was first seen. */
  #observed: Lease | undefined;
  #observedAt = 0;
  #holder = "";
  #cancelDeadline: (() => void) | undefined;
  /** Aborts the request in flight when the renew deadline passes. */
  #attempt: AbortController | undefined;
  #done: Promise<void> = Promise.resolve();
  #lastError = "";

  constructor(o: LeaderElectionOptions) {
    this.#o = o;
    this.#api = abortable(o.api);
    this.#durationMs = (o.leaseDurationSeconds ?? LEASE_DURATION_SECONDS) * 1000;
    this.#deadlineMs = (o.renewDeadlineSeconds ?? RENEW_DEADLINE_SECONDS) * 1000;
    this.#retryMs = (o.retryPeriodSeconds ?? RETRY_PERIOD_SECONDS) * 1000;
    if (!(this.#deadlineMs < this.#durationMs)) {
      throw new Error(`lease ${o.lease}: renewDeadline must be shorter than leaseDuration`);
    }
    if (!(this.#retryMs < this.#deadlineMs)) {
      throw new Error(`lease ${o.lease}: retryPeriod must be shorter than renewDeadline`);
    }
    if (!o.identity) throw new Error(`lease ${o.lease}: empty identity`);
    if (o.registry) {
      const existing = o.registry.getSingleMetric("weft_leader");
      this.#gauge = existing instanceof Gauge ? existing : new Gauge({
        name: "weft_leader",
        help: "1 while this replica holds the named leader-election Lease, else 0",
        labelNames: ["lease"],
        registers: [o.registry],
      });
      this.#gauge.set({ lease: o.lease }, 0);
    }
  }

  get identity(): string {
    return this.#o.identity;
  }

  isLeader(): boolean {
    return this.#leading;
  }

  /** The holder last seen on the Lease ("" when free or unknown). */
  holder(): string {
    return this.#holder;
  }

  /** Called with true on gaining leadership and false on losing it; returns an unsubscribe. */
  onChange(listener: (leading: boolean) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Runs until `signal` aborts; the returned promise settles after the release. Never rejects. */
  start(signal: AbortSignal): Promise<void> {
    this.#done = this.#run(signal);
    return this.#done;
  }

  async #run(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      const result = await this.#tryOnce(signal);
      if (signal.aborted) break;
      await this.#sleep(this.#nextDelay(result), signal);
    }
    await this.#release();
  }

  #nextDelay(result: Attempt): number {
    if (result === "leading") return this.#retryMs;
    const jittered = this.#retryMs * (1 + 0.2 * (this.#o.random ?? Math.random)());
    // Attempt right when the observed holder's lease would expire, if that comes sooner.
    const holder = this.#observed?.spec?.holderIdentity ?? "";
    if (holder !== "" && holder !== this.#o.identity) {
      const expiry = this.#observedAt + this.#leaseMs(this.#observed) - this.#o.clock.now() + 1;
      if (expiry > 0 && expiry < jittered) return expiry;
    }
    return jittered;
  }

  #leaseMs(lease: Lease | undefined): number {
    const s = lease?.spec?.leaseDurationSeconds;
    return typeof s === "number" && s > 0 ? s * 1000 : this.#durationMs;
  }

  async #tryOnce(signal: AbortSignal): Promise<Attempt> {
    const ctl = new AbortController();
    this.#attempt = ctl;
    const onAbort = () => ctl.abort();
    signal.addEventListener("abort", onAbort, { once: true });
    // No call may outlast the renew deadline (client-go bounds each try the same way).
    const cancelTimeout = this.#o.clock.after(this.#deadlineMs, () => ctl.abort());
    try {
      const got = await this.#acquireOrRenew(ctl.signal);
      // An answer that came after the deadline (the API ignored the abort) does not count.
      if (ctl.signal.aborted && !signal.aborted) throw new Error("no answer within the renew deadline");
      this.#lastError = "";
      if (got) {
        this.#renewed();
        return "leading";
      }
      if (this.#leading) this.#stepDown(`the Lease is held by ${this.#holder}`);
      return "following";
    } catch (e) {
      if (signal.aborted) return "following";
      if (e instanceof LeaseConflictError) {
        // The Lease changed under us: someone else may hold it now; stop writing at once.
        this.#observed = undefined;
        if (this.#leading) this.#stepDown("conflict while renewing the Lease");
        return "following";
      }
      // The same failure every retryPeriod (e.g. no RBAC for Leases) is logged once.
      const m = `${this.#leading ? "renew" : "acquire"} failed: ${(e as Error).message}`;
      if (m !== this.#lastError) this.#o.log?.(`lease ${this.#o.lease}: ${m}`);
      this.#lastError = m;
      return this.#leading ? "leading" : "following";
    } finally {
      cancelTimeout();
      signal.removeEventListener("abort", onAbort);
      this.#attempt = undefined;
    }
  }

  /** True when this candidate holds the Lease after the call. */
  async #acquireOrRenew(signal: AbortSignal): Promise<boolean> {
    const me = this.#o.identity;
    const now = this.#o.clock.now();
    // A leader renews the record it last wrote, without a read; a 409 means it is no longer current.
    if (this.#leading && this.#observed?.spec?.holderIdentity === me) {
      const updated = await this.#api.update(this.#renewal(this.#observed, now), signal);
      this.#observe(updated, true);
      return true;
    }
    const current = await this.#api.get(signal);
    if (!current) {
      const created = await this.#api.create({
        apiVersion: "coordination.k8s.io/v1",
        kind: "Lease",
        metadata: { name: this.#o.lease, namespace: this.#o.namespace },
        spec: {
          holderIdentity: me,
          leaseDurationSeconds: this.#durationMs / 1000,
          acquireTime: microTime(now),
          renewTime: microTime(now),
          leaseTransitions: 0,
        },
      }, signal);
      this.#observe(created, true);
      return true;
    }
    this.#observe(current, false);
    const holder = current.spec?.holderIdentity ?? "";
    if (holder !== "" && holder !== me && this.#observedAt + this.#leaseMs(current) > this.#o.clock.now()) {
      return false;
    }
    const updated = await this.#api.update(this.#renewal(current, now), signal);
    this.#observe(updated, true);
    if (holder !== me) {
      this.#o.log?.(`lease ${this.#o.lease}: acquired by ${me}${holder ? ` (was ${holder})` : ""}`);
    }
    return true;
  }

  /** The record with this candidate as holder, renewed at `now`. */
  #renewal(current: Lease, now: number): Lease {
    const me = this.#o.identity;
    const spec = current.spec ?? {};
    const mine = spec.holderIdentity === me;
    return {
      ...current,
      spec: {
        ...spec,
        holderIdentity: me,
        leaseDurationSeconds: this.#durationMs / 1000,
        acquireTime: mine && spec.acquireTime ? spec.acquireTime : microTime(now),
        renewTime: microTime(now),
        leaseTransitions: (spec.leaseTransitions ?? 0) + (mine ? 0 : 1),
      },
    };
  }

  #observe(lease: Lease, written: boolean): void {
    const changed = written || !this.#observed ||
      this.#observed.metadata.resourceVersion !== lease.metadata.resourceVersion;
    if (changed) this.#observedAt = this.#o.clock.now();
    this.#observed = lease;
    this.#holder = lease.spec?.holderIdentity ?? "";
  }

  /** A successful acquire or renew: (re)arm the deadline by which the next must succeed. */
  #renewed(): void {
    this.#cancelDeadline?.();
    this.#cancelDeadline = this.#o.clock.after(this.#deadlineMs, () => {
      this.#cancelDeadline = undefined;
      this.#attempt?.abort();
      if (this.#leading) this.#stepDown(`not renewed within ${this.#deadlineMs / 1000}s`);
    });
    if (!this.#leading) {
      this.#leading = true;
      this.#gauge?.set({ lease: this.#o.lease }, 1);
      this.#o.log?.(`lease ${this.#o.lease}: ${this.#o.identity} is the leader`);
      this.#emit(true);
    }
  }

  #stepDown(why: string): void {
    this.#cancelDeadline?.();
    this.#cancelDeadline = undefined;
    if (!this.#leading) return;
    this.#leading = false;
    this.#gauge?.set({ lease: this.#o.lease }, 0);
    this.#o.log?.(`lease ${this.#o.lease}: ${this.#o.identity} stopped leading: ${why}`);
    this.#emit(false);
  }

  #emit(leading: boolean): void {
    for (const l of [...this.#listeners]) {
      try {
        l(leading);
      } catch (e) {
        this.#o.log?.(`lease ${this.#o.lease}: listener failed: ${(e as Error).message}`);
      }
    }
  }

  /** Steps down, then hands the Lease back so a follower need not wait for it to expire. */
  async #release(): Promise<void> {
    const wasLeading = this.#leading;
    this.#stepDown("shutting down");
    const observed = this.#observed;
    if (!wasLeading || observed?.spec?.holderIdentity !== this.#o.identity) return;
    const now = this.#o.clock.now();
    const ctl = new AbortController();
    const cancel = this.#o.clock.after(this.#deadlineMs, () => ctl.abort());
    try {
      await this.#api.update({
        ...observed,
        spec: {
          ...observed.spec,
          holderIdentity: "",
          leaseDurationSeconds: 1,
          acquireTime: microTime(now),
          renewTime: microTime(now),
        },
      }, ctl.signal);
      this.#holder = "";
      this.#o.log?.(`lease ${this.#o.lease}: released by ${this.#o.identity}`);
    } catch (e) {
      this.#o.log?.(`lease ${this.#o.lease}: cannot release: ${(e as Error).message}`);
    } finally {
      cancel();
    }
  }

  #sleep(ms: number, signal: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        cancel();
        signal.removeEventListener("abort", done);
        resolve();
      };
      const cancel = this.#o.clock.after(ms, done);
      signal.addEventListener("abort", done, { once: true });
    });
  }
}

/** The API with every call settling when its signal aborts, even if the client ignores the signal. */
function abortable(api: LeaseApi): LeaseApi {
  const race = <T>(p: Promise<T>, signal: AbortSignal): Promise<T> =>
    new Promise<T>((resolve, reject) => {
      if (signal.aborted) return reject(new Error("aborted"));
      const onAbort = () => reject(new Error("aborted"));
      signal.addEventListener("abort", onAbort, { once: true });
      p.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
    });
  return {
    get: (signal) => race(api.get(signal), signal),
    create: (lease, signal) => race(api.create(lease, signal), signal),
    update: (lease, signal) => race(api.update(lease, signal), signal),
  };
}
