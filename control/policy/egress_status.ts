/**
 * EgressNetwork status as Linkerd writes it: one `Accepted` condition, `True` (reason `Accepted`),
 * or `False` with reason `EgressReasonNetworkOverlap` when one of its networks overlaps the
 * cluster networks. Conditions of other types are kept; the transition time survives an unchanged
 * condition, and a status is patched only when it changed. Patches run one at a time, off the
 * watch path.
 */
import type { PolicyConfig } from "./config.ts";
import { networkContains, parseNetwork } from "./network_cidr.ts";
import type { Condition, EgressNetwork } from "./resources.ts";
import { canWrite, type StatusClient, type StatusWriterOptions } from "./route_status.ts";
import type { PolicyStore, StoreChange } from "./store.ts";

export const EGRESS_OVERLAP_REASON = "EgressReasonNetworkOverlap";

/**
 * Whether network `n` shares addresses with cluster network `c`, after its `except` entries: two
 * CIDRs either nest or are disjoint, and an overlap an exception covers does not count (so
 * `0.0.0.0/0` except the cluster networks is accepted).
 */
function overlaps(n: { cidr: string; except?: string[] }, c: string): boolean {
  try {
    const x = parseNetwork(n.cidr), y = parseNetwork(c);
    const common = networkContains(x, y) ? y : networkContains(y, x) ? x : undefined;
    if (!common) return false;
    return !(n.except ?? []).some((e) => networkContains(parseNetwork(e), common));
  } catch {
    return false;
  }
}

/** The `Accepted` condition (without its transition time) for `en`. */
export function egressAccepted(en: EgressNetwork, cfg: PolicyConfig): Omit<Condition, "lastTransitionTime"> {
  const clash = (en.spec?.networks ?? []).some((n) => cfg.clusterNetworks.some((c) => overlaps(n, c)));
  return clash
    ? {
      type: "Accepted",
      status: "False",
      reason: EGRESS_OVERLAP_REASON,
      message: "networks overlap with clusterNetworks",
    }
    : { type: "Accepted", status: "True", reason: "Accepted", message: "" };
}

/** The new status conditions, or undefined when the current ones already say the same. */
export function egressStatusConditions(
  en: EgressNetwork,
  cfg: PolicyConfig,
  now: string,
): Condition[] | undefined {
  const current = en.status?.conditions ?? [];
  const want = egressAccepted(en, cfg);
  const prev = current.find((c) => c.type === "Accepted");
  if (prev && prev.status === want.status && prev.reason === want.reason && prev.message === want.message) {
    return undefined;
  }
  return [...current.filter((c) => c.type !== "Accepted"), { ...want, lastTransitionTime: now }];
}

export class EgressStatusWriter {
  readonly #dirty = new Set<string>();
  #timer: ReturnType<typeof setTimeout> | undefined;
  #running = false;
  readonly #unlisten: () => void;
  writes = 0;
  errors = 0;

  constructor(
    readonly store: PolicyStore,
    readonly cfg: PolicyConfig,
    readonly client: StatusClient,
    readonly opts: StatusWriterOptions = {},
  ) {
    this.#unlisten = store.listen((c) => this.#onChange(c));
    this.resync();
  }

  close(): void {
    this.#unlisten();
    if (this.#timer) clearTimeout(this.#timer);
  }

  /** Rechecks every EgressNetwork (on gaining leadership: the followers wrote nothing meanwhile). */
  resync(): void {
    for (const en of this.store.list<EgressNetwork>("EgressNetwork")) this.#mark(en);
  }

  #onChange(c: StoreChange): void {
    if (c.kind !== "EgressNetwork" || c.type === "deleted") return;
    this.#mark(c.object as EgressNetwork);
  }

  #mark(en: EgressNetwork): void {
    this.#dirty.add(`${en.metadata.namespace ?? ""}/${en.metadata.name}`);
    this.#timer ??= setTimeout(() => this.#run(), this.opts.delayMs ?? 50);
  }

  async #run(): Promise<void> {
    this.#timer = undefined;
    if (this.#running) {
      this.#timer = setTimeout(() => this.#run(), this.opts.delayMs ?? 50);
      return;
    }
    this.#running = true;
    try {
      const keys = [...this.#dirty];
      this.#dirty.clear();
      // A follower forgets what changed: resync() on gaining leadership rechecks everything.
      if (!canWrite(this.opts)) return;
      for (const k of keys) await this.sync(k);
    } finally {
      this.#running = false;
    }
  }

  /** Patches the status of EgressNetwork `namespace/name` if it changed. */
  async sync(key: string): Promise<void> {
    const [ns, name] = key.split("/");
    const en = this.store.get<EgressNetwork>("EgressNetwork", ns, name);
    if (!en) return;
    const now = (this.opts.now?.() ?? new Date()).toISOString().replace(/\.[0-9]+Z$/, "Z");
    const conditions = egressStatusConditions(en, this.cfg, now);
    if (!conditions || !canWrite(this.opts)) return;
    try {
      await this.client.patchStatus("EgressNetwork", ns, name, { conditions });
      this.writes++;
    } catch (e) {
      this.errors++;
      this.opts.log?.(`egress network status: ${(e as Error).message}`);
    }
  }
}
