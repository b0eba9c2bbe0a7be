/**
 * Keeps `weft-issuers.crt` and `weft-renew-before` in the trust-roots ConfigMap in step with the
 * issuer identity signs with (see trust_roots.ts for what they hold). Off the request path: a change
 * only marks the ConfigMap dirty; one write runs at a time (read, plan, merge-patch with the read
 * resourceVersion as a precondition), and a failed one is logged and retried with exponential
 * backoff. Certify never waits for it.
 */
import type { Clock } from "../../proto/support/clock.ts";
import type { x509 } from "../../proto/support/x509.ts";
import { shortFingerprint } from "./cert_info.ts";
import type { IdentityMetrics } from "./metrics.ts";
import { ISSUERS_KEY, type LoadedIssuer, planTrustRoots, RENEW_BEFORE_KEY } from "./trust_roots.ts";

/** The ConfigMap, as far as the publisher needs it. */
export interface TrustRootsClient {
  /** Its data and resourceVersion, or undefined when it does not exist. */
  get(): Promise<{ data: Record<string, string>; resourceVersion?: string } | undefined>;
  /** Merges `data` into it; fails (e.g. 409) when its resourceVersion is no longer `resourceVersion`. */
  patch(data: Record<string, string>, resourceVersion?: string): Promise<void>;
}

export interface PublisherOptions {
  client: TrustRootsClient;
  clock: Clock;
  clockSkewMs: number;
  /** Names the ConfigMap in log lines. */
  what: string;
  log?: (line: string) => void;
  metrics?: IdentityMetrics;
  backoff?: { initialMs: number; maxMs: number };
  /**
   * Whether this replica may write (it leads the trust-roots Lease, control/k8s/leader_election.ts);
   * always when unset. A follower keeps its issuers current and writes nothing; `kick()` on gaining
   * leadership does the full pass.
   */
  canWrite?: () => boolean;
}

/** Longest a pruning timer is set for (setTimeout's limit is ~24.8 days). */
const MAX_TIMER_MS = 24 * 3_600_000;

export class TrustRootsPublisher {
  #current: LoadedIssuer | undefined;
  #currentFingerprint = "";
  #previous = new Map<string, LoadedIssuer>();
  #dirty = false;
  #writing = false;
  #waiting = false;
  #attempt = 0;
  #stopped = false;
  #cancelRetry: (() => void) | undefined;
  #cancelExpiry: (() => void) | undefined;
  #idle: Promise<void> = Promise.resolve();
  #resolveIdle: () => void = () => {};
  readonly #log: (line: string) => void;

  constructor(private readonly o: PublisherOptions) {
    this.#log = o.log ?? (() => {});
  }

  /** The issuer identity now signs with (`chain`: issuer first, intermediates after). */
  setIssuer(chain: x509.X509Certificate[], fingerprint: string): void {
    // The same issuer verified again (e.g. after an anchor change) keeps the time it became current.
    if (this.#currentFingerprint === fingerprint) return this.kick();
    if (this.#current) this.#previous.set(this.#currentFingerprint, this.#current);
    this.#previous.delete(fingerprint);
    this.#current = { chain, since: this.o.clock.now() };
    this.#currentFingerprint = fingerprint;
    this.#log(
      `trust roots: issuer ${shortFingerprint(fingerprint)} is current; publishing it to ${this.o.what}`,
    );
    this.kick();
  }

  /** Something the plan reads changed (the ConfigMap, the anchors): reconcile soon. */
  kick(): void {
    if (this.#stopped || !this.#current || !this.#canWrite()) return;
    this.#dirty = true;
    if (!this.#writing && !this.#waiting) void this.#drain();
  }

  /** Resolves once no write is running or due (for tests). */
  idle(): Promise<void> {
    return this.#idle;
  }

  #canWrite(): boolean {
    return this.o.canWrite?.() ?? true;
  }

  stop(): void {
    this.#stopped = true;
    this.#cancelRetry?.();
    this.#cancelExpiry?.();
  }

  async #drain(): Promise<void> {
    this.#writing = true;
    if (this.#attempt === 0) this.#idle = new Promise((r) => this.#resolveIdle = r);
    while (this.#dirty && !this.#stopped) {
      this.#dirty = false;
      if (!this.#canWrite()) break;
      try {
        await this.#writeOnce();
        this.#attempt = 0;
      } catch (e) {
        this.#dirty = true;
        const b = this.o.backoff ?? { initialMs: 1000, maxMs: 60_000 };
        const base = Math.min(b.maxMs, b.initialMs * 2 ** this.#attempt);
        const delay = Math.round(base * (0.9 + 0.2 * Math.random()));
        this.#attempt++;
        this.o.metrics?.trustRootsWrites.inc({ result: "error" });
        this.#log(
          `trust roots: cannot update ${this.o.what} (attempt ${this.#attempt}, retrying in ${delay}ms; ` +
            `issuance is not affected): ${(e as Error).message ?? e}`,
        );
        this.#waiting = true;
        this.#cancelRetry = this.o.clock.after(delay, () => {
          this.#waiting = false;
          if (!this.#writing) void this.#drain();
        });
        break;
      }
    }
    this.#writing = false;
    if (!this.#waiting) this.#resolveIdle();
  }

  async #writeOnce(): Promise<void> {
    const current = this.#current!;
    const now = this.o.clock.now();
    for (const [k, p] of this.#previous) if (p.chain[0].notAfter.getTime() < now) this.#previous.delete(k);
    const cm = await this.o.client.get();
    if (!cm) throw new Error(`${this.o.what} does not exist`);
    const plan = await planTrustRoots({
      data: cm.data,
      current,
      previous: [...this.#previous.values()],
      clockSkewMs: this.o.clockSkewMs,
      now,
    });
    for (const n of plan.notes) this.#log(`trust roots: ${n}`);
    const keys = Object.keys(plan.patch);
    if (keys.length > 0) {
      await this.o.client.patch(plan.patch, cm.resourceVersion);
      this.o.metrics?.trustRootsWrites.inc({ result: "ok" });
      const parts: string[] = [];
      if (ISSUERS_KEY in plan.patch) {
        parts.push(
          `${ISSUERS_KEY}: ${
            plan.issuers.map((i) => `${shortFingerprint(i.fingerprint)} "${i.subject}"`).join(", ") || "none"
          }`,
        );
      }
      if (RENEW_BEFORE_KEY in plan.patch) parts.push(`${RENEW_BEFORE_KEY}: ${plan.patch[RENEW_BEFORE_KEY]}`);
      this.#log(`trust roots: updated ${this.o.what}: ${parts.join("; ")}`);
    }
    this.#cancelExpiry?.();
    if (plan.nextExpiry !== undefined) {
      const inMs = Math.min(MAX_TIMER_MS, Math.max(1000, plan.nextExpiry - now + 1000));
      this.#cancelExpiry = this.o.clock.after(inMs, () => this.kick());
    }
  }
}
