/**
 * HPACK indexing tables (RFC 7541 §2.3): the static table from Appendix A and the dynamic table
 * shared in shape by the encoder and the decoder.
 */

/** Number of static table entries; dynamic entries start at index STATIC_LENGTH + 1. */
export const STATIC_LENGTH = 61;

/** Static table (RFC 7541 Appendix A) as [name, value], index 1 first. */
const STATIC: readonly (readonly [string, string])[] = [
  [":authority", ""],
  [":method", "GET"],
  [":method", "POST"],
  [":path", "/"],
  [":path", "/index.html"],
  [":scheme", "http"],
  [":scheme", "https"],
  [":status", "200"],
  [":status", "204"],
  [":status", "206"],
  [":status", "304"],
  [":status", "400"],
  [":status", "404"],
  [":status", "500"],
  ["accept-charset", ""],
  ["accept-encoding", "gzip, deflate"],
  ["accept-language", ""],
  ["accept-ranges", ""],
  ["accept", ""],
  ["access-control-allow-origin", ""],
  ["age", ""],
  ["allow", ""],
  ["authorization", ""],
  ["cache-control", ""],
  ["content-disposition", ""],
  ["content-encoding", ""],
  ["content-language", ""],
  ["content-length", ""],
  ["content-location", ""],
  ["content-range", ""],
  ["content-type", ""],
  ["cookie", ""],
  ["date", ""],
  ["etag", ""],
  ["expect", ""],
  ["expires", ""],
  ["from", ""],
  ["host", ""],
  ["if-match", ""],
  ["if-modified-since", ""],
  ["if-none-match", ""],
  ["if-range", ""],
  ["if-unmodified-since", ""],
  ["last-modified", ""],
  ["link", ""],
  ["location", ""],
  ["max-forwards", ""],
  ["proxy-authenticate", ""],
  ["proxy-authorization", ""],
  ["range", ""],
  ["referer", ""],
  ["refresh", ""],
  ["retry-after", ""],
  ["server", ""],
  ["set-cookie", ""],
  ["strict-transport-security", ""],
  ["transfer-encoding", ""],
  ["user-agent", ""],
  ["vary", ""],
  ["via", ""],
  ["www-authenticate", ""],
];

/** Static names and values by index (slot 0 unused, so the wire index is the array index). */
export const STATIC_NAMES: readonly string[] = ["", ...STATIC.map((e) => e[0])];
export const STATIC_VALUES: readonly string[] = ["", ...STATIC.map((e) => e[1])];

/** What the encoder knows about a name in the static table. */
export interface StaticName {
  /** Lowest index with this name, for a literal with an indexed name. */
  readonly index: number;
  /** Index of each (name, value) pair with a non-empty value, for a fully indexed field. */
  readonly values: ReadonlyMap<string, number>;
}

/** Encoder lookups, built once: name → first index and name + value → index. */
export const STATIC_BY_NAME: ReadonlyMap<string, StaticName> = (() => {
  const m = new Map<string, { index: number; values: Map<string, number> }>();
  for (let i = 1; i <= STATIC_LENGTH; i++) {
    const name = STATIC_NAMES[i];
    let e = m.get(name);
    if (e === undefined) m.set(name, e = { index: i, values: new Map() });
    // Entries with an empty value also match a field whose value is empty: index 1 alone
    // decodes to (":authority", "").
    if (!e.values.has(STATIC_VALUES[i])) e.values.set(STATIC_VALUES[i], i);
  }
  return m;
})();

/** Per RFC 7541 §4.1: an entry's size is its name and value length plus 32 octets. */
export function entrySize(name: string, value: string): number {
  return name.length + value.length + 32;
}

/**
 * The dynamic table (RFC 7541 §2.3.2, §4): a FIFO of [name, value] entries kept in a ring of two
 * parallel arrays, newest at dynamic index 0. Eviction goes through evictOldest() so the
 * encoder's subclass can keep its lookup maps in step.
 */
export class DynamicTable {
  // Filled with "" (not holes) so the arrays stay packed for fast indexed access.
  protected names: string[] = new Array<string>(16).fill("");
  protected values: string[] = new Array<string>(16).fill("");
  /** Ring capacity minus one (capacity is a power of two). */
  protected mask = 15;
  /** Slot the next entry goes into. */
  protected head = 0;
  /** Entries held. */
  length = 0;
  /** Sum of entrySize over the entries held. */
  size = 0;
  /** Entries ever added; with length, it identifies entries across evictions. */
  inserted = 0;

  constructor(public maxSize: number) {}

  /** Name of the entry at dynamic index i (0 = newest); i must be < length. */
  name(i: number): string {
    return this.names[(this.head - 1 - i) & this.mask];
  }

  /** Value of the entry at dynamic index i (0 = newest); i must be < length. */
  value(i: number): string {
    return this.values[(this.head - 1 - i) & this.mask];
  }

  /**
   * Adds an entry, evicting the oldest ones to make room (§4.4). An entry larger than the whole
   * table empties it and is not added.
   */
  add(name: string, value: string): void {
    const sz = entrySize(name, value);
    while (this.length > 0 && this.size + sz > this.maxSize) this.evictOldest();
    if (sz > this.maxSize) return;
    if (this.length > this.mask) this.#grow();
    const slot = this.head;
    this.names[slot] = name;
    this.values[slot] = value;
    this.head = (slot + 1) & this.mask;
    this.length++;
    this.size += sz;
    this.inserted++;
  }

  /** Applies a new maximum size, evicting until the entries fit (§4.3). */
  setMaxSize(n: number): void {
    this.maxSize = n;
    while (this.length > 0 && this.size > n) this.evictOldest();
  }

  protected evictOldest(): void {
    const slot = (this.head - this.length) & this.mask;
    this.size -= entrySize(this.names[slot], this.values[slot]);
    // Drop the references so evicted strings can be collected.
    this.names[slot] = "";
    this.values[slot] = "";
    this.length--;
  }

  #grow(): void {
    const cap = (this.mask + 1) * 2;
    const names = new Array<string>(cap).fill("");
    const values = new Array<string>(cap).fill("");
    // Re-lay oldest → newest from slot 0 so head becomes length.
    for (let i = 0; i < this.length; i++) {
      const from = (this.head - this.length + i) & this.mask;
      names[i] = this.names[from];
      values[i] = this.values[from];
    }
    this.names = names;
    this.values = values;
    this.mask = cap - 1;
    this.head = this.length;
  }
}

/** Per name in the encoder's dynamic table: entry ids (see EncoderTable) of the newest entries. */
export interface DynamicName {
  /** Newest entry with this name. */
  id: number;
  /** Newest entry with this name and each value. */
  values: Map<string, number>;
}

/**
 * The encoder's dynamic table, with lookups by name and by name + value. Each entry gets an id
 * (the count of entries added before it), so dynamic index = inserted - id - 1 needs no updates
 * as entries come and go; the maps are trimmed on eviction.
 */
export class EncoderTable extends DynamicTable {
  readonly byName = new Map<string, DynamicName>();

  override add(name: string, value: string): void {
    const before = this.inserted;
    super.add(name, value);
    if (this.inserted === before) return; // too large: the table was only emptied
    let e = this.byName.get(name);
    if (e === undefined) this.byName.set(name, e = { id: before, values: new Map() });
    e.id = before;
    e.values.set(value, before);
  }

  protected override evictOldest(): void {
    const id = this.inserted - this.length;
    const name = this.name(this.length - 1);
    const e = this.byName.get(name);
    if (e !== undefined) {
      // A newer entry with the same pair or name keeps its own (larger) id in the maps.
      if (e.id === id) this.byName.delete(name); // nothing newer shares the name
      else if (e.values.get(this.value(this.length - 1)) === id) e.values.delete(this.value(this.length - 1));
    }
    super.evictOldest();
  }
}
