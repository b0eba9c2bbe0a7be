/**
 * Watches the mounted trust-roots ConfigMap (issue 21): `ca-bundle.crt` (the anchors) and
 * `weft-issuers.crt` (published issuers) become the proxy's TrustStore bundle, and a new
 * `weft-renew-before` time is handed to the identity client. The kubelet updates such a volume by
 * writing a new timestamped directory and swapping the `..data` symlink, so the files are read
 * between two reads of that link and a read that straddles a swap is retried on the next poll.
 *
 * Polling, not inotify: the kubelet is up to a minute late anyway, and a poll costs one readlink
 * while nothing changes (a directory without `..data`, as in local runs, is re-read each poll).
 * A bundle that fails to parse, or has no anchor, is refused with a log line and counted; the old
 * one stays.
 */
import { TrustRootsKeys } from "../../proto/trust_roots.ts";
import { buildTrustBundle, type TrustStore } from "../core/trust_store.ts";
import type { Counter } from "../metrics/instruments.ts";
import { type Clock, systemClock } from "../../proto/support/clock.ts";

export const TRUST_ROOTS_POLL_MS = 5_000;

export interface TrustRootsWatchDeps {
  trust: TrustStore;
  log: (level: "info" | "warn", line: string) => void;
  /** `weft_identity_trust_bundle_reloads_total`. */
  reloads?: Counter;
  /** Called with each new, valid `weft-renew-before` time (also the first one seen). */
  onRenewBefore?: (at: Date) => void;
  pollMs?: number;
  clock?: Clock;
}

export type ReloadResult = "unchanged" | "ok" | "error" | "retry";

export class TrustRootsWatch {
  readonly #deps: TrustRootsWatchDeps;
  /** The `..data` target of the last complete read (undefined: no such link, or not read yet). */
  #dataTarget: string | undefined | null = null;
  /** The anchors and issuers text last applied or refused, so each change is judged (and logged) once. */
  #lastText: string | undefined;
  #lastRenewBefore: string | undefined;

  constructor(readonly dir: string, deps: TrustRootsWatchDeps) {
    this.#deps = deps;
  }

  async #readLink(): Promise<string | undefined> {
    try {
      return await Deno.readLink(`${this.dir}/..data`);
    } catch {
      return undefined;
    }
  }

  async #read(key: string): Promise<string | undefined> {
    try {
      return await Deno.readTextFile(`${this.dir}/${key}`);
    } catch (e) {
      if (e instanceof Deno.errors.NotFound) return undefined;
      throw e;
    }
  }

  /** Reads the directory once and applies what changed. */
  async reload(): Promise<ReloadResult> {
    const before = await this.#readLink();
    if (before !== undefined && before === this.#dataTarget) return "unchanged";
    let anchors: string | undefined, issuers: string | undefined, renewBefore: string | undefined;
    try {
      [anchors, issuers, renewBefore] = await Promise.all([
        this.#read(TrustRootsKeys.anchors),
        this.#read(TrustRootsKeys.issuers),
        this.#read(TrustRootsKeys.renewBefore),
      ]);
    } catch (e) {
      return this.#refuse(`cannot read ${this.dir}: ${(e as Error).message}`);
    }
    // The kubelet swapped the directory while we read: what we have may mix two versions.
    if ((await this.#readLink()) !== before) return "retry";
    this.#dataTarget = before;

    let result: ReloadResult = "unchanged";
    const text = `${anchors ?? ""}\u0000${issuers ?? ""}`;
    if (text !== this.#lastText) {
      this.#lastText = text;
      result = this.#apply(anchors, issuers ?? "");
    }
    this.#renewBefore(renewBefore?.trim());
    return result;
  }

  #apply(anchors: string | undefined, issuers: string): ReloadResult {
    if (anchors === undefined) {
      return this.#refuse(`${this.dir}/${TrustRootsKeys.anchors} is missing`);
    }
    let built;
    try {
      built = buildTrustBundle(anchors, issuers);
    } catch (e) {
      return this.#refuse((e as Error).message);
    }
    for (const why of built.ignored) this.#deps.log("warn", `trust roots: ignoring ${why}`);
    const old = this.#deps.trust.current();
    this.#deps.trust.set(built.bundle);
    this.#deps.reloads?.inc({ result: "ok" });
    if (old.anchorsPem !== built.bundle.anchorsPem || old.issuersPem !== built.bundle.issuersPem) {
      this.#deps.log(
        "info",
        `trust roots: now trusting ${built.bundle.anchors.length} anchor(s) and ${built.bundle.issuers.length} published issuer(s) from ${this.dir}`,
      );
    }
    return "ok";
  }

  #refuse(why: string): ReloadResult {
    this.#deps.reloads?.inc({ result: "error" });
    this.#deps.log(
      "warn",
      `trust roots: refusing the bundle in ${this.dir}, keeping the current one: ${why}`,
    );
    return "error";
  }

  #renewBefore(text: string | undefined): void {
    if (!text || text === this.#lastRenewBefore) return;
    this.#lastRenewBefore = text;
    const at = Date.parse(text);
    if (!/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/i.test(text) || Number.isNaN(at)) {
      this.#deps.log(
        "warn",
        `trust roots: ignoring ${TrustRootsKeys.renewBefore} "${text}": not an RFC 3339 time`,
      );
      return;
    }
    this.#deps.onRenewBefore?.(new Date(at));
  }

  /** Polls until `signal` aborts. */
  async run(signal: AbortSignal): Promise<void> {
    const clock = this.#deps.clock ?? systemClock;
    const every = this.#deps.pollMs ?? TRUST_ROOTS_POLL_MS;
    while (!signal.aborted) {
      await new Promise<void>((resolve) => {
        const cancel = clock.after(every, () => {
          signal.removeEventListener("abort", stop);
          resolve();
        });
        const stop = () => {
          cancel();
          resolve();
        };
        signal.addEventListener("abort", stop, { once: true });
      });
      if (signal.aborted) break;
      await this.reload().catch((e) => this.#deps.log("warn", `trust roots: ${(e as Error).message}`));
    }
  }
}
