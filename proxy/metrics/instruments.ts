/**
 * Counters and gauges with label sets, registered on the proxy's Registry. The same small surface
 * the proxy used from prom-client: `inc`/`dec`/`set` with a label object (or none), `remove`, and
 * a `collect` hook that runs before each scrape (to flush pending counts or read a value).
 */
import type { LabelValues, MetricFamily, MetricSample, MetricSnapshot, Registry } from "./registry.ts";

export interface InstrumentOptions<T> {
  name: string;
  help: string;
  labelNames?: readonly string[];
  registers?: Registry[];
  /** Runs before each scrape, with the instrument as `this`. */
  collect?: (this: T) => void;
  /**
   * Label sets may carry labels beyond `labelNames` (e.g. Destination's `dst_*` metric labels),
   * keyed in the order the caller gives them; callers build each set in a fixed order.
   */
  openLabels?: boolean;
}

abstract class Instrument<T> implements MetricFamily {
  readonly name: string;
  readonly help: string;
  readonly #labelNames: ReadonlySet<string>;
  readonly #collect: ((this: T) => void) | undefined;
  readonly #open: boolean;
  /** Key (label values in label-name order) → sample; the labels object keeps its first order. */
  readonly #samples = new Map<string, MetricSample>();
  abstract readonly type: "counter" | "gauge";

  constructor(o: InstrumentOptions<T>) {
    this.name = o.name;
    this.help = o.help;
    this.#labelNames = new Set(o.labelNames ?? []);
    this.#collect = o.collect;
    this.#open = o.openLabels === true;
    // A series without labels exists from the start (scrapers see 0, not nothing).
    if (this.#labelNames.size === 0) this.#samples.set("", { value: 0, labels: {} });
    for (const r of o.registers ?? []) r.registerMetric(this);
  }

  #key(labels: LabelValues | undefined): string {
    if (labels === undefined) return "";
    let key = "";
    let extra = "";
    for (const k in labels) {
      if (this.#labelNames.has(k)) continue;
      if (!this.#open) throw new Error(`metric ${this.name} has no label "${k}"`);
      extra += `${k}=${labels[k]}\u0000`;
    }
    for (const k of this.#labelNames) key += `${labels[k] ?? ""}\u0000`;
    return key + extra;
  }

  protected add(labels: LabelValues | undefined, n: number): void {
    const key = this.#key(labels);
    const s = this.#samples.get(key);
    if (s !== undefined) s.value += n;
    else this.#samples.set(key, { value: n, labels: { ...labels } });
  }

  protected put(labels: LabelValues | undefined, v: number): void {
    const key = this.#key(labels);
    const s = this.#samples.get(key);
    if (s !== undefined) s.value = v;
    else this.#samples.set(key, { value: v, labels: { ...labels } });
  }

  /** Drops the sample for this label set (a series that no longer exists). */
  remove(labels: LabelValues): void {
    this.#samples.delete(this.#key(labels));
  }

  get(): MetricSnapshot {
    this.#collect?.call(this as unknown as T);
    const values: MetricSample[] = [];
    for (const s of this.#samples.values()) values.push({ value: s.value, labels: s.labels });
    return { name: this.name, help: this.help, type: this.type, values };
  }
}

function split(a: LabelValues | number | undefined, b: number | undefined, dflt: number) {
  return typeof a === "number" ? { labels: undefined, n: a } : { labels: a, n: b ?? dflt };
}

export class Counter extends Instrument<Counter> {
  readonly type = "counter";

  /** `inc()`, `inc(n)`, `inc(labels)`, `inc(labels, n)`; counters only go up. */
  inc(labels?: LabelValues | number, n?: number): void {
    const a = split(labels, n, 1);
    if (!(a.n >= 0)) throw new Error(`metric ${this.name}: a counter cannot be increased by ${a.n}`);
    this.add(a.labels, a.n);
  }
}

export class Gauge extends Instrument<Gauge> {
  readonly type = "gauge";

  inc(labels?: LabelValues | number, n?: number): void {
    const a = split(labels, n, 1);
    this.add(a.labels, a.n);
  }

  dec(labels?: LabelValues | number, n?: number): void {
    const a = split(labels, n, 1);
    this.add(a.labels, -a.n);
  }

  /** `set(v)` or `set(labels, v)`. */
  set(labels: LabelValues | number, v?: number): void {
    if (typeof labels === "number") this.put(undefined, labels);
    else this.put(labels, v ?? 0);
  }
}
