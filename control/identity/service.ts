/**
 * Certify: checks a proxy's request (fields, CSR, token → ServiceAccount → identity) and signs
 * its leaf with the current issuer. Transport-free: failures are RequestErrors carrying a metric
 * reason, mapped to gRPC statuses only at the server edge.
 *
 * Checks run cheapest first, so a flood of bad requests costs little and cannot starve others:
 * token shape/expiry/audience and the claimed ServiceAccount (microseconds, no key), CSR structure
 * and names (microseconds), then the TokenReview (rate-limited, fair-queued per claimed
 * ServiceAccount), and only then the CSR's ECDSA signature check, which costs as much as signing
 * and so is spent only on callers whose token the API server accepted.
 */
import { RequestError, type RequestErrorKind } from "../grpc/request_error.ts";
import { formatWorkloadIdentity, IdentityNameError } from "../../proto/identity_name.ts";
import type { CertifyRequest, CertifyResponse } from "../../proto/gen/identity.ts";
import type { Clock } from "../../proto/support/clock.ts";
import { CsrError, type ParsedCsr, readCsr, type UnverifiedCsr, VerifiedCsrCache } from "./csr.ts";
import type { Issuer } from "./issuer.ts";
import type { IdentityMetrics } from "./metrics.ts";
import type { ClaimedServiceAccount, TokenScreen } from "./token_screen.ts";
import { TokenRejected, TokenReviewQuotaExceeded, TokenReviewUnavailable } from "./token_validator.ts";
import type { ServiceAccountRef } from "./token_validator.ts";

export class CertifyRejected extends RequestError {
  override name = "CertifyRejected";
  constructor(kind: RequestErrorKind, readonly reason: string, message: string) {
    super(kind, message);
  }
}

export interface CertifyConfig {
  controlPlaneNamespace: string;
  trustDomain: string;
  /** Leaf lifetime before the skew allowance. */
  lifetimeMs: number;
  /** Added on both ends of the validity window for nodes whose clocks disagree a little. */
  clockSkewMs: number;
}

export interface CertifyDeps {
  config: CertifyConfig;
  /** The issuer in use now (it changes on hot reload); undefined until one has loaded. */
  issuer: () => Issuer | undefined;
  /** Cheap checks before any TokenReview (see token_screen.ts). */
  screenToken: TokenScreen;
  /** The TokenReview; `client` is the caller's fair-queue key. */
  validateToken: (token: string, client: string) => Promise<ServiceAccountRef>;
  clock: Clock;
  metrics?: IdentityMetrics;
  log?: (line: string) => void;
}

const tokenDecoder = new TextDecoder();

export class CertifyService {
  readonly #csrCache = new VerifiedCsrCache();

  constructor(private readonly deps: CertifyDeps) {}

  async certify(req: CertifyRequest): Promise<CertifyResponse> {
    const begin = performance.now();
    try {
      const res = await this.#certify(req);
      this.deps.metrics?.issued.inc();
      this.deps.metrics?.certifyDuration.observe({ result: "ok" }, (performance.now() - begin) / 1000);
      return res;
    } catch (e) {
      const reason = e instanceof CertifyRejected ? e.reason : "internal";
      this.deps.metrics?.rejected.inc({ reason });
      this.deps.metrics?.certifyDuration.observe({ result: "rejected" }, (performance.now() - begin) / 1000);
      throw e;
    }
  }

  async #certify(req: CertifyRequest): Promise<CertifyResponse> {
    const id = req.identity;
    if (id === "") {
      throw new CertifyRejected(
        "invalid_argument",
        "missing_identity",
        "Cannot issue certificate: request has no identity",
      );
    }
    const refuse = (kind: RequestErrorKind, reason: string, why: string) =>
      new CertifyRejected(kind, reason, `Cannot issue certificate for "${id}": ${why}`);
    if (req.token.length === 0) throw refuse("invalid_argument", "missing_token", "request has no token");
    if (req.certificateSigningRequest.length === 0) {
      throw refuse("invalid_argument", "missing_csr", "request has no certificate signing request");
    }
    const issuer = this.deps.issuer();
    if (!issuer) throw refuse("unavailable", "issuer_not_ready", "cert issuer not ready yet");
    const now = this.deps.clock.now();
    if (now > issuer.chainNotAfter) {
      throw refuse(
        "unavailable",
        "issuer_expired",
        `issuer certificate chain expired at ${new Date(issuer.chainNotAfter).toISOString()}`,
      );
    }

    const token = tokenDecoder.decode(req.token).trim();
    let claimed: ClaimedServiceAccount | undefined;
    try {
      claimed = this.deps.screenToken(token, now);
    } catch (e) {
      if (e instanceof TokenRejected) throw refuse("failed_precondition", e.reason, e.message);
      throw e;
    }
    // The claim is unverified, but a token honestly minted for another ServiceAccount is refused
    // here without a review; a forged claim gains nothing, the review below still decides.
    if (claimed) {
      const problem = this.#serviceAccountProblem(claimed, id);
      if (problem) throw refuse("failed_precondition", "token_identity_mismatch", problem);
    }

    let unverified: UnverifiedCsr;
    try {
      unverified = readCsr(req.certificateSigningRequest);
    } catch (e) {
      if (e instanceof CsrError) throw refuse("failed_precondition", "invalid_csr", e.message);
      throw e;
    }
    const problem = csrNameProblem(unverified.fields, id);
    if (problem) throw refuse("failed_precondition", "csr_identity_mismatch", problem);

    let sa: ServiceAccountRef;
    try {
      const client = claimed
        ? `claimed ServiceAccount ${claimed.namespace}/${claimed.serviceAccount}`
        : "unknown client";
      sa = await this.deps.validateToken(token, client);
    } catch (e) {
      if (e instanceof TokenRejected) throw refuse("failed_precondition", e.reason, e.message);
      if (e instanceof TokenReviewUnavailable) throw refuse("unavailable", e.reason, e.message);
      if (e instanceof TokenReviewQuotaExceeded) throw refuse("resource_exhausted", e.reason, e.message);
      throw e;
    }
    const tokenProblem = this.#serviceAccountProblem(sa, id);
    if (tokenProblem) throw refuse("failed_precondition", "token_identity_mismatch", tokenProblem);

    let csr: ParsedCsr;
    try {
      csr = unverified.verify(this.#csrCache);
    } catch (e) {
      if (e instanceof CsrError) throw refuse("failed_precondition", "invalid_csr", e.message);
      throw e;
    }

    // Sign with the issuer read above: a reload during the TokenReview must not mix chains.
    const cert = await issuer.issue(csr, id, this.deps.clock.now(), this.deps.config);
    this.deps.log?.(`certifying ${id} until ${cert.notAfter.toISOString()}`);
    const ms = cert.notAfter.getTime();
    return {
      leafCertificate: cert.leaf,
      intermediateCertificates: cert.intermediates,
      validUntil: { seconds: BigInt(Math.floor(ms / 1000)), nanos: 0 },
    };
  }

  /** Why a token of ServiceAccount `sa` may not certify `id`, or undefined. */
  #serviceAccountProblem(sa: ServiceAccountRef, id: string): string | undefined {
    let tokenIdentity: string;
    try {
      tokenIdentity = formatWorkloadIdentity({
        serviceAccount: sa.serviceAccount,
        namespace: sa.namespace,
        controlPlaneNamespace: this.deps.config.controlPlaneNamespace,
        trustDomain: this.deps.config.trustDomain,
      });
    } catch (e) {
      if (e instanceof IdentityNameError) return `token's ServiceAccount: ${e.message}`;
      throw e;
    }
    if (tokenIdentity === id) return undefined;
    return `token is for ServiceAccount ${sa.namespace}/${sa.serviceAccount}, whose identity is "${tokenIdentity}"`;
  }
}

/** Why the CSR may not be signed for `id`, or undefined. */
export function csrNameProblem(csr: ParsedCsr, id: string): string | undefined {
  if (csr.ipAddresses > 0) return `CSR has ${csr.ipAddresses} IP address SAN(s), want none`;
  if (csr.emailAddresses > 0) return `CSR has ${csr.emailAddresses} email SAN(s), want none`;
  if (csr.uris > 0) return `CSR has ${csr.uris} URI SAN(s), want none`;
  if (csr.otherNames > 0) return `CSR has ${csr.otherNames} SAN(s) of other kinds, want only one DNS name`;
  if (csr.dnsNames.length !== 1) return `CSR has ${csr.dnsNames.length} DNS names, want 1`;
  if (csr.dnsNames[0] !== id) return `CSR DNS name "${csr.dnsNames[0]}" is not the requested identity`;
  if (csr.commonName !== undefined && csr.commonName !== "" && csr.commonName !== id) {
    return `CSR common name "${csr.commonName}" must be empty or the requested identity`;
  }
  return undefined;
}
