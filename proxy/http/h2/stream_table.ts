/**
 * A session's open streams by id. A `Map` costs an allocation every few streams here: stream ids
 * only grow, so each stream leaves a deleted entry behind and the small table keeps being rebuilt
 * (~150 bytes per stream, measured). This is an open-addressing table with linear probing and
 * backward-shift deletion: no allocation except when it grows. Slots come from a per-table random
 * multiplier mixed further, so a peer choosing stream ids cannot aim them at one slot.
 */
const MIN_CAPACITY = 8;

export class StreamTable<T> {
  #ids: number[] = new Array<number>(MIN_CAPACITY).fill(0);
  #values: (T | undefined)[] = new Array<T | undefined>(MIN_CAPACITY).fill(undefined);
  #mask = MIN_CAPACITY - 1;
  #shift = 32 - 3;
  readonly #mul = (Math.floor(Math.random() * 0x40000000) << 1) | 1;
  size = 0;

  #slot(id: number): number {
    // A multiply alone keeps arithmetic progressions of ids in neighbouring slots for some
    // multipliers (one long run); the xor-shift/multiply rounds after it spread them.
    let h = Math.imul(id, this.#mul);
    h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
    h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
    h ^= h >>> 16;
    return (h >>> this.#shift) & this.#mask;
  }

  /** Stream ids are > 0; 0 marks an empty slot. */
  get(id: number): T | undefined {
    const ids = this.#ids;
    for (let i = this.#slot(id);; i = (i + 1) & this.#mask) {
      const k = ids[i];
      if (k === id) return this.#values[i];
      if (k === 0) return undefined;
    }
  }

  set(id: number, value: T): void {
    if ((this.size + 1) * 2 > this.#mask + 1) this.#grow();
    const ids = this.#ids;
    let i = this.#slot(id);
    while (ids[i] !== 0 && ids[i] !== id) i = (i + 1) & this.#mask;
    if (ids[i] === 0) this.size++;
    ids[i] = id;
    this.#values[i] = value;
  }

  delete(id: number): boolean {
    const ids = this.#ids;
    const values = this.#values;
    const mask = this.#mask;
    let i = this.#slot(id);
    while (ids[i] !== id) {
      if (ids[i] === 0) return false;
      i = (i + 1) & mask;
    }
    // Backward shift: later entries of the same run move up, so lookups never stop early.
    for (let j = (i + 1) & mask;; j = (j + 1) & mask) {
      const k = ids[j];
      if (k === 0) break;
      const home = this.#slot(k);
      // k may fill the hole at i only if its home slot is not cyclically within (i, j].
      if (((j - home) & mask) >= ((j - i) & mask)) {
        ids[i] = k;
        values[i] = values[j];
        i = j;
      }
    }
    ids[i] = 0;
    values[i] = undefined;
    this.size--;
    return true;
  }

  /** @internal The longest run of occupied slots: what one lookup may have to walk. */
  longestRun(): number {
    const ids = this.#ids;
    let best = 0;
    let run = 0;
    // Twice round, so a run that wraps past the end is counted whole.
    for (let i = 0; i < ids.length * 2; i++) {
      run = ids[i & this.#mask] !== 0 ? run + 1 : 0;
      if (run > best) best = run;
    }
    return Math.min(best, ids.length);
  }

  /** The values, as a new array (callers may change the table while going through it). */
  values(): T[] {
    const out: T[] = [];
    const ids = this.#ids;
    for (let i = 0; i < ids.length; i++) if (ids[i] !== 0) out.push(this.#values[i]!);
    return out;
  }

  clear(): void {
    this.#ids = new Array<number>(MIN_CAPACITY).fill(0);
    this.#values = new Array<T | undefined>(MIN_CAPACITY).fill(undefined);
    this.#mask = MIN_CAPACITY - 1;
    this.#shift = 32 - 3;
    this.size = 0;
  }

  #grow(): void {
    const ids = this.#ids;
    const values = this.#values;
    const cap = ids.length * 2;
    this.#ids = new Array<number>(cap).fill(0);
    this.#values = new Array<T | undefined>(cap).fill(undefined);
    this.#mask = cap - 1;
    this.#shift = 32 - Math.log2(cap);
    this.size = 0;
    for (let i = 0; i < ids.length; i++) if (ids[i] !== 0) this.set(ids[i], values[i]!);
  }
}
