/**
 * Copies the trust-roots ConfigMap into the namespaces of injected pods (issue 21). A pod can
 * mount only ConfigMaps of its own namespace, and proxies watch the mounted bundle, so each
 * namespace with injected pods outside the control plane's gets `weft-identity-trust-roots`: the
 * three keys of the source (anchors, published issuers, renew-before), kept equal to it.
 *
 * At admission `ensure` creates the copy when the namespace has none yet, waiting a bounded time
 * (the volume is optional: a pod admitted without it starts on its environment's anchors and the
 * kubelet fills the volume later). `sync`, every few seconds, reads the source and merge-patches
 * every copy that differs; a source that is missing or has no anchors is not copied (the copies keep
 * what they had, and proxies refuse an empty bundle anyway).
 */
import { TrustRootsKeys } from "../../proto/trust_roots.ts";

/** What the copier needs from the API server (control/injector/trust_roots_copy_client.ts). */
export interface TrustRootsCopyApi {
  /** The source's data, or undefined when it does not exist. */
  readSource(): Promise<Record<string, string> | undefined>;
  /** Every copy in the cluster. */
  listCopies(): Promise<{ namespace: string; data: Record<string, string> }[]>;
  /** Creates the copy; "exists" when it already did. */
  create(namespace: string, data: Record<string, string>): Promise<"created" | "exists">;
  /** Merge-patches the copy's data: keys with null are removed. */
  patch(namespace: string, data: Record<string, string | null>): Promise<void>;
}

const COPIED: readonly string[] = Object.values(TrustRootsKeys);

export interface TrustRootsCopierOptions {
  controlPlaneNamespace: string;
  log: (line: string) => void;
  /** Longest an admission waits for a new copy. */
  ensureTimeoutMs?: number;
  /**
   * Whether this replica keeps the copies equal to the source (it leads the copier's Lease,
   * control/k8s/leader_election.ts); always when unset. A follower still reads the source each round
   * (so `ensure` creates copies with the current keys on any replica: admissions land on all of them,
   * and a create of an existing copy is a no-op) but patches nothing; `wake()` on gaining leadership.
   */
  canWrite?: () => boolean;
}

export class TrustRootsCopier {
  readonly #api: TrustRootsCopyApi;
  readonly #opts: TrustRootsCopierOptions;
  /** Namespaces known to have a copy. */
  #have = new Set<string>();
  #creating = new Map<string, Promise<void>>();
  #source: Record<string, string> | undefined;
  #lastError = "";
  #wake: (() => void) | undefined;
  #woken = false;

  constructor(api: TrustRootsCopyApi, opts: TrustRootsCopierOptions) {
    this.#api = api;
    this.#opts = opts;
  }

  /** The keys copied, from the last read of the source (undefined until one succeeded). */
  source(): Record<string, string> | undefined {
    return this.#source;
  }

  async #readSource(): Promise<Record<string, string> | undefined> {
    const data = await this.#api.readSource();
    if (data === undefined || !(data[TrustRootsKeys.anchors] ?? "").includes("BEGIN CERTIFICATE")) {
      return undefined;
    }
    const picked: Record<string, string> = {};
    for (const k of COPIED) if (data[k] !== undefined) picked[k] = data[k];
    this.#source = picked;
    return picked;
  }

  /** Makes sure `namespace` has a copy; never throws, waits at most the ensure timeout. */
  async ensure(namespace: string): Promise<void> {
    if (namespace === this.#opts.controlPlaneNamespace || this.#have.has(namespace)) return;
    let p = this.#creating.get(namespace);
    if (p === undefined) {
      p = this.#create(namespace).finally(() => this.#creating.delete(namespace));
      this.#creating.set(namespace, p);
    }
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([
      p,
      new Promise<void>((r) => timer = setTimeout(r, this.#opts.ensureTimeoutMs ?? 2000)),
    ]);
    clearTimeout(timer);
  }

  async #create(namespace: string): Promise<void> {
    try {
      const data = this.#source ?? await this.#readSource();
      if (data === undefined) {
        this.#opts.log(
          `trust roots: no usable source ConfigMap yet; ${namespace} gets its copy on a later sync`,
        );
        return;
      }
      const r = await this.#api.create(namespace, data);
      this.#have.add(namespace);
      if (r === "created") this.#opts.log(`trust roots: copied into namespace ${namespace}`);
    } catch (e) {
      this.#opts.log(`trust roots: cannot copy into namespace ${namespace}: ${(e as Error).message}`);
    }
  }

  /** One round: read the source, patch every copy that differs. Returns the namespaces patched. */
  async sync(): Promise<string[]> {
    const patched: string[] = [];
    const failed: string[] = [];
    try {
      const src = await this.#readSource();
      if (src === undefined || !(this.#opts.canWrite?.() ?? true)) return patched;
      for (const copy of await this.#api.listCopies()) {
        this.#have.add(copy.namespace);
        const diff: Record<string, string | null> = {};
        let differs = false;
        for (const k of COPIED) {
          const want = src[k];
          if (copy.data[k] === want) continue;
          diff[k] = want ?? null;
          differs = true;
        }
        if (!differs) continue;
        // One copy that cannot be written (its namespace terminating, a webhook refusing it) must not keep
        // the others on the old bundle: each is patched on its own, failures reported together.
        try {
          await this.#api.patch(copy.namespace, diff);
          patched.push(copy.namespace);
        } catch (e) {
          failed.push(`${copy.namespace} (${(e as Error).message})`);
        }
      }
      if (patched.length > 0) this.#opts.log(`trust roots: updated the copies in ${patched.join(", ")}`);
      const m = failed.length > 0 ? `cannot update the copies in ${failed.join(", ")}` : "";
      if (m && m !== this.#lastError) this.#opts.log(`trust roots: ${m}`);
      this.#lastError = m;
    } catch (e) {
      const m = (e as Error).message;
      if (m !== this.#lastError) this.#opts.log(`trust roots: sync failed: ${m}`);
      this.#lastError = m;
    }
    return patched;
  }

  /** Starts the next round of `run` now (e.g. on gaining leadership). */
  wake(): void {
    if (this.#wake) this.#wake();
    else this.#woken = true; // mid-round: that round may have skipped writing; go again at once
  }

  /** Syncs every `intervalMs` until `signal` aborts. */
  async run(intervalMs: number, signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      await this.sync();
      if (this.#woken) {
        this.#woken = false;
        continue;
      }
      await new Promise<void>((resolve) => {
        const t = setTimeout(done, intervalMs);
        this.#wake = done;
        function done() {
          clearTimeout(t);
          signal.removeEventListener("abort", done);
          resolve();
        }
        signal.addEventListener("abort", done, { once: true });
      });
      this.#wake = undefined;
    }
  }
}
