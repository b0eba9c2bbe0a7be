/**
 * The HPACK Huffman code (RFC 7541 Appendix B). The code is canonical: codes of each length are
 * consecutive and follow symbol order, so the table is kept as one code length per symbol and
 * the codes are rebuilt at load. Decoding walks the canonical ranges bit by bit, which is plenty
 * for header strings (weft's own encoder sends raw literals; only other clients use Huffman).
 */

/** Code length minus 5 per symbol 0..255, as letters ("A" = 5 bits); EOS (256) is 30 bits of ones. */
const LENGTHS =
  "ISXXXXXXXTZXXZXXXXXXXXZXXXXXXXXXBFFHIBDGFFDGDBBBAAABBBBBBBCDKBHFIBCCCCCCCCCCCCCCCCCCCCCCDCDIOIJBKABABABBBACCBBBABCBAABCCCCCKGJIXPRPPRRRSRSSSSSTSTTRSTSSSSQRSRSSTRQPRRSSQSRRTQRSSQQRQSRSSPRRRSRRSVVPORSRUVVVWWVTUOQVWWVWTQQVVXWWWPTPQRQQSRRUUTTVSVWVVWWWWWXWWWWWV";

const EOS = 256;
/** Bit length of each symbol's code, 0..256. */
export const CODE_LENGTH = new Uint8Array(257);
/** Each symbol's code, right-aligned. */
export const CODE = new Uint32Array(257);

/** Per length L: the first code of that length and where its symbols start in SYMBOLS. */
const FIRST_CODE = new Int32Array(32);
const COUNT = new Int32Array(32);
const OFFSET = new Int32Array(32);
const SYMBOLS = new Uint16Array(257);

{
  for (let s = 0; s < 256; s++) CODE_LENGTH[s] = LENGTHS.charCodeAt(s) - 65 + 5;
  CODE_LENGTH[EOS] = 30;
  const order = Array.from({ length: 257 }, (_, s) => s).sort((a, b) =>
    CODE_LENGTH[a] - CODE_LENGTH[b] || a - b
  );
  let code = 0;
  let len = CODE_LENGTH[order[0]];
  for (let n = 0; n < order.length; n++) {
    const s = order[n];
    if (n > 0) code = (code + 1) << (CODE_LENGTH[s] - len);
    len = CODE_LENGTH[s];
    CODE[s] = code >>> 0;
    SYMBOLS[n] = s;
    if (COUNT[len]++ === 0) {
      FIRST_CODE[len] = code;
      OFFSET[len] = n;
    }
  }
}

/** Why a Huffman string could not be decoded. */
export class HuffmanError extends Error {}

/** Decodes `b[start, end)` into a latin1 string. */
export function huffmanDecode(b: Uint8Array, start: number, end: number): string {
  let out = "";
  let code = 0;
  let len = 0;
  for (let i = start; i < end; i++) {
    const byte = b[i];
    for (let bit = 7; bit >= 0; bit--) {
      code = (code << 1) | ((byte >> bit) & 1);
      len++;
      const k = code - FIRST_CODE[len];
      if (COUNT[len] !== 0 && k >= 0 && k < COUNT[len]) {
        const sym = SYMBOLS[OFFSET[len] + k];
        if (sym === EOS) throw new HuffmanError("Huffman string contains EOS");
        out += String.fromCharCode(sym);
        code = 0;
        len = 0;
      } else if (len >= 30) {
        throw new HuffmanError("invalid Huffman code");
      }
    }
  }
  // What is left must be a prefix of EOS (all ones), shorter than a byte (§5.2).
  if (len > 7) throw new HuffmanError("Huffman padding longer than 7 bits");
  if (code !== (1 << len) - 1) throw new HuffmanError("Huffman padding is not all ones");
  return out;
}

/** Bytes `s` takes Huffman-encoded. */
export function huffmanLength(s: string): number {
  let bits = 0;
  for (let i = 0; i < s.length; i++) bits += CODE_LENGTH[s.charCodeAt(i) & 0xff];
  return (bits + 7) >> 3;
}

/** Writes `s` Huffman-encoded into `out` at `at` (room for huffmanLength(s) bytes); returns the end. */
export function huffmanEncode(s: string, out: Uint8Array, at: number): number {
  let acc = 0;
  let bits = 0;
  for (let i = 0; i < s.length; i++) {
    const sym = s.charCodeAt(i) & 0xff;
    const len = CODE_LENGTH[sym];
    let code = CODE[sym];
    let left = len;
    // Feed the code in pieces small enough for 32-bit arithmetic.
    while (left > 0) {
      const take = Math.min(left, 24 - bits > 0 ? 24 - bits : 8);
      const piece = (code >>> (left - take)) & ((1 << take) - 1);
      acc = (acc << take) | piece;
      bits += take;
      left -= take;
      code &= (1 << left) - 1;
      while (bits >= 8) {
        bits -= 8;
        out[at++] = (acc >>> bits) & 0xff;
      }
      acc &= (1 << bits) - 1;
    }
  }
  if (bits > 0) out[at++] = ((acc << (8 - bits)) | ((1 << (8 - bits)) - 1)) & 0xff;
  return at;
}
