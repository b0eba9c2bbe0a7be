/**
 * HPACK cost per header block for a typical 8-field gRPC request head: decode and encode, first
 * (literals that enter the dynamic table) and repeated (indexes). Prints ns per block; no
 * assertions. Short on purpose (the machine is shared): `deno run -A proxy/http/h2/hpack_bench.ts`.
 */
import { HpackDecoder, HpackEncoder } from "./hpack.ts";
import { huffmanEncode, huffmanLength } from "./hpack_huffman.ts";

const HEAD = [
  ":method",
  "POST",
  ":scheme",
  "http",
  ":path",
  "/helloworld.Greeter/SayHello",
  ":authority",
  "greeter.default.svc.cluster.local:50051",
  "content-type",
  "application/grpc",
  "user-agent",
  "grpc-go/1.60.1",
  "te",
  "trailers",
  "grpc-timeout",
  "999847u",
];

let sink = 0;

/** ns per call of fn, after a warm-up, over about `ms` milliseconds. */
function bench(label: string, fn: () => number, ms = 150): void {
  for (let i = 0; i < 20_000; i++) sink += fn();
  let n = 0;
  const t0 = performance.now();
  let t = t0;
  while (t - t0 < ms) {
    for (let i = 0; i < 2000; i++) sink += fn();
    n += 2000;
    t = performance.now();
  }
  console.log(`${label.padEnd(58)} ${((t - t0) * 1e6 / n).toFixed(0).padStart(6)} ns`);
}

// The blocks as weft's encoder writes them (raw literals).
const enc = new HpackEncoder();
const first = enc.encode(HEAD).slice();
const repeated = enc.encode(HEAD).slice();

// The first block as Huffman-coding peers (grpc-go, Rust h2) send it: same representations,
// Huffman literals.
function huffmanFirst(): Uint8Array {
  const out: number[] = [];
  const str = (s: string) => {
    const b = new Uint8Array(huffmanLength(s));
    huffmanEncode(s, b, 0);
    if (b.length >= 127) throw new Error("bench strings are short");
    out.push(0x80 | b.length, ...b);
  };
  out.push(0x83, 0x86, 0x04); // POST, http, :path without indexing
  str(HEAD[5]);
  for (const [idx, v] of [[1, HEAD[7]], [31, HEAD[9]], [58, HEAD[11]]] as const) {
    if (idx < 63) out.push(0x40 | idx);
    str(v);
  }
  out.push(0x40);
  str("te");
  str("trailers");
  out.push(0x00);
  str("grpc-timeout");
  str("999847u");
  return new Uint8Array(out);
}
const firstHuffman = huffmanFirst();

console.log(`gRPC request head, ${HEAD.length / 2} fields:`);
console.log(
  `  first block ${first.length} B raw, ${firstHuffman.length} B Huffman; repeated ${repeated.length} B`,
);

const dec = new HpackDecoder();
dec.decode(first);
// A first block decoded again on the same decoder adds the same entries again (evicting as
// needed), which is exactly the cost of a first block.
bench("decode first block (raw literals, 5 table insertions)", () => dec.decode(first).length);
bench("decode first block (Huffman literals)", () => dec.decode(firstHuffman).length);
bench("decode repeated block (6 indexes + 2 literals)", () => dec.decode(repeated).length);
bench("encode first block (fresh encoder each time)", () => new HpackEncoder().encode(HEAD).length);
bench("encode repeated block", () => enc.encode(HEAD).length);

// What Huffman would cost the encoder: the literal strings of a first block, coded both ways.
const literals = [HEAD[5], HEAD[7], HEAD[9], HEAD[11], "te", HEAD[13], "grpc-timeout", HEAD[15]];
const scratch = new Uint8Array(512);
bench("  raw: write the first block's 8 literal strings", () => {
  let at = 0;
  for (const s of literals) for (let i = 0; i < s.length; i++) scratch[at++] = s.charCodeAt(i);
  return at;
});
bench("  Huffman: length + encode the same 8 strings", () => {
  let at = 0;
  for (const s of literals) {
    huffmanLength(s);
    at = huffmanEncode(s, scratch, at);
  }
  return at;
});
const rawBytes = literals.reduce((n, s) => n + s.length, 0);
const huffBytes = literals.reduce((n, s) => n + huffmanLength(s), 0);
console.log(`  literal bytes: ${rawBytes} raw, ${huffBytes} Huffman`);
if (sink === 0.5) console.log(sink);
