/**
 * Holds the issuer in use and swaps it when new material arrives. Each candidate is verified
 * against the trust anchors first; a bad one is logged and counted and the previous issuer stays,
 * so a broken Secret update never stops issuance. Swaps are a single reference assignment, so
 * requests in flight finish with the issuer they started with.
 */
import type { Clock } from "../../proto/support/clock.ts";
import { Issuer, IssuerError, type IssuerMaterial, type TrustAnchors } from "./issuer.ts";
import type { IdentityMetrics } from "./metrics.ts";

export type ReloadOutcome = { ok: true; issuer: Issuer } | { ok: false; error: string };

export class IssuerReloader {
  #current: Issuer | undefined;
  #chain: Promise<unknown> = Promise.resolve();
  #lastMaterial = "";
  #resolveFirst!: (o: ReloadOutcome) => void;
  /** The outcome of the first material seen (startup decides on it: a bad issuer is fatal). */
  readonly first: Promise<ReloadOutcome> = new Promise((r) => this.#resolveFirst = r);

  constructor(
    readonly anchors: TrustAnchors,
    private readonly clock: Clock,
    private readonly metrics?: IdentityMetrics,
    private readonly log: (line: string) => void = () => {},
  ) {}

  current(): Issuer | undefined {
    return this.#current;
  }

  /** Verifies `material` and, if good, makes it current. Calls apply in arrival order. */
  offer(material: IssuerMaterial): Promise<ReloadOutcome> {
    const next = this.#chain.then(() => this.#apply(material));
    this.#chain = next.catch(() => {});
    return next;
  }

  async #apply(material: IssuerMaterial): Promise<ReloadOutcome> {
    const fingerprint = material.certPem + "\0" + material.keyPem;
    if (this.#current && fingerprint === this.#lastMaterial) return { ok: true, issuer: this.#current };
    let outcome: ReloadOutcome;
    try {
      const issuer = await Issuer.load(material, this.anchors, this.clock.now());
      const previous = this.#current;
      this.#current = issuer;
      this.#lastMaterial = fingerprint;
      this.metrics?.issuerReloads.inc({ result: "success" });
      this.log(
        `${previous ? "IssuerUpdated" : "IssuerLoaded"}: "${issuer.certificate.subject}" serial ` +
          `${issuer.certificate.serialNumber} from ${material.origin}, valid until ${issuer.notAfter.toISOString()}`,
      );
      outcome = { ok: true, issuer };
    } catch (e) {
      const message = e instanceof IssuerError
        ? e.message
        : `issuer did not load: ${(e as Error)?.message ?? e}`;
      this.metrics?.issuerReloads.inc({ result: "failure" });
      this.log(
        `${this.#current ? "IssuerUpdateSkipped (keeping the current issuer)" : "IssuerInvalid"}: ${message}`,
      );
      outcome = { ok: false, error: message };
    }
    this.#resolveFirst(outcome);
    return outcome;
  }
}
