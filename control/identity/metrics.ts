/** The identity controller's metrics, on the prom-client Registry served at the admin `/metrics`. */
import { Counter, Gauge, Histogram, type Registry } from "prom-client";
import type { CertInfo } from "./cert_info.ts";
import type { Issuer } from "./issuer.ts";

/** What the scraped gauges read: the issuer reloader, in practice. */
export interface IdentityState {
  current(): Issuer | undefined;
  currentInfo(): CertInfo | undefined;
  anchorInfos(): CertInfo[];
  issuerTrusted(): boolean | undefined;
  caTrusted(): boolean | undefined;
}

/** A gauge whose value is read when scraped. */
class SampledGauge {
  #read: (() => number) | undefined;
  constructor(registry: Registry, name: string, help: string) {
    const reader = () => this.#read;
    new Gauge({
      name,
      help,
      registers: [registry],
      collect() {
        const read = reader();
        if (read) this.set(read());
      },
    });
  }
  collectFrom(read: () => number): void {
    this.#read = read;
  }
}

export class IdentityMetrics {
  readonly issued: Counter;
  readonly rejected: Counter<"reason">;
  readonly certifyDuration: Histogram<"result">;
  readonly issuerReloads: Counter<"result">;
  readonly tokenReviews: Counter<"result">;
  readonly tokenReviewsCoalesced: Counter;
  readonly tokenReviewDuration: Histogram;
  readonly tokenReviewQueue: SampledGauge;
  readonly trustRootsWrites: Counter<"result">;
  readonly trustBundleReloads: Counter<"result">;
  #state: IdentityState | undefined;
  #now: () => number = Date.now;

  constructor(registry: Registry) {
    const registers = [registry];
    this.issued = new Counter({
      name: "identity_certificates_issued_total",
      help: "Workload certificates issued.",
      registers,
    });
    this.rejected = new Counter({
      name: "identity_certificates_rejected_total",
      help: "Certify requests refused, by reason.",
      labelNames: ["reason"],
      registers,
    });
    this.certifyDuration = new Histogram({
      name: "identity_certify_duration_seconds",
      help: "Time to answer a Certify request, TokenReview included.",
      labelNames: ["result"],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers,
    });
    this.issuerReloads = new Counter({
      name: "identity_issuer_reloads_total",
      help: "Issuer certificate loads from the Secret, by result (failure keeps the previous issuer).",
      labelNames: ["result"],
      registers,
    });
    this.tokenReviews = new Counter({
      name: "identity_token_reviews_total",
      help: "TokenReviews by result: authenticated, unauthenticated, error, throttled.",
      labelNames: ["result"],
      registers,
    });
    this.tokenReviewsCoalesced = new Counter({
      name: "identity_token_reviews_coalesced_total",
      help: "Certify requests that shared an in-flight TokenReview for the same token.",
      registers,
    });
    this.tokenReviewDuration = new Histogram({
      name: "identity_token_review_duration_seconds",
      help: "TokenReview latency, rate-limit wait included.",
      buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers,
    });
    this.tokenReviewQueue = new SampledGauge(
      registry,
      "identity_token_review_waiting",
      "TokenReviews waiting for the rate limit.",
    );
    this.trustRootsWrites = new Counter({
      name: "weft_identity_trust_roots_writes_total",
      help: "Writes of weft-issuers.crt / weft-renew-before to the trust-roots ConfigMap, by result " +
        "(error: retried with backoff).",
      labelNames: ["result"],
      registers,
    });
    this.trustBundleReloads = new Counter({
      name: "weft_identity_trust_bundle_reloads_total",
      help: "Trust anchor bundles read from the ConfigMap, by result (error: refused, the previous stays).",
      labelNames: ["result"],
      registers,
    });
    const state = () => this.#state;
    const currentIssuer = () => this.#state?.current();
    const now = () => this.#now();
    const unix = (d: Date) => Math.floor(d.getTime() / 1000);
    new Gauge({
      name: "identity_cert_expiration_timestamp_seconds",
      help: "When the issuer certificate identity signs with expires (Unix seconds), as Linkerd's identity.",
      registers,
      collect() {
        const issuer = currentIssuer();
        if (issuer) this.set(unix(issuer.notAfter));
      },
    });
    new Gauge({
      name: "weft_identity_trust_anchor_expiration_timestamp_seconds",
      help: "Each trust anchor identity verifies issuers against, by SHA-256 of its DER: when it expires.",
      labelNames: ["fingerprint_sha256", "subject"],
      registers,
      collect() {
        this.reset();
        for (const a of state()?.anchorInfos() ?? []) {
          this.set({ fingerprint_sha256: a.fingerprint, subject: a.subject }, unix(a.notAfter));
        }
      },
    });
    new Gauge({
      name: "weft_identity_issuer_info",
      help: "The issuer identity signs with now (value 1).",
      labelNames: ["fingerprint_sha256", "subject"],
      registers,
      collect() {
        this.reset();
        const i = state()?.currentInfo();
        if (i) this.set({ fingerprint_sha256: i.fingerprint, subject: i.subject }, 1);
      },
    });
    new Gauge({
      name: "weft_identity_issuer_trusted",
      help:
        "1 when the current issuer chains to the current trust anchors, 0 when an anchor change broke that.",
      registers,
      collect() {
        this.reset();
        const t = state()?.issuerTrusted();
        if (t !== undefined) this.set(t ? 1 : 0);
      },
    });
    new Gauge({
      name: "weft_identity_issuer_secret_ca_trusted",
      help: "1 when the issuer Secret's ca.crt (cert-manager) is in the trust anchor bundle, 0 when not; " +
        "absent when the Secret has no ca.crt.",
      registers,
      collect() {
        this.reset();
        const t = state()?.caTrusted();
        if (t !== undefined) this.set(t ? 1 : 0);
      },
    });
    new Gauge({
      name: "issuer_cert_ttl_seconds",
      help: "Seconds until the issuer certificate expires (negative once expired).",
      registers,
      collect() {
        const issuer = currentIssuer();
        if (issuer) this.set((issuer.notAfter.getTime() - now()) / 1000);
      },
    });
    new Gauge({
      name: "identity_trust_anchor_ttl_seconds",
      help: "Seconds until each trust anchor expires (negative once expired).",
      labelNames: ["subject", "serial"],
      registers,
      collect() {
        this.reset();
        for (const { cert: a } of state()?.anchorInfos() ?? []) {
          this.set(
            { subject: a.subject, serial: a.serialNumber },
            (a.notAfter.getTime() - now()) / 1000,
          );
        }
      },
    });
  }

  /** Where the certificate gauges read the issuer, the anchors and the time. */
  observe(state: IdentityState, now: () => number): void {
    this.#state = state;
    this.#now = now;
  }
}
