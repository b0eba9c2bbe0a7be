/**
 * Holds the issuer in use and swaps it when new material arrives. Each candidate is verified
 * against the trust anchors first; a bad one is logged and counted and the previous issuer stays,
 * so a broken Secret update never stops issuance. Swaps are a single reference assignment, so
 * requests in flight finish with the issuer they started with.
 *
 * The anchors change too (the trust-roots ConfigMap is watched): the latest material is then
 * verified again, so an issuer refused because its anchor was not trusted yet is taken once the
 * anchor arrives, and a current issuer that no longer chains is reported (and kept: there is no
 * other to sign with).
 */
import type { Clock } from "../../proto/support/clock.ts";
import { type CertInfo, certInfo, certInfos, shortFingerprint } from "./cert_info.ts";
import { Issuer, IssuerError, type IssuerMaterial, type TrustAnchors } from "./issuer.ts";
import type { IdentityMetrics } from "./metrics.ts";

export type ReloadOutcome = { ok: true; issuer: Issuer } | { ok: false; error: string };

/** Told each time an issuer is (again) verified and in use, with its fingerprint and subject CN. */
export type IssuerListener = (issuer: Issuer, info: CertInfo) => void;

export class IssuerReloader {
  #current: Issuer | undefined;
  #currentInfo: CertInfo | undefined;
  #anchors: TrustAnchors;
  #anchorInfos: CertInfo[] = [];
  #chain: Promise<unknown> = Promise.resolve();
  #lastMaterial = "";
  #latest: IssuerMaterial | undefined;
  #issuerTrusted: boolean | undefined;
  #caTrusted: boolean | undefined;
  #listeners: IssuerListener[] = [];
  #resolveFirst!: (o: ReloadOutcome) => void;
  /** The outcome of the first material seen (startup decides on it: a bad issuer is fatal). */
  readonly first: Promise<ReloadOutcome> = new Promise((r) => this.#resolveFirst = r);

  constructor(
    anchors: TrustAnchors,
    private readonly clock: Clock,
    private readonly metrics?: IdentityMetrics,
    private readonly log: (line: string) => void = () => {},
  ) {
    this.#anchors = anchors;
    this.#chain = this.#describeAnchors();
  }

  get anchors(): TrustAnchors {
    return this.#anchors;
  }

  current(): Issuer | undefined {
    return this.#current;
  }

  /** The current issuer's fingerprint and subject. */
  currentInfo(): CertInfo | undefined {
    return this.#currentInfo;
  }

  anchorInfos(): CertInfo[] {
    return this.#anchorInfos;
  }

  /** Whether the current issuer chains to the current anchors (false after an anchor change broke it). */
  issuerTrusted(): boolean | undefined {
    return this.#issuerTrusted;
  }

  /** Whether the latest issuer Secret's `ca.crt` is in the anchors; undefined when it has none. */
  caTrusted(): boolean | undefined {
    return this.#caTrusted;
  }

  onIssuer(listener: IssuerListener): void {
    this.#listeners.push(listener);
  }

  /** Verifies `material` and, if good, makes it current. Calls apply in arrival order. */
  offer(material: IssuerMaterial): Promise<ReloadOutcome> {
    return this.#enqueue(() => this.#apply(material, false));
  }

  /** New trust anchors: the latest material is verified against them. */
  setAnchors(anchors: TrustAnchors): Promise<void> {
    return this.#enqueue(async () => {
      this.#anchors = anchors;
      await this.#describeAnchors();
      if (this.#latest) await this.#apply(this.#latest, true);
    });
  }

  #enqueue<T>(step: () => Promise<T>): Promise<T> {
    const next = this.#chain.then(step);
    this.#chain = next.catch(() => {});
    return next;
  }

  async #describeAnchors(): Promise<void> {
    this.#anchorInfos = await Promise.all(this.#anchors.certs.map(certInfo));
  }

  async #apply(material: IssuerMaterial, anchorsChanged: boolean): Promise<ReloadOutcome> {
    const key = material.certPem + "\0" + material.keyPem;
    this.#latest = material;
    if (!anchorsChanged && this.#current && key === this.#lastMaterial) {
      return { ok: true, issuer: this.#current };
    }
    await this.#checkCa(material);
    let outcome: ReloadOutcome;
    try {
      const issuer = await Issuer.load(material, this.#anchors, this.clock.now());
      const previous = this.#current;
      const same = key === this.#lastMaterial;
      const info = await certInfo(issuer.certificate);
      this.#current = issuer;
      this.#currentInfo = info;
      this.#lastMaterial = key;
      if (same) {
        if (this.#issuerTrusted === false) {
          this.log(`IssuerTrusted: the current issuer chains to the anchors again`);
        }
      } else {
        this.metrics?.issuerReloads.inc({ result: "success" });
        this.log(
          `${previous ? "IssuerUpdated" : "IssuerLoaded"}: "${issuer.certificate.subject}" serial ` +
            `${issuer.certificate.serialNumber} sha256 ${info.fingerprint} from ${material.origin}, valid until ` +
            `${issuer.notAfter.toISOString()}`,
        );
      }
      this.#issuerTrusted = true;
      for (const l of this.#listeners) l(issuer, info);
      outcome = { ok: true, issuer };
    } catch (e) {
      const message = e instanceof IssuerError
        ? e.message
        : `issuer did not load: ${(e as Error)?.message ?? e}`;
      if (anchorsChanged && key === this.#lastMaterial) {
        // The issuer in use no longer chains to the anchors: keep signing (proxies that still trust its
        // anchor keep working), and say so loudly.
        this.#issuerTrusted = false;
        this.log(
          `IssuerNotTrusted (still signing with it): the trust anchors changed and the current issuer no ` +
            `longer verifies against them: ${message}`,
        );
      } else if (!anchorsChanged) {
        this.metrics?.issuerReloads.inc({ result: "failure" });
        this.log(
          `${
            this.#current ? "IssuerUpdateSkipped (keeping the current issuer)" : "IssuerInvalid"
          }: ${message}`,
        );
      }
      outcome = { ok: false, error: message };
    }
    if (!anchorsChanged) this.#resolveFirst(outcome);
    return outcome;
  }

  /** A Secret written by cert-manager names its CA in `ca.crt`: say clearly when that is not an anchor. */
  async #checkCa(material: IssuerMaterial): Promise<void> {
    if (!material.caPem?.trim()) {
      this.#caTrusted = undefined;
      return;
    }
    let cas: CertInfo[];
    try {
      cas = await certInfos(material.caPem, `ca.crt (${material.origin})`);
    } catch (e) {
      this.#caTrusted = false;
      this.log(`IssuerCaNotTrusted: ${(e as Error).message}`);
      return;
    }
    const anchors = new Set(this.#anchorInfos.map((a) => a.fingerprint));
    const missing = cas.filter((c) => !anchors.has(c.fingerprint));
    const was = this.#caTrusted;
    this.#caTrusted = missing.length === 0;
    if (missing.length > 0) {
      this.log(
        `IssuerCaNotTrusted: ${material.origin} ca.crt ${
          missing.map((c) => `"${c.subject}" sha256 ${c.fingerprint}`).join(", ")
        } is not in the trust anchor bundle (${
          this.#anchorInfos.map((a) => `"${a.subject}" ${shortFingerprint(a.fingerprint)}`).join(", ")
        }): proxies trust only the bundle, so add it there first (see docs/identity.md, rotation)`,
      );
    } else if (was === false) {
      this.log(`IssuerCaTrusted: ${material.origin} ca.crt is in the trust anchor bundle`);
    }
  }
}
