/** The proxy's identity metrics, on the proxy's Registry. */
import { X509Certificate } from "node:crypto";
import type { MetricSnapshot, Registry } from "../metrics/registry.ts";
import type { CertStore, TlsCredentials } from "../core/cert_store.ts";
import {
  commonName,
  fingerprintHex,
  pemCertificates,
  signedBy,
  type TrustBundle,
  type TrustStore,
} from "../core/trust_store.ts";
import { Counter, Gauge } from "../metrics/instruments.ts";

export class ProxyIdentityMetrics {
  readonly expiration: Gauge;
  readonly refreshes: Counter;

  constructor(registry: Registry) {
    this.expiration = new Gauge({
      name: "identity_cert_expiration_timestamp_seconds",
      help: "Expiry of the proxy's current certificate, Unix seconds.",
      registers: [registry],
    });
    this.refreshes = new Counter({
      name: "identity_cert_refresh_total",
      help: "Certificate refresh attempts, by result (success or failure).",
      labelNames: ["result"],
      registers: [registry],
    });
  }
}

/**
 * The rotation metrics of issue 21's contract: the anchors this proxy trusts now, the issuer of its
 * current leaf, and trust-bundle reloads. The first two are read from the stores at scrape time,
 * so a series disappears with its anchor; the issuer is parsed once per certificate.
 */
export class TrustMetrics {
  readonly reloads: Counter;
  #issuerFor: TlsCredentials | undefined;
  #issuer: { fingerprint: string; subject: string } | undefined;

  constructor(registry: Registry, trust: TrustStore, certs: CertStore) {
    registry.registerMetric({
      name: "weft_identity_trust_anchor_expiration_timestamp_seconds",
      get: (): MetricSnapshot => ({
        name: "weft_identity_trust_anchor_expiration_timestamp_seconds",
        help: "Expiry of each trust anchor this proxy trusts now, Unix seconds.",
        type: "gauge",
        values: trust.current().anchors.map((a) => ({
          value: Date.parse(a.validTo) / 1000,
          labels: { fingerprint_sha256: fingerprintHex(a), subject: commonName(a) },
        })),
      }),
    });
    registry.registerMetric({
      name: "weft_identity_leaf_issuer_info",
      get: (): MetricSnapshot => {
        const i = this.#leafIssuer(certs.current(), trust.current());
        return {
          name: "weft_identity_leaf_issuer_info",
          help: "The issuer that signed this proxy's current certificate (value 1).",
          type: "gauge",
          values: i ? [{ value: 1, labels: { fingerprint_sha256: i.fingerprint, subject: i.subject } }] : [],
        };
      },
    });
    this.reloads = new Counter({
      name: "weft_identity_trust_bundle_reloads_total",
      help: "Trust bundle reloads from the trust-roots directory, by result (ok or error).",
      labelNames: ["result"],
      registers: [registry],
    });
  }

  /** The certificate after the leaf in our chain, or the anchor that signed the leaf directly. */
  #leafIssuer(c: TlsCredentials | undefined, b: TrustBundle) {
    if (c === undefined) return undefined;
    if (this.#issuerFor !== c) {
      this.#issuerFor = c;
      this.#issuer = undefined;
      try {
        const certs = pemCertificates(c.certChainPem).map((p) => new X509Certificate(p));
        const issuer = certs[1] ?? b.anchors.find((a) => signedBy(certs[0], a));
        if (issuer) this.#issuer = { fingerprint: fingerprintHex(issuer), subject: commonName(issuer) };
      } catch {
        // A chain that does not parse was refused before it reached the store; nothing to show.
      }
    }
    return this.#issuer;
  }
}
