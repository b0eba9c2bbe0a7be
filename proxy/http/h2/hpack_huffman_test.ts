/** The HPACK Huffman code against RFC 7541 Appendix C strings, all byte values, and bad padding. */
import assert from "node:assert/strict";
import {
  huffmanDecode,
  huffmanEncode,
  HuffmanFault,
  huffmanFaultMessage,
  huffmanLength,
  huffmanMaxDecodedLength,
} from "./hpack_huffman.ts";

const hex = (s: string) => new Uint8Array(s.replace(/\s+/g, "").match(/../g)!.map((b) => parseInt(b, 16)));
const toHex = (b: Uint8Array) => Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");

function encode(s: string): Uint8Array {
  const out = new Uint8Array(huffmanLength(s));
  assert.equal(huffmanEncode(s, out, 0), out.length, `encoded length of ${JSON.stringify(s)}`);
  return out;
}

/** Decoded string, or the fault number. */
function decode(b: Uint8Array): string | number {
  const dst = new Uint8Array(huffmanMaxDecodedLength(b.length));
  const n = huffmanDecode(b, 0, b.length, dst);
  return n < 0 ? n : String.fromCharCode(...dst.subarray(0, n));
}

// Huffman-coded literals from RFC 7541 C.4 and C.6.
const RFC_STRINGS: [string, string][] = [
  ["www.example.com", "f1e3c2e5f23a6ba0ab90f4ff"],
  ["no-cache", "a8eb10649cbf"],
  ["custom-key", "25a849e95ba97d7f"],
  ["custom-value", "25a849e95bb8e8b4bf"],
  ["302", "6402"],
  ["307", "640eff"],
  ["private", "aec3771a4b"],
  ["Mon, 21 Oct 2013 20:13:21 GMT", "d07abe941054d444a8200595040b8166e082a62d1bff"],
  ["Mon, 21 Oct 2013 20:13:22 GMT", "d07abe941054d444a8200595040b8166e084a62d1bff"],
  ["https://www.example.com", "9d29ad171863c78f0b97c8e9ae82ae43d3"],
  ["gzip", "9bd9ab"],
  [
    "foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1",
    "94e7821dd7f2e6c7b335dfdfcd5b3960d5af27087f3672c1ab270fb5291f9587316065c003ed4ee5b1063d5007",
  ],
];

Deno.test("Huffman: RFC 7541 Appendix C strings encode and decode exactly", () => {
  for (const [s, h] of RFC_STRINGS) {
    assert.equal(toHex(encode(s)), h, `encode ${s}`);
    assert.equal(decode(hex(h)), s, `decode ${h}`);
  }
});

Deno.test("Huffman: all 256 byte values round-trip, alone, together and in every pair", () => {
  const all = Array.from({ length: 256 }, (_, i) => String.fromCharCode(i)).join("");
  assert.equal(decode(encode(all)), all);
  assert.equal(
    decode(encode(all.split("").reverse().join("").repeat(5))),
    all.split("").reverse().join("").repeat(5),
  );
  assert.equal(decode(encode("")), "");
  for (let a = 0; a < 256; a++) {
    const one = String.fromCharCode(a);
    assert.equal(decode(encode(one)), one, `byte ${a}`);
    for (let b = 0; b < 256; b++) {
      const two = one + String.fromCharCode(b);
      const enc = encode(two);
      const got = decode(enc);
      if (got !== two) assert.fail(`pair ${a},${b}: ${toHex(enc)} decoded to ${got}`);
    }
  }
});

Deno.test("Huffman: random strings round-trip, and encode at an offset", () => {
  let seed = 1;
  const rnd = (n: number) => (seed = (seed * 1103515245 + 12345) & 0x7fffffff) % n;
  for (let i = 0; i < 2000; i++) {
    let s = "";
    const len = rnd(60);
    // Mostly header-ish ASCII, sometimes any byte, so long codes get exercised too.
    for (let j = 0; j < len; j++) s += String.fromCharCode(rnd(4) === 0 ? rnd(256) : 32 + rnd(95));
    const out = new Uint8Array(huffmanLength(s) + 3);
    out[0] = 0xaa;
    const end = huffmanEncode(s, out, 1);
    assert.equal(end, huffmanLength(s) + 1);
    assert.equal(out[0], 0xaa);
    const dst = new Uint8Array(huffmanMaxDecodedLength(end - 1));
    const n = huffmanDecode(out, 1, end, dst);
    assert.equal(String.fromCharCode(...dst.subarray(0, n)), s);
  }
});

Deno.test("Huffman: EOS in a string, long padding and non-ones padding are faults (§5.2)", () => {
  // EOS is 30 ones: 32 ones are EOS plus 2 bits of valid padding.
  assert.equal(decode(hex("ffffffff")), HuffmanFault.EOS_IN_STRING);
  // 'a' (00011) then EOS in the middle of a string, then 'a' again.
  assert.equal(decode(hex("1fffffffff18")), HuffmanFault.EOS_IN_STRING);
  // 'a' followed by 11 ones: padding longer than 7 bits.
  assert.equal(decode(hex("1fff")), HuffmanFault.PADDING_TOO_LONG);
  // A whole octet of ones after a complete string.
  assert.equal(decode(hex("f1e3c2e5f23a6ba0ab90f4ffff")), HuffmanFault.PADDING_TOO_LONG);
  // 'a' then 000: the padding is not a prefix of EOS.
  assert.equal(decode(hex("18")), HuffmanFault.PADDING_NOT_ONES);
  // "0" is 00000: 0x00 is '0' then 000.
  assert.equal(decode(hex("00")), HuffmanFault.PADDING_NOT_ONES);
  // A code cut short: the first 16 bits of a 28-bit code ending in a zero.
  assert.equal(decode(hex("fffe")), HuffmanFault.PADDING_NOT_ONES);
  // Up to 7 bits of ones are fine: "0" + 111 = 0x07.
  assert.equal(decode(hex("07")), "0");

  assert.match(huffmanFaultMessage(HuffmanFault.EOS_IN_STRING), /EOS/);
  assert.match(huffmanFaultMessage(HuffmanFault.PADDING_TOO_LONG), /Huffman padding longer than 7 bits/);
  assert.match(huffmanFaultMessage(HuffmanFault.PADDING_NOT_ONES), /not a prefix of EOS/);
});

Deno.test("Huffman: every truncation of a long code is refused, never misread", () => {
  // A byte whose code is longer than 8 bits, cut at each byte boundary, leaves a partial code that
  // is all ones (then it is longer than 7 bits) or not: either way a fault.
  for (let b = 0; b < 256; b++) {
    const enc = encode(String.fromCharCode(b));
    for (let cut = 1; cut < enc.length; cut++) {
      const r = decode(enc.subarray(0, cut));
      assert.ok(
        typeof r === "number" && r < 0,
        `byte ${b} cut to ${cut} octets decoded to ${JSON.stringify(r)}`,
      );
    }
  }
});
