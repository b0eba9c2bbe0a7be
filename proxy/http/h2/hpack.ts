/**
 * HPACK (RFC 7541): the field-block compression of HTTP/2. One decoder and one encoder per
 * connection direction, each with its dynamic table.
 *
 * Strings are latin1: one char per byte, both ways (field values are octets; the HTTP layer
 * never holds characters above 0xff). The encoder indexes fields that repeat from request to
 * request (authority, content-type, user-agent, ...) so a repeated head costs a few bytes; it
 * sends values as raw literals (no Huffman: the CPU is worth more than the bytes between
 * proxies), and never indexes credentials or per-request values.
 */
import { huffmanDecode, HuffmanError } from "./hpack_huffman.ts";

/** A header block that cannot be decoded: the connection ends with GOAWAY COMPRESSION_ERROR. */
export class HpackError extends Error {
  override name = "HpackError";
}

/**
 * The block exceeded the list-size or field-count limit. The whole block was still decoded, so
 * the dynamic table stays in sync: only the stream is refused, the connection goes on.
 */
export class HeaderListTooLarge extends Error {
  override name = "HeaderListTooLarge";
  constructor(readonly size: number, readonly count: number, message: string) {
    super(message);
  }
}

/** RFC 7541 Appendix A, index 1..61. */
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
const STATIC_LEN = STATIC.length;

/** name → first static index; name → value → static index (only entries with a value). */
const STATIC_NAME = new Map<string, number>();
const STATIC_PAIR = new Map<string, Map<string, number>>();
for (let i = 0; i < STATIC_LEN; i++) {
  const [n, v] = STATIC[i];
  if (!STATIC_NAME.has(n)) STATIC_NAME.set(n, i + 1);
  if (v !== "") {
    let m = STATIC_PAIR.get(n);
    if (!m) STATIC_PAIR.set(n, m = new Map());
    m.set(v, i + 1);
  }
}

/** RFC 7541 §4.1: an entry's size is its name and value length plus 32. */
const entrySize = (n: string, v: string) => n.length + v.length + 32;

const latin1Slice =
  (Buffer.prototype as unknown as { latin1Slice(s: number, e: number): string }).latin1Slice;

function latin1(b: Uint8Array, start: number, end: number): string {
  if (end - start < 16) {
    let s = "";
    for (let i = start; i < end; i++) s += String.fromCharCode(b[i]);
    return s;
  }
  return latin1Slice.call(b, start, end);
}

/** The dynamic table: newest entry last; dynamic index 1 is the newest. */
class DynamicTable {
  names: string[] = [];
  values: string[] = [];
  size = 0;
  max: number;

  constructor(max: number) {
    this.max = max;
  }

  get length(): number {
    return this.names.length;
  }

  add(n: string, v: string): void {
    const s = entrySize(n, v);
    this.evictTo(this.max - s);
    if (s > this.max) return; // too large: the table is just emptied (§4.4)
    this.names.push(n);
    this.values.push(v);
    this.size += s;
  }

  resize(max: number): void {
    this.max = max;
    this.evictTo(max);
  }

  evictTo(limit: number): void {
    let k = 0;
    while (this.size > limit && k < this.names.length) {
      this.size -= entrySize(this.names[k], this.values[k]);
      k++;
    }
    if (k > 0) {
      this.names.splice(0, k);
      this.values.splice(0, k);
    }
  }
}

export class HpackDecoder {
  readonly #table: DynamicTable;
  /** The SETTINGS_HEADER_TABLE_SIZE we advertised: size updates may not exceed it. */
  readonly #limit: number;
  readonly #maxList: number;
  readonly #maxCount: number;
  lastListSize = 0;

  constructor(opts: { maxTableSize?: number; maxListSize?: number; maxFieldCount?: number } = {}) {
    this.#limit = opts.maxTableSize ?? 4096;
    this.#table = new DynamicTable(this.#limit);
    this.#maxList = opts.maxListSize ?? Infinity;
    this.#maxCount = opts.maxFieldCount ?? Infinity;
  }

  /** Current dynamic table contents, newest first (for tests). */
  get dynamicEntries(): [string, string][] {
    const t = this.#table;
    const out: [string, string][] = [];
    for (let i = t.length - 1; i >= 0; i--) out.push([t.names[i], t.values[i]]);
    return out;
  }

  get dynamicSize(): number {
    return this.#table.size;
  }

  /** One complete block → [name0, value0, ...] in wire order. */
  decode(block: Uint8Array): string[] {
    const out: string[] = [];
    const t = this.#table;
    const n = block.length;
    let at = 0;
    let listSize = 0;
    let count = 0;
    let over = false;
    let fieldsSeen = false;
    // Integer and string readers share `at` (RFC 7541 §5.1, §5.2).
    const int = (prefixBits: number): number => {
      const mask = (1 << prefixBits) - 1;
      let v = block[at++] & mask;
      if (v < mask) return v;
      let shift = 0;
      for (;;) {
        if (at >= n) throw new HpackError("truncated integer");
        const b = block[at++];
        v += (b & 0x7f) * 2 ** shift;
        shift += 7;
        if ((b & 0x80) === 0) break;
        if (shift > 28) throw new HpackError("integer overflow");
      }
      if (v > 0x7fffffff) throw new HpackError("integer overflow");
      return v;
    };
    const str = (): string => {
      if (at >= n) throw new HpackError("truncated block");
      const huffman = (block[at] & 0x80) !== 0;
      const len = int(7);
      if (len > n - at) throw new HpackError(`string of ${len} bytes runs past the end of the block`);
      const start = at;
      at += len;
      if (!huffman) return latin1(block, start, at);
      try {
        return huffmanDecode(block, start, at);
      } catch (e) {
        if (e instanceof HuffmanError) throw new HpackError(e.message);
        throw e;
      }
    };
    const lookup = (idx: number): number => {
      if (idx === 0) throw new HpackError("index 0 is not valid");
      if (idx > STATIC_LEN + t.length) {
        throw new HpackError(
          `index ${idx} is beyond the tables (${STATIC_LEN} static + ${t.length} dynamic)`,
        );
      }
      return idx;
    };
    const nameAt = (idx: number): string =>
      idx <= STATIC_LEN ? STATIC[idx - 1][0] : t.names[t.length - (idx - STATIC_LEN)];
    const valueAt = (idx: number): string =>
      idx <= STATIC_LEN ? STATIC[idx - 1][1] : t.values[t.length - (idx - STATIC_LEN)];

    while (at < n) {
      const b = block[at];
      let name: string;
      let value: string;
      if (b & 0x80) {
        const idx = lookup(int(7));
        name = nameAt(idx);
        value = valueAt(idx);
      } else if (b & 0x40) {
        const idx = int(6);
        name = idx === 0 ? str() : nameAt(lookup(idx));
        value = str();
        t.add(name, value);
      } else if (b & 0x20) {
        if (fieldsSeen) throw new HpackError("dynamic table size update after a field");
        const size = int(5);
        if (size > this.#limit) {
          throw new HpackError(`dynamic table size update ${size} exceeds the limit ${this.#limit}`);
        }
        t.resize(size);
        continue;
      } else {
        // Literal without indexing (0000) or never indexed (0001): same layout, 4-bit index.
        const idx = int(4);
        name = idx === 0 ? str() : nameAt(lookup(idx));
        value = str();
      }
      fieldsSeen = true;
      listSize += name.length + value.length + 32;
      count++;
      if (listSize > this.#maxList || count > this.#maxCount) over = true;
      if (!over) out.push(name, value);
    }
    this.lastListSize = listSize;
    if (over) {
      throw new HeaderListTooLarge(
        listSize,
        count,
        `header list of ${count} fields, ${listSize} bytes exceeds the limit (${this.#maxCount} fields, ${this.#maxList} bytes)`,
      );
    }
    return out;
  }
}

/** Never indexed (RFC 7541 §7.1.3): short credentials an attacker could probe the table for. */
function sensitive(name: string, value: string): boolean {
  return name === "authorization" || name === "proxy-authorization" ||
    ((name === "cookie" || name === "set-cookie") && value.length < 20);
}

/** Values that change with every request: indexing them would only churn the table. */
const NOT_INDEXED = new Set([
  ":path",
  "content-length",
  "date",
  "etag",
  "last-modified",
  "grpc-timeout",
  "grpc-message",
  "l5d-client-id",
  "x-request-id",
  "traceparent",
  "if-modified-since",
  "if-none-match",
]);

export class HpackEncoder {
  /** Entries newest last, with a stable id each (ids grow by one per insertion). */
  #names: string[] = [];
  #values: string[] = [];
  #firstId = 0;
  #size = 0;
  #max: number;
  /** name → value → id of the newest entry with that pair; name → id of the newest with that name. */
  #pairs = new Map<string, Map<string, number>>();
  #byName = new Map<string, number>();
  #pendingSize: number | undefined;
  #buf = new Uint8Array(4096);
  #at = 0;

  constructor(opts: { maxTableSize?: number } = {}) {
    this.#max = opts.maxTableSize ?? 4096;
  }

  /** The peer's SETTINGS_HEADER_TABLE_SIZE: the next block starts with a size update (§4.2). */
  setMaxTableSize(n: number): void {
    if (n === this.#max && this.#pendingSize === undefined) return;
    this.#max = n;
    this.#pendingSize = Math.min(this.#pendingSize ?? n, n);
    this.#evictTo(n);
  }

  /** One block for [name, value, ...] (lower-case names, pseudo-headers first). A fresh copy. */
  encode(fields: string[]): Uint8Array {
    this.#at = 0;
    if (this.#pendingSize !== undefined) {
      // The smallest size since the last block, then the current one if it grew back (§4.2).
      this.#int(this.#pendingSize, 5, 0x20);
      if (this.#pendingSize !== this.#max) this.#int(this.#max, 5, 0x20);
      this.#pendingSize = undefined;
    }
    for (let i = 0; i < fields.length; i += 2) this.#field(fields[i], fields[i + 1]);
    return this.#buf.slice(0, this.#at);
  }

  #index(id: number): number {
    // Dynamic index 1 is the newest entry.
    return STATIC_LEN + (this.#firstId + this.#names.length - id);
  }

  #field(name: string, value: string): void {
    const sp = STATIC_PAIR.get(name)?.get(value);
    if (sp !== undefined) return this.#int(sp, 7, 0x80);
    const dp = this.#pairs.get(name)?.get(value);
    if (dp !== undefined) return this.#int(this.#index(dp), 7, 0x80);
    const dn = this.#byName.get(name);
    const nameIdx = STATIC_NAME.get(name) ?? (dn !== undefined ? this.#index(dn) : 0);
    if (sensitive(name, value)) {
      this.#int(nameIdx, 4, 0x10);
    } else if (NOT_INDEXED.has(name) || entrySize(name, value) > this.#max / 4) {
      this.#int(nameIdx, 4, 0x00);
    } else {
      this.#int(nameIdx, 6, 0x40);
      this.#insert(name, value);
    }
    if (nameIdx === 0) this.#str(name);
    this.#str(value);
  }

  #insert(name: string, value: string): void {
    const s = entrySize(name, value);
    this.#evictTo(this.#max - s);
    if (s > this.#max) return;
    const id = this.#firstId + this.#names.length;
    this.#names.push(name);
    this.#values.push(value);
    this.#size += s;
    let m = this.#pairs.get(name);
    if (!m) this.#pairs.set(name, m = new Map());
    m.set(value, id);
    this.#byName.set(name, id);
  }

  #evictTo(limit: number): void {
    let k = 0;
    while (this.#size > limit && k < this.#names.length) {
      const n = this.#names[k];
      const v = this.#values[k];
      const id = this.#firstId + k;
      this.#size -= entrySize(n, v);
      const m = this.#pairs.get(n);
      if (m?.get(v) === id) {
        m.delete(v);
        if (m.size === 0) this.#pairs.delete(n);
      }
      if (this.#byName.get(n) === id) this.#byName.delete(n);
      k++;
    }
    if (k > 0) {
      this.#names.splice(0, k);
      this.#values.splice(0, k);
      this.#firstId += k;
    }
  }

  #room(n: number): void {
    if (this.#at + n <= this.#buf.length) return;
    const b = new Uint8Array(Math.max(this.#buf.length * 2, this.#at + n));
    b.set(this.#buf.subarray(0, this.#at));
    this.#buf = b;
  }

  #int(v: number, prefixBits: number, first: number): void {
    this.#room(6);
    const b = this.#buf;
    const max = (1 << prefixBits) - 1;
    if (v < max) {
      b[this.#at++] = first | v;
      return;
    }
    b[this.#at++] = first | max;
    v -= max;
    while (v >= 128) {
      b[this.#at++] = (v & 0x7f) | 0x80;
      v = Math.floor(v / 128);
    }
    b[this.#at++] = v;
  }

  /** A raw literal string (H = 0); chars are written as their low byte (latin1). */
  #str(s: string): void {
    this.#int(s.length, 7, 0);
    this.#room(s.length);
    const b = this.#buf;
    let at = this.#at;
    for (let i = 0; i < s.length; i++) b[at++] = s.charCodeAt(i);
    this.#at = at;
  }
}
