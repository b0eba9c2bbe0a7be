/** The identity controller's metrics, on the prom-client Registry served at the admin `/metrics`. */
import { Counter, Gauge, Histogram, type Registry } from "prom-client";
import type { Issuer, TrustAnchors } from "./issuer.ts";

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
  #issuer: () => Issuer | undefined = () => undefined;
  #anchors: () => TrustAnchors | undefined = () => undefined;
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
    const currentIssuer = () => this.#issuer();
    const currentAnchors = () => this.#anchors() ?? this.#issuer()?.anchors;
    const now = () => this.#now();
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
        const anchors = currentAnchors();
        this.reset();
        if (!anchors) return;
        for (const a of anchors.certs) {
          this.set(
            { subject: a.subject, serial: a.serialNumber },
            (a.notAfter.getTime() - now()) / 1000,
          );
        }
      },
    });
  }

  /** Where the TTL gauges read the current issuer, the anchors and the time. */
  observe(
    current: () => Issuer | undefined,
    anchors: () => TrustAnchors | undefined,
    now: () => number,
  ): void {
    this.#issuer = current;
    this.#anchors = anchors;
    this.#now = now;
  }
}
