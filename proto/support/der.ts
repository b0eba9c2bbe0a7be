/**
 * A small DER reader and writer, shared by the identity controller (CSR in, leaf out) and the
 * proxy (CSR out, issued chain in). Generic ASN.1 libraries cost more per request than the
 * signature itself on the controller, and megabytes of memory in every proxy; both only walk a
 * few known shapes. Every read is bounds-checked and fails with a DerError: the input comes from
 * the network.
 */

export class DerError extends Error {
  override name = "DerError";
}

/** One element: `tag`, the value's bounds, and the whole element's bounds in `buf`. */
export interface Tlv {
  tag: number;
  start: number;
  valueStart: number;
  end: number;
}

export const Tag = {
  boolean: 0x01,
  integer: 0x02,
  bitString: 0x03,
  octetString: 0x04,
  null: 0x05,
  oid: 0x06,
  utf8String: 0x0c,
  printableString: 0x13,
  ia5String: 0x16,
  utcTime: 0x17,
  generalizedTime: 0x18,
  sequence: 0x30,
  set: 0x31,
} as const;

/** Reads the element at `pos`, which must end at or before `limit`. */
export function readTlv(buf: Uint8Array, pos: number, limit: number = buf.length): Tlv {
  if (pos + 2 > limit) throw new DerError(`truncated element at offset ${pos}`);
  const tag = buf[pos];
  if ((tag & 0x1f) === 0x1f) throw new DerError(`multi-byte tag at offset ${pos} is not supported`);
  let len = buf[pos + 1];
  let valueStart = pos + 2;
  if (len & 0x80) {
    const n = len & 0x7f;
    if (n === 0) throw new DerError(`indefinite length at offset ${pos} (BER, not DER)`);
    if (n > 3) {
      throw new DerError(`length of ${n} bytes at offset ${pos}: elements over 16 MiB are not supported`);
    }
    if (valueStart + n > limit) throw new DerError(`truncated length at offset ${pos}`);
    len = 0;
    for (let i = 0; i < n; i++) len = (len << 8) | buf[valueStart + i];
    valueStart += n;
    if (len < 0x80 || (n > 1 && len < (1 << (8 * (n - 1))))) {
      throw new DerError(`non-minimal length at offset ${pos}`);
    }
  }
  const end = valueStart + len;
  if (end > limit) throw new DerError(`element at offset ${pos} runs past its container`);
  return { tag, start: pos, valueStart, end };
}

/** Reads the element at `pos` and checks its tag. */
export function expectTlv(buf: Uint8Array, pos: number, limit: number, tag: number, what: string): Tlv {
  if (pos >= limit) throw new DerError(`${what}: missing at offset ${pos}`);
  if (buf[pos] !== tag) {
    throw new DerError(`${what}: expected tag 0x${hex(tag)}, got 0x${hex(buf[pos])} at offset ${pos}`);
  }
  return readTlv(buf, pos, limit);
}

/** The children of a constructed element. */
export function children(buf: Uint8Array, parent: Tlv): Tlv[] {
  const out: Tlv[] = [];
  for (let p = parent.valueStart; p < parent.end;) {
    const t = readTlv(buf, p, parent.end);
    out.push(t);
    p = t.end;
  }
  return out;
}

export function bytesEqual(a: Uint8Array, aStart: number, aEnd: number, b: Uint8Array): boolean {
  if (aEnd - aStart !== b.length) return false;
  for (let i = 0; i < b.length; i++) if (a[aStart + i] !== b[i]) return false;
  return true;
}

// ---- reading whole trees (small inputs with untrusted nesting: certificates) ----

/** How deep `decodeDer` descends by default: certificates and CSRs need 7 levels. */
export const MAX_DER_DEPTH = 8;

/** A decoded element. */
export interface DerNode {
  tag: number;
  /** The whole element: tag, length and value. */
  der: Uint8Array;
  /** The value bytes. */
  value: Uint8Array;
  /** The elements inside a constructed one (tag bit 0x20); undefined for primitive ones. */
  children: DerNode[] | undefined;
}

/**
 * Decodes `buf`, which must hold exactly one element, into a tree; constructed elements are
 * descended at most `maxDepth` levels below the root (recursion stays bounded whatever the input).
 * Throws DerError only.
 */
export function decodeDer(buf: Uint8Array, maxDepth: number = MAX_DER_DEPTH): DerNode {
  if (buf.length === 0) throw new DerError("no data");
  const root = decodeNode(buf, 0, buf.length, 0, maxDepth);
  if (root.der.length !== buf.length) {
    throw new DerError(`${buf.length - root.der.length} trailing bytes after the element`);
  }
  return root;
}

function decodeNode(buf: Uint8Array, pos: number, limit: number, depth: number, maxDepth: number): DerNode {
  const t = readTlv(buf, pos, limit);
  const node: DerNode = {
    tag: t.tag,
    der: buf.subarray(t.start, t.end),
    value: buf.subarray(t.valueStart, t.end),
    children: undefined,
  };
  if (t.tag & 0x20) {
    node.children = [];
    for (let p = t.valueStart; p < t.end;) {
      if (depth >= maxDepth) throw new DerError(`nesting deeper than ${maxDepth} levels at offset ${p}`);
      const child = decodeNode(buf, p, t.end, depth + 1, maxDepth);
      node.children.push(child);
      p += child.der.length;
    }
  }
  return node;
}

/** The dotted form of an OBJECT IDENTIFIER's value bytes. */
export function decodeOid(value: Uint8Array): string {
  if (value.length === 0) throw new DerError("empty OBJECT IDENTIFIER");
  const arcs: number[] = [];
  let v = 0;
  for (let i = 0; i < value.length; i++) {
    const b = value[i];
    if (v === 0 && b === 0x80) throw new DerError("OBJECT IDENTIFIER arc with a leading zero byte");
    if (v > (Number.MAX_SAFE_INTEGER - 0x7f) / 128) throw new DerError("OBJECT IDENTIFIER arc too large");
    v = v * 128 + (b & 0x7f);
    if (b & 0x80) continue;
    if (arcs.length === 0) arcs.push(v < 40 ? 0 : v < 80 ? 1 : 2, v < 80 ? v % 40 : v - 80);
    else arcs.push(v);
    v = 0;
  }
  if (value[value.length - 1] & 0x80) throw new DerError("OBJECT IDENTIFIER ends inside an arc");
  return arcs.join(".");
}

function hex(n: number): string {
  return n.toString(16).padStart(2, "0");
}

// ---- writing ----

function lengthBytes(len: number): number[] {
  if (len > 0xffffff) throw new DerError(`element of ${len} bytes: over 16 MiB is not supported`);
  if (len < 0x80) return [len];
  if (len < 0x100) return [0x81, len];
  if (len < 0x10000) return [0x82, len >> 8, len & 0xff];
  return [0x83, len >> 16, (len >> 8) & 0xff, len & 0xff];
}

/** An element with the given tag whose value is the concatenation of `parts`. */
export function tlv(tag: number, ...parts: Uint8Array[]): Uint8Array<ArrayBuffer> {
  let len = 0;
  for (const p of parts) len += p.length;
  const head = lengthBytes(len);
  const out = new Uint8Array(1 + head.length + len);
  out[0] = tag;
  out.set(head, 1);
  let o = 1 + head.length;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}

/** An INTEGER from unsigned big-endian bytes (adds the leading zero DER needs). */
export function unsignedInteger(bytes: Uint8Array): Uint8Array {
  let i = 0;
  while (i < bytes.length - 1 && bytes[i] === 0) i++;
  const v = bytes.subarray(i);
  return v[0] & 0x80 ? tlv(Tag.integer, new Uint8Array([0]), v) : tlv(Tag.integer, v);
}

/** Encodes a dotted OID (only used to build constants at load time). */
export function oid(dotted: string): Uint8Array {
  const arcs = dotted.split(".").map(Number);
  const body: number[] = [];
  // The first two arcs share one subidentifier (X.690 8.19.4), which may take several bytes.
  for (const arc of [arcs[0] * 40 + arcs[1], ...arcs.slice(2)]) {
    const tmp: number[] = [arc & 0x7f];
    for (let v = Math.floor(arc / 128); v > 0; v = Math.floor(v / 128)) tmp.unshift((v & 0x7f) | 0x80);
    body.push(...tmp);
  }
  return tlv(Tag.oid, new Uint8Array(body));
}

const pad2 = (n: number) => (n < 10 ? "0" : "") + n;

/** UTCTime for 1950–2049 and GeneralizedTime otherwise, as RFC 5280 requires; whole seconds. */
export function derTime(ms: number): Uint8Array {
  const d = new Date(ms);
  const y = d.getUTCFullYear();
  const rest = pad2(d.getUTCMonth() + 1) + pad2(d.getUTCDate()) + pad2(d.getUTCHours()) +
    pad2(d.getUTCMinutes()) + pad2(d.getUTCSeconds()) + "Z";
  if (y >= 1950 && y < 2050) return tlv(Tag.utcTime, ascii(pad2(y % 100) + rest));
  return tlv(Tag.generalizedTime, ascii(String(y).padStart(4, "0") + rest));
}

export function ascii(s: string): Uint8Array {
  const out = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) out[i] = s.charCodeAt(i);
  return out;
}

export function decodeAscii(buf: Uint8Array, start: number, end: number): string {
  let s = "";
  for (let i = start; i < end; i++) s += String.fromCharCode(buf[i]);
  return s;
}

/** ECDSA signature: DER `SEQUENCE { r, s }` → the raw `r || s` form WebCrypto verifies. */
export function ecdsaDerToRaw(buf: Uint8Array, size = 32): Uint8Array {
  const seq = expectTlv(buf, 0, buf.length, Tag.sequence, "ECDSA signature");
  if (seq.end !== buf.length) throw new DerError("ECDSA signature: trailing bytes");
  const r = expectTlv(buf, seq.valueStart, seq.end, Tag.integer, "ECDSA signature r");
  const s = expectTlv(buf, r.end, seq.end, Tag.integer, "ECDSA signature s");
  if (s.end !== seq.end) throw new DerError("ECDSA signature: extra fields");
  const out = new Uint8Array(2 * size);
  for (const [t, off] of [[r, 0], [s, size]] as const) {
    let v = buf.subarray(t.valueStart, t.end);
    while (v.length > 0 && v[0] === 0) v = v.subarray(1);
    if (v.length > size) throw new DerError("ECDSA signature: integer too large");
    out.set(v, off + size - v.length);
  }
  return out;
}

/** Raw `r || s` → DER `SEQUENCE { r, s }` as X.509 carries it. */
export function ecdsaRawToDer(raw: Uint8Array): Uint8Array {
  const half = raw.length / 2;
  return tlv(Tag.sequence, unsignedInteger(raw.subarray(0, half)), unsignedInteger(raw.subarray(half)));
}
