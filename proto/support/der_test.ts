import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { execFileSync } from "node:child_process";
import {
  decodeDer,
  decodeOid,
  DerError,
  type DerNode,
  MAX_DER_DEPTH,
  oid,
  readTlv,
  Tag,
  tlv,
} from "./der.ts";

const bytes = (...b: number[]) => new Uint8Array(b);

/** `depth` SEQUENCEs, each holding the next, around an empty one. */
function nested(depth: number): Uint8Array {
  let inner = tlv(Tag.sequence);
  for (let i = 0; i < depth; i++) inner = tlv(Tag.sequence, inner);
  return inner;
}

Deno.test("the DER reader rejects hostile lengths and shapes with a DerError naming the problem", () => {
  const cases: [string, Uint8Array, RegExp][] = [
    ["no bytes", bytes(), /no data/],
    ["a tag without a length", bytes(0x30), /truncated element at offset 0/],
    ["a long length cut short", bytes(0x04, 0x82, 0x01), /truncated length at offset 0/],
    ["a length past the end", bytes(0x04, 0x05, 1, 2), /runs past its container/],
    ["a long-form length past the end", bytes(0x04, 0x81, 0x90, 1, 2, 3), /runs past its container/],
    ["a child past its parent", bytes(0x30, 0x03, 0x04, 0x05, 0x00, 0, 0, 0, 0), /runs past its container/],
    ["an indefinite length", bytes(0x30, 0x80, 0x05, 0x00, 0x00, 0x00), /indefinite length at offset 0/],
    ["a 4 GiB length", bytes(0x04, 0x84, 0xff, 0xff, 0xff, 0xff), /length of 4 bytes.*not supported/],
    ["a non-minimal length", bytes(0x04, 0x81, 0x01, 0x00), /non-minimal length/],
    ["a multi-byte tag", bytes(0x1f, 0x81, 0x01, 0x00), /multi-byte tag/],
    ["trailing bytes", bytes(0x05, 0x00, 0x00), /1 trailing bytes after the element/],
    ["nesting past the bound", nested(MAX_DER_DEPTH + 1), /nesting deeper than 8 levels/],
  ];
  for (const [name, input, re] of cases) {
    assert.throws(() => decodeDer(input), (e: unknown) => e instanceof DerError && re.test(e.message), name);
  }
  // The bound itself is allowed: the root plus MAX_DER_DEPTH levels.
  let n: DerNode = decodeDer(nested(MAX_DER_DEPTH));
  for (let i = 0; i < MAX_DER_DEPTH; i++) n = n.children![0];
  assert.deepEqual(n.children, []);
  assert.throws(() => decodeDer(nested(3), 2), /nesting deeper than 2 levels/);
});

Deno.test("nesting far past the bound fails cleanly instead of exhausting the stack", () => {
  // 100k SEQUENCEs, each with a 3-byte length covering the rest, around an empty one.
  const depth = 100_000;
  const buf = new Uint8Array(depth * 5 + 2);
  buf.set([0x30, 0x00], depth * 5);
  for (let i = 0; i < depth; i++) {
    const len = buf.length - (i + 1) * 5;
    buf.set([0x30, 0x83, len >> 16, (len >> 8) & 0xff, len & 0xff], i * 5);
  }
  assert.throws(
    () => decodeDer(buf),
    (e: unknown) => e instanceof DerError && /nesting deeper/.test(e.message),
  );
});

Deno.test("random and mutated input only ever fails with DerError", () => {
  const good = tlv(
    Tag.sequence,
    tlv(Tag.sequence, oid("1.2.840.10045.4.3.2")),
    tlv(0xa3, tlv(Tag.sequence, tlv(Tag.octetString, bytes(1, 2, 3)))),
    tlv(Tag.bitString, bytes(0, 0xff)),
  );
  decodeDer(good);
  let rejected = 0;
  for (let i = 0; i < 20_000; i++) {
    const input = i % 2 === 0 ? crypto.getRandomValues(new Uint8Array(1 + (i % 40))) : good.slice();
    if (i % 2 === 1) {
      for (let k = 0; k < 1 + (i % 3); k++) input[(i * 7 + k * 13) % input.length] ^= 1 << (i % 8);
    }
    try {
      decodeDer(input);
    } catch (e) {
      assert.ok(e instanceof DerError, `input ${[...input]} threw ${e}`);
      rejected++;
    }
  }
  assert.ok(rejected > 10_000, `${rejected} of 20000 rejected`);
});

Deno.test("OIDs round-trip through the writer and reader and bad encodings are refused", () => {
  for (
    const o of [
      "1.2.840.10045.4.3.2",
      "2.5.29.17",
      "0.9.2342.19200300.100.1.25",
      "2.999.3",
      "1.3.6.1.4.1.311",
    ]
  ) {
    assert.equal(decodeOid(decodeDer(oid(o)).value), o);
  }
  assert.throws(() => decodeOid(bytes()), /empty OBJECT IDENTIFIER/);
  assert.throws(() => decodeOid(bytes(0x2a, 0x86)), /ends inside an arc/);
  assert.throws(() => decodeOid(bytes(0x2a, 0x80, 0x01)), /leading zero byte/);
  assert.throws(() => decodeOid(new Uint8Array(12).fill(0xff)), /arc too large/);
});

Deno.test("the writer's output reads back as openssl reads it", () => {
  const big = new Uint8Array(70_000).fill(7);
  const der = tlv(Tag.sequence, tlv(Tag.integer, bytes(5)), tlv(Tag.octetString, big), oid("2.5.29.17"));
  const top = decodeDer(der);
  assert.deepEqual(top.children!.map((c) => [c.tag, c.value.length]), [[0x02, 1], [0x04, 70_000], [0x06, 3]]);
  assert.equal(readTlv(der, 0).end, der.length);
  const text = execFileSync("openssl", ["asn1parse", "-inform", "DER"], { input: Buffer.from(der) })
    .toString();
  assert.match(text, /INTEGER\s+:05/);
  assert.match(text, /OCTET STRING/);
  assert.match(text, /X509v3 Subject Alternative Name/);
});
