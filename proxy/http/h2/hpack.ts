/**
 * HPACK (RFC 7541): field-block compression for weft's HTTP/2 codec. One decoder and one encoder
 * per connection, each with its own dynamic table.
 *
 * Strings are latin1 both ways: one char per octet. The decoder yields strings whose char codes
 * are the octets received; the encoder writes each char's code as one octet, so callers must only
 * pass chars <= 0xff (the HTTP layer holds field values as octets; a char above 0xff would be
 * written as its low byte, which is wrong, so it is the caller's contract not to do that).
 *
 * The encoder sends raw literals, never Huffman: between proxies CPU is worth more than the
 * ~25% of literal bytes Huffman saves, and repeated fields become 1-2 byte indexes anyway
 * (hpack_bench.ts measures both). The decoder accepts both, as peers use Huffman freely.
 */
import { Buffer } from "node:buffer";
import { huffmanDecode, huffmanFaultMessage, huffmanMaxDecodedLength } from "./hpack_huffman.ts";
import {
  DynamicTable,
  EncoderTable,
  entrySize,
  STATIC_BY_NAME,
  STATIC_LENGTH,
  STATIC_NAMES,
  STATIC_VALUES,
} from "./hpack_table.ts";

/** A header block that cannot be decoded: the connection must end with GOAWAY COMPRESSION_ERROR. */
export class HpackError extends Error {
  override name = "HpackError";
}

/**
 * The decoded block exceeded the list-size or count limit; the rest of the block WAS still
 * decoded (the dynamic table stays in sync), so the connection can continue and only the stream
 * is refused.
 */
export class HeaderListTooLarge extends Error {
  override name = "HeaderListTooLarge";
  constructor(readonly size: number, readonly count: number, message: string) {
    super(message);
  }
}

/** SETTINGS_HEADER_TABLE_SIZE's initial value (RFC 9113 §6.5.2). */
const DEFAULT_TABLE_SIZE = 4096;
/** Integers above this are refused: no HPACK quantity legitimately comes near it. */
const MAX_INT = 0x7fffffff;

const latin1Slice = (Buffer.prototype as unknown as { latin1Slice(s: number, e: number): string })
  .latin1Slice;

/** Octets → string, one char per octet. */
function latin1(b: Uint8Array, start: number, end: number): string {
  // Measured on Deno 2.9: latin1Slice costs a flat ~75 ns (a native call); a fromCharCode loop
  // is cheaper up to about 8 chars, which covers methods, statuses, "trailers", "0" ...
  if (end - start <= 8) {
    let s = "";
    for (let i = start; i < end; i++) s += String.fromCharCode(b[i]);
    return s;
  }
  return latin1Slice.call(b, start, end);
}

const EMPTY = new Uint8Array(0);

export class HpackDecoder {
  readonly #table: DynamicTable;
  /** The SETTINGS_HEADER_TABLE_SIZE we advertised: size updates may not exceed it (§6.3). */
  readonly #limit: number;
  readonly #maxListSize: number;
  readonly #maxFieldCount: number;
  /** The block being decoded and the read position in it. */
  #buf: Uint8Array = EMPTY;
  #at = 0;
  /** End of the block within `#buf`. */
  #end = 0;
  /** Output of Huffman decoding before it becomes a string; grown on demand. */
  #scratch = new Uint8Array(256);
  #lastListSize = 0;

  /**
   * maxTableSize: the SETTINGS_HEADER_TABLE_SIZE we advertised (default 4096). maxListSize and
   * maxFieldCount default to no limit; memory is bounded by the block anyway (each field costs
   * at least one octet and decoded strings are shared with the dynamic table).
   */
  constructor(opts: { maxTableSize?: number; maxListSize?: number; maxFieldCount?: number } = {}) {
    this.#limit = opts.maxTableSize ?? DEFAULT_TABLE_SIZE;
    this.#table = new DynamicTable(this.#limit);
    this.#maxListSize = opts.maxListSize ?? Infinity;
    this.#maxFieldCount = opts.maxFieldCount ?? Infinity;
  }

  /** Size of the last decoded list (RFC 9113 §6.5.2 accounting). */
  get lastListSize(): number {
    return this.#lastListSize;
  }

  /** Dynamic table entries, newest first (for tests and debugging). */
  get dynamicEntries(): [string, string][] {
    const t = this.#table;
    const out: [string, string][] = [];
    for (let i = 0; i < t.length; i++) out.push([t.name(i), t.value(i)]);
    return out;
  }

  /** Dynamic table size in RFC 7541 §4.1 octets. */
  get dynamicSize(): number {
    return this.#table.size;
  }

  /** Current dynamic table maximum (as last set by a size update). */
  get dynamicMaxSize(): number {
    return this.#table.maxSize;
  }

  /**
   * Decodes one complete header block into [name0, value0, name1, value1, ...] in wire order.
   * Throws HpackError for a malformed block, or HeaderListTooLarge after decoding all of it.
   */
  decode(block: Uint8Array, start = 0, end = block.length): string[] {
    // A range, so the session can decode a frame's block where it lies in the socket's chunk.
    this.#buf = block;
    this.#at = start;
    this.#end = end;
    const t = this.#table;
    const maxList = this.#maxListSize;
    const maxCount = this.#maxFieldCount;
    const out: string[] = [];
    let size = 0;
    let count = 0;
    let over = false;
    try {
      while (this.#at < end) {
        const b = block[this.#at];
        let name: string;
        let value: string;
        if (b & 0x80) {
          // Indexed field (§6.1).
          const idx = this.#int(7);
          if (idx <= STATIC_LENGTH) {
            if (idx === 0) throw new HpackError("index 0 is not valid (RFC 7541 §6.1)");
            name = STATIC_NAMES[idx];
            value = STATIC_VALUES[idx];
          } else {
            const d = idx - STATIC_LENGTH - 1;
            if (d >= t.length) throw this.#beyond(idx);
            name = t.name(d);
            value = t.value(d);
          }
        } else if (b & 0x40) {
          // Literal with incremental indexing (§6.2.1). The name is read before the insertion,
          // which may evict the very entry it came from (§4.4).
          name = this.#name(6);
          value = this.#string();
          t.add(name, value);
        } else if (b & 0x20) {
          // Dynamic table size update (§6.3): only before the first field of a block (§4.2).
          if (count > 0) throw new HpackError("dynamic table size update after a field (RFC 7541 §4.2)");
          const n = this.#int(5);
          if (n > this.#limit) {
            throw new HpackError(`dynamic table size update ${n} exceeds the limit ${this.#limit}`);
          }
          t.setMaxSize(n);
          continue;
        } else {
          // Literal without indexing (0000) or never indexed (0001, §6.2.2-3): same layout.
          name = this.#name(4);
          value = this.#string();
        }
        size += name.length + value.length + 32;
        count++;
        if (over) continue;
        if (size > maxList || count > maxCount) {
          // Keep decoding so the table stays in sync, but stop collecting.
          over = true;
          continue;
        }
        out.push(name, value);
      }
    } finally {
      this.#buf = EMPTY; // don't pin the caller's block
    }
    this.#lastListSize = size;
    if (over) {
      throw new HeaderListTooLarge(
        size,
        count,
        `header list of ${count} fields, ${size} bytes exceeds the limit (${maxCount} fields, ${maxList} bytes)`,
      );
    }
    return out;
  }

  #beyond(idx: number): HpackError {
    return new HpackError(
      `index ${idx} is beyond the tables (${STATIC_LENGTH} static + ${this.#table.length} dynamic)`,
    );
  }

  /** An integer with an N-bit prefix (§5.1); the caller knows the first octet is there. */
  #int(prefixBits: number): number {
    const buf = this.#buf;
    let at = this.#at;
    const mask = (1 << prefixBits) - 1;
    let v = buf[at++] & mask;
    if (v === mask) {
      // Continuation octets, 7 bits each, least significant first. Five of them reach 2^35,
      // so a sixth can only be padding or overflow: both refused.
      let shift = 0;
      for (;;) {
        if (at >= this.#end) throw new HpackError("truncated block (in an integer)");
        const c = buf[at++];
        v += (c & 0x7f) * (1 << shift);
        if (v > MAX_INT) throw new HpackError("integer overflow");
        if ((c & 0x80) === 0) break;
        shift += 7;
        if (shift > 28) throw new HpackError("integer overflow");
      }
    }
    this.#at = at;
    return v;
  }

  /** A field name: an index into the tables with an N-bit prefix, or 0 and a literal. */
  #name(prefixBits: number): string {
    const idx = this.#int(prefixBits);
    if (idx === 0) return this.#string();
    if (idx <= STATIC_LENGTH) return STATIC_NAMES[idx];
    const d = idx - STATIC_LENGTH - 1;
    if (d >= this.#table.length) throw this.#beyond(idx);
    return this.#table.name(d);
  }

  /** A string literal (§5.2): H flag, 7-bit-prefix length, octets. */
  #string(): string {
    const buf = this.#buf;
    if (this.#at >= this.#end) throw new HpackError("truncated block (missing a string)");
    const huffman = buf[this.#at] & 0x80;
    const len = this.#int(7);
    const start = this.#at;
    const end = start + len;
    if (end > this.#end) {
      throw new HpackError(`truncated block: string of ${len} bytes, ${this.#end - start} left`);
    }
    this.#at = end;
    if (huffman === 0) return latin1(buf, start, end);
    const need = huffmanMaxDecodedLength(len);
    if (this.#scratch.length < need) this.#scratch = new Uint8Array(Math.max(need, this.#scratch.length * 2));
    const n = huffmanDecode(buf, start, end, this.#scratch);
    if (n < 0) throw new HpackError(huffmanFaultMessage(n));
    return latin1(this.#scratch, 0, n);
  }
}

/** Never indexed (RFC 7541 §7.1.3): credentials, whose guesses could be confirmed via the table. */
const NEVER_INDEXED = new Set(["authorization", "proxy-authorization"]);

/**
 * Sent without indexing: values that differ from request to request would only churn the table
 * and evict the fields that do repeat.
 */
const NOT_INDEXED = new Set([
  ":path",
  "content-length",
  "date",
  "age",
  "etag",
  "expires",
  "last-modified",
  "if-modified-since",
  "if-none-match",
  "grpc-timeout",
  "grpc-message",
  "x-request-id",
  "traceparent",
  "tracestate",
  "x-b3-traceid",
  "x-b3-spanid",
  "x-b3-parentspanid",
  "l5d-reqid",
  "l5d-ctx-trace",
  "l5d-ctx-deadline",
]);

/** Worst-case octets one field adds beyond its name and value: prefix octet + 5 per integer. */
const FIELD_OVERHEAD = 3 * 6;

export class HpackEncoder {
  readonly #table: EncoderTable;
  /** The largest table this encoder will use, whatever the peer allows. */
  readonly #cap: number;
  /** Smallest and last table size chosen since the previous block (§4.2); -1 when none. */
  #minUpdate = -1;
  #lastUpdate = -1;
  #buf: Uint8Array = new Uint8Array(1024);

  /**
   * maxTableSize: the largest dynamic table the encoder uses (default 4096). The peer's limit
   * starts at 4096 (the protocol's initial SETTINGS_HEADER_TABLE_SIZE); the table size is the
   * smaller of the two, and a cap below 4096 is signalled at the start of the first block.
   */
  constructor(opts: { maxTableSize?: number } = {}) {
    this.#cap = opts.maxTableSize ?? DEFAULT_TABLE_SIZE;
    this.#table = new EncoderTable(DEFAULT_TABLE_SIZE);
    if (this.#cap !== DEFAULT_TABLE_SIZE) this.setMaxTableSize(DEFAULT_TABLE_SIZE);
  }

  /**
   * The peer's SETTINGS_HEADER_TABLE_SIZE changed (RFC 7541 §4.2, §6.3): the table becomes
   * min(n, cap) and the next block starts with the size update(s).
   */
  setMaxTableSize(n: number): void {
    const size = Math.min(n, this.#cap);
    if (this.#lastUpdate < 0) {
      if (size === this.#table.maxSize) return;
      this.#minUpdate = size;
    } else if (size < this.#minUpdate) {
      this.#minUpdate = size;
    }
    this.#lastUpdate = size;
  }

  /**
   * Encodes [name, value, ...] (lower-case names, pseudo-headers first: the caller ensures it;
   * chars must be <= 0xff, see the module comment) into one header block.
   *
   * Returns a view into a buffer the encoder reuses: it is valid until the next encode() call.
   * Copy it (or write it out) before encoding again.
   */
  encode(fields: string[]): Uint8Array {
    const n = this.encodeBlock(fields); // first: it may replace the buffer
    return this.#buf.subarray(0, n);
  }

  /**
   * As `encode`, without a view: the block is `block[0, returned length)`, valid until the next
   * encode (saves the session an object per field block).
   */
  encodeBlock(fields: string[]): number {
    const t = this.#table;
    let buf = this.#buf;
    let at = 0;
    if (this.#lastUpdate >= 0) {
      // The smallest size chosen since the last block, then the final one if it differs (§4.2).
      if (this.#minUpdate < this.#lastUpdate) {
        at = writeInt(buf, at, this.#minUpdate, 5, 0x20);
        t.setMaxSize(this.#minUpdate);
      }
      at = writeInt(buf, at, this.#lastUpdate, 5, 0x20);
      t.setMaxSize(this.#lastUpdate);
      this.#minUpdate = this.#lastUpdate = -1;
    }
    for (let i = 0; i < fields.length; i += 2) {
      const name = fields[i];
      const value = fields[i + 1];
      const need = at + name.length + value.length + FIELD_OVERHEAD;
      if (need > buf.length) buf = this.#grow(buf, at, need);

      const st = STATIC_BY_NAME.get(name);
      if (st !== undefined) {
        const idx = st.values.get(value);
        if (idx !== undefined) {
          at = writeInt(buf, at, idx, 7, 0x80);
          continue;
        }
      }
      const dyn = t.byName.get(name);
      if (dyn !== undefined) {
        const id = dyn.values.get(value);
        if (id !== undefined) {
          at = writeInt(buf, at, STATIC_LENGTH + t.inserted - id, 7, 0x80);
          continue;
        }
      }
      // A literal; name by index when either table has it (static indexes are smaller).
      const nameIdx = st !== undefined
        ? st.index
        : dyn !== undefined
        ? STATIC_LENGTH + t.inserted - dyn.id
        : 0;
      let index = false;
      if (NEVER_INDEXED.has(name) || ((name === "cookie" || name === "set-cookie") && value.length < 20)) {
        at = writeInt(buf, at, nameIdx, 4, 0x10);
      } else if (NOT_INDEXED.has(name) || entrySize(name, value) > t.maxSize >>> 2) {
        // An entry over a quarter of the table would evict much for one probably-unique value.
        at = writeInt(buf, at, nameIdx, 4, 0x00);
      } else {
        at = writeInt(buf, at, nameIdx, 6, 0x40);
        index = true;
      }
      if (nameIdx === 0) at = writeRaw(buf, at, name);
      at = writeRaw(buf, at, value);
      if (index) t.add(name, value);
    }
    return at;
  }

  /** The buffer the last block was encoded into (see `encodeBlock`). */
  get block(): Uint8Array {
    return this.#buf;
  }

  /** Dynamic table size in RFC 7541 §4.1 octets (for tests: it mirrors the peer decoder's). */
  get dynamicSize(): number {
    return this.#table.size;
  }

  /** Dynamic table entries held (for tests). */
  get dynamicLength(): number {
    return this.#table.length;
  }

  #grow(buf: Uint8Array, used: number, need: number): Uint8Array {
    const b = new Uint8Array(Math.max(need, buf.length * 2));
    b.set(buf.subarray(0, used));
    this.#buf = b;
    return b;
  }
}

/** Writes v with an N-bit prefix under `first`'s flag bits (§5.1); returns the new position. */
function writeInt(buf: Uint8Array, at: number, v: number, prefixBits: number, first: number): number {
  const max = (1 << prefixBits) - 1;
  if (v < max) {
    buf[at++] = first | v;
    return at;
  }
  buf[at++] = first | max;
  v -= max;
  while (v >= 0x80) {
    buf[at++] = (v & 0x7f) | 0x80;
    v >>>= 7;
  }
  buf[at++] = v;
  return at;
}

/** A raw (H = 0) string literal: each char as one octet (latin1). */
function writeRaw(buf: Uint8Array, at: number, s: string): number {
  const n = s.length;
  at = writeInt(buf, at, n, 7, 0);
  for (let i = 0; i < n; i++) buf[at++] = s.charCodeAt(i);
  return at;
}
