/**
 * HPACK Huffman code (RFC 7541 §5.2, Appendix B). Pure bytes in, bytes out: the caller turns the
 * decoded bytes into a latin1 string and maps fault codes to its own error type, so this module has
 * no dependency on the rest of the codec.
 *
 * Decoding walks a 4-bit state machine built once at module load from the code table: a state is
 * an internal node of the code tree (257 leaves, so exactly 256 internal nodes), and each nibble
 * moves to the next node, emitting at most one symbol (the shortest code is 5 bits, longer than a
 * nibble). The table is 256 × 16 entries (16 KiB), small enough to stay in L1.
 */

/** Codes of symbols 0..255 and EOS (256), right-aligned, from RFC 7541 Appendix B. */
// deno-fmt-ignore
const CODES = new Uint32Array([
  0x1ff8, 0x7fffd8, 0xfffffe2, 0xfffffe3, 0xfffffe4, 0xfffffe5, 0xfffffe6, 0xfffffe7,
  0xfffffe8, 0xffffea, 0x3ffffffc, 0xfffffe9, 0xfffffea, 0x3ffffffd, 0xfffffeb, 0xfffffec,
  0xfffffed, 0xfffffee, 0xfffffef, 0xffffff0, 0xffffff1, 0xffffff2, 0x3ffffffe, 0xffffff3,
  0xffffff4, 0xffffff5, 0xffffff6, 0xffffff7, 0xffffff8, 0xffffff9, 0xffffffa, 0xffffffb,
  0x14, 0x3f8, 0x3f9, 0xffa, 0x1ff9, 0x15, 0xf8, 0x7fa,
  0x3fa, 0x3fb, 0xf9, 0x7fb, 0xfa, 0x16, 0x17, 0x18,
  0x0, 0x1, 0x2, 0x19, 0x1a, 0x1b, 0x1c, 0x1d,
  0x1e, 0x1f, 0x5c, 0xfb, 0x7ffc, 0x20, 0xffb, 0x3fc,
  0x1ffa, 0x21, 0x5d, 0x5e, 0x5f, 0x60, 0x61, 0x62,
  0x63, 0x64, 0x65, 0x66, 0x67, 0x68, 0x69, 0x6a,
  0x6b, 0x6c, 0x6d, 0x6e, 0x6f, 0x70, 0x71, 0x72,
  0xfc, 0x73, 0xfd, 0x1ffb, 0x7fff0, 0x1ffc, 0x3ffc, 0x22,
  0x7ffd, 0x3, 0x23, 0x4, 0x24, 0x5, 0x25, 0x26,
  0x27, 0x6, 0x74, 0x75, 0x28, 0x29, 0x2a, 0x7,
  0x2b, 0x76, 0x2c, 0x8, 0x9, 0x2d, 0x77, 0x78,
  0x79, 0x7a, 0x7b, 0x7ffe, 0x7fc, 0x3ffd, 0x1ffd, 0xffffffc,
  0xfffe6, 0x3fffd2, 0xfffe7, 0xfffe8, 0x3fffd3, 0x3fffd4, 0x3fffd5, 0x7fffd9,
  0x3fffd6, 0x7fffda, 0x7fffdb, 0x7fffdc, 0x7fffdd, 0x7fffde, 0xffffeb, 0x7fffdf,
  0xffffec, 0xffffed, 0x3fffd7, 0x7fffe0, 0xffffee, 0x7fffe1, 0x7fffe2, 0x7fffe3,
  0x7fffe4, 0x1fffdc, 0x3fffd8, 0x7fffe5, 0x3fffd9, 0x7fffe6, 0x7fffe7, 0xffffef,
  0x3fffda, 0x1fffdd, 0xfffe9, 0x3fffdb, 0x3fffdc, 0x7fffe8, 0x7fffe9, 0x1fffde,
  0x7fffea, 0x3fffdd, 0x3fffde, 0xfffff0, 0x1fffdf, 0x3fffdf, 0x7fffeb, 0x7fffec,
  0x1fffe0, 0x1fffe1, 0x3fffe0, 0x1fffe2, 0x7fffed, 0x3fffe1, 0x7fffee, 0x7fffef,
  0xfffea, 0x3fffe2, 0x3fffe3, 0x3fffe4, 0x7ffff0, 0x3fffe5, 0x3fffe6, 0x7ffff1,
  0x3ffffe0, 0x3ffffe1, 0xfffeb, 0x7fff1, 0x3fffe7, 0x7ffff2, 0x3fffe8, 0x1ffffec,
  0x3ffffe2, 0x3ffffe3, 0x3ffffe4, 0x7ffffde, 0x7ffffdf, 0x3ffffe5, 0xfffff1, 0x1ffffed,
  0x7fff2, 0x1fffe3, 0x3ffffe6, 0x7ffffe0, 0x7ffffe1, 0x3ffffe7, 0x7ffffe2, 0xfffff2,
  0x1fffe4, 0x1fffe5, 0x3ffffe8, 0x3ffffe9, 0xffffffd, 0x7ffffe3, 0x7ffffe4, 0x7ffffe5,
  0xfffec, 0xfffff3, 0xfffed, 0x1fffe6, 0x3fffe9, 0x1fffe7, 0x1fffe8, 0x7ffff3,
  0x3fffea, 0x3fffeb, 0x1ffffee, 0x1ffffef, 0xfffff4, 0xfffff5, 0x3ffffea, 0x7ffff4,
  0x3ffffeb, 0x7ffffe6, 0x3ffffec, 0x3ffffed, 0x7ffffe7, 0x7ffffe8, 0x7ffffe9, 0x7ffffea,
  0x7ffffeb, 0xffffffe, 0x7ffffec, 0x7ffffed, 0x7ffffee, 0x7ffffef, 0x7fffff0, 0x3ffffee,
  0x3fffffff,
]);

/** Bit length of each code in CODES. */
// deno-fmt-ignore
const LENGTHS = new Uint8Array([
  13, 23, 28, 28, 28, 28, 28, 28, 28, 24, 30, 28, 28, 30, 28, 28,
  28, 28, 28, 28, 28, 28, 30, 28, 28, 28, 28, 28, 28, 28, 28, 28,
  6, 10, 10, 12, 13, 6, 8, 11, 10, 10, 8, 11, 8, 6, 6, 6,
  5, 5, 5, 6, 6, 6, 6, 6, 6, 6, 7, 8, 15, 6, 12, 10,
  13, 6, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7,
  7, 7, 7, 7, 7, 7, 7, 7, 8, 7, 8, 13, 19, 13, 14, 6,
  15, 5, 6, 5, 6, 5, 6, 6, 6, 5, 7, 7, 6, 6, 6, 5,
  6, 7, 6, 5, 5, 6, 7, 7, 7, 7, 7, 15, 11, 14, 13, 28,
  20, 22, 20, 20, 22, 22, 22, 23, 22, 23, 23, 23, 23, 23, 24, 23,
  24, 24, 22, 23, 24, 23, 23, 23, 23, 21, 22, 23, 22, 23, 23, 24,
  22, 21, 20, 22, 22, 23, 23, 21, 23, 22, 22, 24, 21, 22, 23, 23,
  21, 21, 22, 21, 23, 22, 23, 23, 20, 22, 22, 22, 23, 22, 22, 23,
  26, 26, 20, 19, 22, 23, 22, 25, 26, 26, 26, 27, 27, 26, 24, 25,
  19, 21, 26, 27, 27, 26, 27, 24, 21, 21, 26, 26, 28, 27, 27, 27,
  20, 24, 20, 21, 22, 21, 21, 23, 22, 22, 25, 25, 24, 24, 26, 23,
  26, 27, 26, 26, 27, 27, 27, 27, 27, 28, 27, 27, 27, 27, 27, 26,
  30,
]);

const EOS = 256;

/** Negative results of huffmanDecode (RFC 7541 §5.2: each is a decoding error). */
export const HuffmanFault = {
  EOS_IN_STRING: -1,
  PADDING_TOO_LONG: -2,
  PADDING_NOT_ONES: -3,
} as const;

/** Human-readable text for a HuffmanFault value. */
export function huffmanFaultMessage(fault: number): string {
  switch (fault) {
    case HuffmanFault.EOS_IN_STRING:
      return "Huffman string contains the EOS symbol";
    case HuffmanFault.PADDING_TOO_LONG:
      return "Huffman padding longer than 7 bits";
    default:
      return "Huffman padding is not a prefix of EOS (all ones)";
  }
}

// Transition entry layout: bits 0-7 next state, 8-15 emitted symbol, bit 16 "emitted", bit 17
// "EOS decoded". Faults are OR-ed over the whole string and checked once at the end, which keeps
// the per-nibble loop free of branches other than the emit test.
const EMIT = 1 << 16;
const FAIL = 1 << 17;
const TRANSITIONS = new Uint32Array(256 * 16);
/** Per state: 0 if a string may end there, else the HuffmanFault it ends with. */
const END_STATUS = new Int8Array(256);

(function buildDecoder(): void {
  // Tree: kids[2n + bit] is an internal node id (>= 0) or a leaf as -1 - symbol.
  const UNSET = 0x7fffffff;
  const kids = new Int32Array(512).fill(UNSET);
  let nodes = 1;
  for (let sym = 0; sym <= EOS; sym++) {
    const code = CODES[sym];
    let node = 0;
    for (let i = LENGTHS[sym] - 1; i > 0; i--) {
      const slot = 2 * node + ((code >>> i) & 1);
      if (kids[slot] === UNSET) kids[slot] = nodes++;
      node = kids[slot];
    }
    kids[2 * node + (code & 1)] = -1 - sym;
  }
  if (nodes !== 256) throw new Error(`Huffman table is not a complete code (${nodes} internal nodes)`);

  // Padding (§5.2) is the most significant bits of EOS, i.e. all ones, and shorter than 8 bits:
  // the string may end at the root or at the first seven nodes along the all-ones path.
  END_STATUS.fill(HuffmanFault.PADDING_NOT_ONES);
  let node = 0;
  for (let depth = 0; node >= 0; depth++) {
    END_STATUS[node] = depth <= 7 ? 0 : HuffmanFault.PADDING_TOO_LONG;
    node = kids[2 * node + 1];
  }

  for (let state = 0; state < 256; state++) {
    for (let nibble = 0; nibble < 16; nibble++) {
      let at = state;
      let entry = 0;
      for (let i = 3; i >= 0; i--) {
        const k = kids[2 * at + ((nibble >>> i) & 1)];
        if (k >= 0) {
          at = k;
          continue;
        }
        const sym = -1 - k;
        entry |= sym === EOS ? FAIL : EMIT | (sym << 8);
        at = 0;
      }
      TRANSITIONS[state * 16 + nibble] = entry | at;
    }
  }
})();

/** The most bytes `len` Huffman-coded octets can decode to (5 bits is the shortest code). */
export function huffmanMaxDecodedLength(len: number): number {
  return Math.floor((len * 8) / 5);
}

/**
 * Decodes src[start, end) into dst from index 0; dst must hold huffmanMaxDecodedLength(end - start)
 * bytes. Returns the decoded length, or a negative HuffmanFault.
 */
export function huffmanDecode(src: Uint8Array, start: number, end: number, dst: Uint8Array): number {
  let state = 0;
  let n = 0;
  let flags = 0;
  for (let i = start; i < end; i++) {
    const b = src[i];
    let t = TRANSITIONS[(state << 4) | (b >>> 4)];
    if (t & EMIT) dst[n++] = t >>> 8;
    flags |= t;
    t = TRANSITIONS[((t & 0xff) << 4) | (b & 0xf)];
    if (t & EMIT) dst[n++] = t >>> 8;
    flags |= t;
    state = t & 0xff;
  }
  if (flags & FAIL) return HuffmanFault.EOS_IN_STRING;
  const status = END_STATUS[state];
  return status === 0 ? n : status;
}

/**
 * Octets the Huffman coding of `s` takes. Each char is taken as one byte (latin1); chars above
 * 0xff are the caller's bug and are coded as their low byte.
 */
export function huffmanLength(s: string): number {
  let bits = 0;
  for (let i = 0; i < s.length; i++) bits += LENGTHS[s.charCodeAt(i) & 0xff];
  return (bits + 7) >>> 3;
}

/**
 * Writes the Huffman coding of `s` (latin1, see huffmanLength) into dst at `at`, padded
 * with the top bits of EOS (ones). dst must have huffmanLength(s) bytes free. Returns the
 * index after the last byte written.
 */
export function huffmanEncode(s: string, dst: Uint8Array, at: number): number {
  // acc holds the n (< 8) bits not yet written; adding at most 24 bits keeps it within 31 bits,
  // so the 25..30-bit codes go in as two pieces.
  let acc = 0;
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const sym = s.charCodeAt(i) & 0xff;
    const code = CODES[sym];
    const len = LENGTHS[sym];
    if (len > 24) {
      acc = (acc << (len - 16)) | (code >>> 16);
      n += len - 16;
      while (n >= 8) {
        n -= 8;
        dst[at++] = acc >>> n;
      }
      acc = ((acc & ((1 << n) - 1)) << 16) | (code & 0xffff);
      n += 16;
    } else {
      acc = (acc << len) | code;
      n += len;
    }
    while (n >= 8) {
      n -= 8;
      dst[at++] = acc >>> n;
    }
    acc &= (1 << n) - 1;
  }
  if (n > 0) dst[at++] = (acc << (8 - n)) | (0xff >>> n);
  return at;
}
