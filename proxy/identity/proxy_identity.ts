/**
 * The proxy's identity loop: generate a key and CSR once, Certify with the current token, check
 * the answer, hand it to the CertStore (the TLS layer reads `store.current()` per handshake),
 * then renew at ~70% of the remaining lifetime. Failures back off exponentially; the current
 * certificate keeps serving until it expires.
 */
import type { Registry } from "../metrics/registry.ts";
import { type CertifyClient, createCertifyClient } from "./certify_client.ts";
import { controlMetricsFor } from "../metrics/control_metrics.ts";
import type { CertStore } from "../core/cert_store.ts";
import { type Clock, systemClock } from "../../proto/support/clock.ts";
import type { ProxyIdentityConfig } from "./config.ts";
import { generateLocalKey, type LocalKey } from "./key_and_csr.ts";
import { ProxyIdentityMetrics } from "./metrics.ts";
import { parseCertificateBundle, type ParsedCertificate } from "./cert_parse.ts";
import { backoffDelayMs, earlyRenewalDelayMs, mustRenewEarly, refreshDelayMs } from "./refresh_schedule.ts";
import type { TrustBundle, TrustStore } from "../core/trust_store.ts";
import { verifyCertifyResponse } from "./verify_response.ts";

/** Longest wait between attempts before the first certificate. */
export const FIRST_CERT_MAX_BACKOFF_MS = 5000;

export interface ProxyIdentityDeps {
  store: CertStore;
  registry?: Registry;
  clock?: Clock;
  random?: () => number;
  log?: (line: string) => void;
  /** Replaces the gRPC client (tests of failure handling). */
  client?: CertifyClient;
  /**
   * The live trust bundle (issue 21): a new leaf must chain to its anchors at the time of the
   * Certify, and the identity service's certificate is checked against them. Without it, the
   * configured anchors for the process's life.
   */
  trust?: TrustStore;
}

export class ProxyIdentity {
  readonly #configAnchors: ParsedCertificate[];
  #anchorsFor: TrustBundle | undefined;
  #anchors: ParsedCertificate[] = [];
  /** The current leaf's notBefore and when this proxy fetched it (clock time). */
  #leaf: { notBefore: number; fetchedAt: number } | undefined;
  /** Wakes the run loop's sleep when the next refresh moves earlier. */
  #wake: (() => void) | undefined;
  readonly #clock: Clock;
  readonly #random: () => number;
  readonly #log: (line: string) => void;
  readonly #metrics: ProxyIdentityMetrics | undefined;
  readonly #client: CertifyClient;
  #key: LocalKey | undefined;
  #failures = 0;
  /** Time of the next scheduled Certify (for tests and diagnostics). */
  nextRefreshAt: number | undefined;
  lastError: string | undefined;

  constructor(readonly config: ProxyIdentityConfig, private readonly deps: ProxyIdentityDeps) {
    this.#configAnchors = parseCertificateBundle(config.trustAnchorsPem, "trust anchors");
    this.#clock = deps.clock ?? systemClock;
    this.#random = deps.random ?? Math.random;
    this.#log = deps.log ?? ((l) => console.log(`identity: ${l}`));
    this.#metrics = deps.registry ? new ProxyIdentityMetrics(deps.registry) : undefined;
    this.#client = deps.client ??
      createCertifyClient({
        ...config,
        trustAnchorsPem: () => this.#anchorsPem(),
        metrics: deps.registry && controlMetricsFor(deps.registry),
      });
  }

  #anchorsPem(): string {
    return this.deps.trust?.current().anchorsPem ?? this.config.trustAnchorsPem;
  }

  /** The anchors a new leaf must chain to now, parsed once per bundle. */
  #currentAnchors(): ParsedCertificate[] {
    const b = this.deps.trust?.current();
    if (b === undefined) return this.#configAnchors;
    if (this.#anchorsFor !== b) {
      this.#anchors = parseCertificateBundle(b.anchorsPem, "trust anchors");
      this.#anchorsFor = b;
    }
    return this.#anchors;
  }

  /**
   * `weft-renew-before` changed: when the current leaf was issued before `at`, renew after a random
   * 0–30 s instead of at the usual point. Returns the delay chosen, or undefined when not needed.
   */
  renewIfIssuedBefore(at: Date): number | undefined {
    const leaf = this.#leaf;
    if (leaf === undefined || !mustRenewEarly(leaf, at.getTime())) return undefined;
    const now = this.#clock.now();
    const delay = earlyRenewalDelayMs(this.#random);
    if (this.nextRefreshAt !== undefined && this.nextRefreshAt <= now + delay) return undefined;
    this.nextRefreshAt = now + delay;
    this.#log(`renewing within ${Math.round(delay / 1000)}s: the leaf was issued before ${at.toISOString()}`);
    this.#wake?.();
    return delay;
  }

  /** Runs until `signal` aborts, then closes the client. */
  async run(signal: AbortSignal): Promise<void> {
    try {
      while (!signal.aborted) {
        await this.refreshOnce();
        // Sleep until nextRefreshAt, which an early renewal may move closer meanwhile.
        while (!signal.aborted) {
          const left = (this.nextRefreshAt ?? 0) - this.#clock.now();
          if (left <= 0) break;
          await this.#sleep(left, signal);
        }
      }
    } finally {
      this.close();
    }
  }

  /** Closes the gRPC channel (run() does this when it ends). */
  close(): void {
    this.#client.close();
  }

  /** One Certify attempt; returns the delay until the next one. */
  async refreshOnce(): Promise<number> {
    this.#key ??= await generateLocalKey(this.config.localName);
    const key = this.#key;
    try {
      const token = await Deno.readFile(this.config.tokenFile).catch((e) => {
        throw new Error(`cannot read token file ${this.config.tokenFile}: ${e.message}`);
      });
      if (token.length === 0) throw new Error(`token file ${this.config.tokenFile} is empty`);
      const res = await this.#client.certify(
        { identity: this.config.localName, token, certificateSigningRequest: key.csr },
        this.config.certifyTimeoutMs,
      );
      const now = this.#clock.now();
      const accepted = verifyCertifyResponse(res, {
        localName: this.config.localName,
        spki: key.spki,
        anchors: this.#currentAnchors(),
        now,
      });
      this.deps.store.set({
        localName: this.config.localName,
        keyPem: key.keyPem,
        certChainPem: accepted.certChainPem,
        trustAnchorsPem: this.#anchorsPem(),
        expiresAt: accepted.expiresAt,
      });
      this.#leaf = { notBefore: accepted.leaf.notBefore.getTime(), fetchedAt: now };
      this.#metrics?.refreshes.inc({ result: "success" });
      this.#metrics?.expiration.set(accepted.expiresAt.getTime() / 1000);
      this.#failures = 0;
      this.lastError = undefined;
      const delay = refreshDelayMs(now, accepted.expiresAt.getTime(), this.config, this.#random);
      this.nextRefreshAt = now + delay;
      this.#log(
        `Certified identity ${this.config.localName} until ${accepted.expiresAt.toISOString()}; renewing in ${
          Math.round(delay / 1000)
        }s`,
      );
      return delay;
    } catch (e) {
      this.#failures++;
      this.#metrics?.refreshes.inc({ result: "failure" });
      const details = (e as { details?: string }).details;
      this.lastError = details || (e as Error).message || String(e);
      const now = this.#clock.now();
      let delay = backoffDelayMs(this.#failures, this.config.backoff, this.#random);
      const current = this.deps.store.current();
      if (current) {
        // Never wait past the current certificate's expiry, and not past the normal schedule.
        delay = Math.min(delay, Math.max(this.config.backoff.minMs, current.expiresAt.getTime() - now));
      } else {
        // Without a first certificate the pod serves nothing: keep retrying briskly (e.g. while the
        // identity controller is being replaced) instead of backing off for a minute.
        delay = Math.min(delay, Math.max(this.config.backoff.minMs, FIRST_CERT_MAX_BACKOFF_MS));
      }
      this.nextRefreshAt = now + delay;
      this.#log(
        `Certify failed (attempt ${this.#failures}): ${this.lastError}; ` +
          `${
            current ? `keeping the certificate valid until ${current.expiresAt.toISOString()}, ` : ""
          }retrying in ${delay}ms`,
      );
      return delay;
    }
  }

  #sleep(ms: number, signal: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      if (signal.aborted) return resolve();
      const onAbort = () => {
        cancel();
        resolve();
      };
      const done = () => {
        this.#wake = undefined;
        signal.removeEventListener("abort", onAbort);
        resolve();
      };
      const cancel = this.#clock.after(ms, done);
      this.#wake = () => {
        cancel();
        done();
      };
      signal.addEventListener("abort", onAbort, { once: true });
    });
  }
}
