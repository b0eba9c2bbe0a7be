/** HPACK against RFC 7541 Appendix C, encoder → decoder round trips, and broken blocks. */
import assert from "node:assert/strict";
import { HeaderListTooLarge, HpackDecoder, HpackEncoder, HpackError } from "./hpack.ts";
import { huffmanEncode, huffmanLength } from "./hpack_huffman.ts";

const hex = (s: string) =>
  new Uint8Array(s.replace(/\s+/g, "").match(/../g)?.map((b) => parseInt(b, 16)) ?? []);
const toHex = (b: Uint8Array) => Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
const flat = (pairs: [string, string][]) => pairs.flat();

/** One Appendix C step: the block, the list it decodes to, and the dynamic table after it. */
interface Step {
  block: string;
  fields: [string, string][];
  table: [string, string][];
  size: number;
}

function sequence(title: string, tableSize: number, steps: Step[]): void {
  Deno.test(`HpackDecoder: RFC 7541 ${title}`, () => {
    const d = new HpackDecoder({ maxTableSize: tableSize });
    for (const [i, s] of steps.entries()) {
      assert.deepEqual(d.decode(hex(s.block)), flat(s.fields), `${title} block ${i + 1} fields`);
      assert.deepEqual(d.dynamicEntries, s.table, `${title} table after block ${i + 1}`);
      assert.equal(d.dynamicSize, s.size, `${title} table size after block ${i + 1}`);
      const listSize = s.fields.reduce((n, [k, v]) => n + k.length + v.length + 32, 0);
      assert.equal(d.lastListSize, listSize);
    }
  });
}

// C.2: each representation on its own, with a fresh decoder.
sequence("C.2.1 literal with indexing", 4096, [{
  block: "400a 6375 7374 6f6d 2d6b 6579 0d63 7573 746f 6d2d 6865 6164 6572",
  fields: [["custom-key", "custom-header"]],
  table: [["custom-key", "custom-header"]],
  size: 55,
}]);
sequence("C.2.2 literal without indexing", 4096, [{
  block: "040c 2f73 616d 706c 652f 7061 7468",
  fields: [[":path", "/sample/path"]],
  table: [],
  size: 0,
}]);
sequence("C.2.3 literal never indexed", 4096, [{
  block: "1008 7061 7373 776f 7264 0673 6563 7265 74",
  fields: [["password", "secret"]],
  table: [],
  size: 0,
}]);
sequence("C.2.4 indexed field", 4096, [{ block: "82", fields: [[":method", "GET"]], table: [], size: 0 }]);

const REQ1: [string, string][] = [[":method", "GET"], [":scheme", "http"], [":path", "/"], [
  ":authority",
  "www.example.com",
]];
const REQ2: [string, string][] = [...REQ1, ["cache-control", "no-cache"]];
const REQ3: [string, string][] = [[":method", "GET"], [":scheme", "https"], [":path", "/index.html"], [
  ":authority",
  "www.example.com",
], ["custom-key", "custom-value"]];
const REQ_TABLES: [string, string][][] = [
  [[":authority", "www.example.com"]],
  [["cache-control", "no-cache"], [":authority", "www.example.com"]],
  [["custom-key", "custom-value"], ["cache-control", "no-cache"], [":authority", "www.example.com"]],
];
const C3 = [
  "8286 8441 0f77 7777 2e65 7861 6d70 6c65 2e63 6f6d",
  "8286 84be 5808 6e6f 2d63 6163 6865",
  "8287 85bf 400a 6375 7374 6f6d 2d6b 6579 0c63 7573 746f 6d2d 7661 6c75 65",
];
const C4 = [
  "8286 8441 8cf1 e3c2 e5f2 3a6b a0ab 90f4 ff",
  "8286 84be 5886 a8eb 1064 9cbf",
  "8287 85bf 4088 25a8 49e9 5ba9 7d7f 8925 a849 e95b b8e8 b4bf",
];
const requests = (blocks: string[]): Step[] =>
  blocks.map((block, i) => ({
    block,
    fields: [REQ1, REQ2, REQ3][i],
    table: REQ_TABLES[i],
    size: [57, 110, 164][i],
  }));
sequence("C.3 requests without Huffman", 4096, requests(C3));
sequence("C.4 requests with Huffman", 4096, requests(C4));

const DATE1 = "Mon, 21 Oct 2013 20:13:21 GMT";
const DATE2 = "Mon, 21 Oct 2013 20:13:22 GMT";
const LOC = "https://www.example.com";
const COOKIE = "foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1";
const RSP: [string, string][][] = [
  [[":status", "302"], ["cache-control", "private"], ["date", DATE1], ["location", LOC]],
  [[":status", "307"], ["cache-control", "private"], ["date", DATE1], ["location", LOC]],
  [[":status", "200"], ["cache-control", "private"], ["date", DATE2], ["location", LOC], [
    "content-encoding",
    "gzip",
  ], ["set-cookie", COOKIE]],
];
const RSP_TABLES: [string, string][][] = [
  [["location", LOC], ["date", DATE1], ["cache-control", "private"], [":status", "302"]],
  [[":status", "307"], ["location", LOC], ["date", DATE1], ["cache-control", "private"]],
  [["set-cookie", COOKIE], ["content-encoding", "gzip"], ["date", DATE2]],
];
const C5 = [
  `4803 3330 3258 0770 7269 7661 7465 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133
   2032 303a 3133 3a32 3120 474d 546e 1768 7474 7073 3a2f 2f77 7777 2e65 7861 6d70 6c65 2e63 6f6d`,
  "4803 3330 37c1 c0bf",
  `88c1 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133 2032 303a 3133 3a32 3220 474d
   54c0 5a04 677a 6970 7738 666f 6f3d 4153 444a 4b48 514b 425a 584f 5157 454f 5049
   5541 5851 5745 4f49 553b 206d 6178 2d61 6765 3d33 3630 303b 2076 6572 7369 6f6e 3d31`,
];
const C6 = [
  `4882 6402 5885 aec3 771a 4b61 96d0 7abe 9410 54d4 44a8 2005 9504 0b81 66e0 82a6
   2d1b ff6e 919d 29ad 1718 63c7 8f0b 97c8 e9ae 82ae 43d3`,
  "4883 640e ffc1 c0bf",
  `88c1 6196 d07a be94 1054 d444 a820 0595 040b 8166 e084 a62d 1bff c05a 839b d9ab
   77ad 94e7 821d d7f2 e6c7 b335 dfdf cd5b 3960 d5af 2708 7f36 72c1 ab27 0fb5 291f
   9587 3160 65c0 03ed 4ee5 b106 3d50 07`,
];
const responses = (blocks: string[]): Step[] =>
  blocks.map((block, i) => ({ block, fields: RSP[i], table: RSP_TABLES[i], size: [222, 222, 215][i] }));
sequence("C.5 responses without Huffman, evicting at 256", 256, responses(C5));
sequence("C.6 responses with Huffman, evicting at 256", 256, responses(C6));

Deno.test("HpackDecoder: C.1 integers (10 and 1337 on a 5-bit prefix) via size updates", () => {
  const d = new HpackDecoder();
  assert.deepEqual(d.decode(hex("2a")), []);
  assert.equal(d.dynamicMaxSize, 10);
  assert.deepEqual(d.decode(hex("3f9a0a")), []);
  assert.equal(d.dynamicMaxSize, 1337);
  // Two updates in a row at the start of a block are allowed (§4.2), then a field.
  assert.deepEqual(d.decode(hex("20 3fe11f 82")), [":method", "GET"]);
  assert.equal(d.dynamicMaxSize, 4096);
});

Deno.test("HpackEncoder: C.3 requests encode to the RFC's exact bytes", () => {
  const e = new HpackEncoder();
  for (const [i, req] of [REQ1, REQ2, REQ3].entries()) {
    assert.equal(toHex(e.encode(flat(req))), C3[i].replace(/\s+/g, ""), `request ${i + 1}`);
  }
  assert.equal(e.dynamicSize, 164);
});

Deno.test("HpackDecoder: latin1 octets map to chars one to one (0x80-0xff included)", () => {
  const value = Array.from({ length: 256 }, (_, i) => String.fromCharCode(i)).join("");
  // Literal without indexing, literal name "x", the 256 octets raw then Huffman-coded.
  assert.deepEqual(new HpackDecoder().decode(new Uint8Array(literal("x", value, false))), ["x", value]);
  assert.deepEqual(new HpackDecoder().decode(new Uint8Array(literal("x", value, true))), ["x", value]);
  assert.equal(value.charCodeAt(0x85), 0x85, "not windows-1252 (where 0x85 is U+2026)");
});

/** A test-side encoder of one literal field (never indexing unless told), raw or Huffman. */
function literal(name: string, value: string, huffman: boolean, first = 0x00): number[] {
  const str = (s: string): number[] => {
    if (!huffman) return [...int(s.length, 7, 0), ...Array.from(s, (c) => c.charCodeAt(0))];
    const b = new Uint8Array(huffmanLength(s));
    huffmanEncode(s, b, 0);
    return [...int(b.length, 7, 0x80), ...b];
  };
  return [first, ...str(name), ...str(value)];
}
function int(v: number, prefix: number, flags: number): number[] {
  const max = (1 << prefix) - 1;
  if (v < max) return [flags | v];
  const out = [flags | max];
  for (v -= max; v >= 128; v = Math.floor(v / 128)) out.push((v % 128) | 0x80);
  out.push(v);
  return out;
}

Deno.test("HpackDecoder: Huffman and raw literals of random strings decode alike", () => {
  let seed = 3;
  const rnd = (n: number) => (seed = (seed * 1103515245 + 12345) & 0x7fffffff) % n;
  const d = new HpackDecoder();
  for (let i = 0; i < 300; i++) {
    const fields: string[] = [];
    const bytes: number[] = [];
    for (let f = 0; f < 1 + rnd(6); f++) {
      let v = "";
      for (let j = rnd(200); j > 0; j--) v += String.fromCharCode(rnd(3) === 0 ? rnd(256) : 32 + rnd(95));
      const name = `x-${rnd(50)}`;
      fields.push(name, v);
      bytes.push(...literal(name, v, rnd(2) === 0, rnd(2) === 0 ? 0x40 : rnd(2) === 0 ? 0x10 : 0x00));
    }
    assert.deepEqual(d.decode(new Uint8Array(bytes)), fields, `block ${i}`);
  }
});

/** Random header lists: repeated names/values, per-request values, credentials, latin1, empties. */
function randomLists(
  seed: number,
  blocks: number,
  each: (fields: string[], i: number, rnd: (n: number) => number) => void,
) {
  const rnd = (n: number) => (seed = (seed * 1103515245 + 12345) & 0x7fffffff) % n;
  const names = [
    ":method",
    ":path",
    ":authority",
    ":status",
    "content-type",
    "user-agent",
    "x-a",
    "x-b",
    "x-custom-long-name",
    "cookie",
    "set-cookie",
    "authorization",
    "grpc-timeout",
    "te",
    "accept-encoding",
    "content-length",
  ];
  for (let i = 0; i < blocks; i++) {
    const fields: string[] = [];
    for (let n = rnd(14); n >= 0; n--) {
      const r = rnd(10);
      const v = r === 0
        ? "x".repeat(rnd(1500)) // sometimes over a quarter of the table
        : r === 1
        ? ""
        : r === 2
        ? `v${rnd(100000)}\u00e9\u00ff\u0080`
        : r === 3
        ? "gzip, deflate"
        : `v${rnd(8)}`;
      fields.push(names[rnd(names.length)], v);
    }
    each(fields, i, rnd);
  }
}

Deno.test("HpackEncoder → HpackDecoder: random lists over many blocks with table size changes", () => {
  const e = new HpackEncoder();
  const d = new HpackDecoder();
  randomLists(7, 3000, (fields, i, rnd) => {
    if (rnd(40) === 0) {
      // Sometimes two settings between blocks: the smallest, then the last, must be signalled.
      e.setMaxTableSize([0, 64, 256, 1024, 4096, 65536][rnd(6)]);
      if (rnd(2) === 0) e.setMaxTableSize([0, 100, 4096][rnd(3)]);
    }
    const block = e.encode(fields);
    assert.deepEqual(d.decode(block), fields, `block ${i}`);
    assert.equal(d.dynamicSize, e.dynamicSize, `tables in sync after block ${i}`);
    assert.ok(d.dynamicSize <= d.dynamicMaxSize);
  });
});

Deno.test("HpackEncoder: a cap below 4096 is signalled in the first block and respected", () => {
  const e = new HpackEncoder({ maxTableSize: 200 });
  const d = new HpackDecoder();
  const first = e.encode(["x-a", "1"]);
  assert.equal(toHex(first.subarray(0, 3)), "3fa901"); // size update 200 = 31 + 169
  assert.deepEqual(d.decode(first), ["x-a", "1"]);
  assert.equal(d.dynamicMaxSize, 200);
  randomLists(11, 300, (fields, i) => {
    assert.deepEqual(d.decode(e.encode(fields)), fields, `block ${i}`);
    assert.ok(e.dynamicSize <= 200);
    assert.equal(d.dynamicSize, e.dynamicSize);
  });
  // A peer allowing more does not lift the cap; allowing less lowers it.
  e.setMaxTableSize(65536);
  assert.equal(e.encode([":method", "GET"]).length, 1);
  e.setMaxTableSize(50);
  const b = e.encode([":method", "GET"]);
  assert.equal(toHex(b), "3f1382");
  d.decode(b);
  assert.equal(d.dynamicMaxSize, 50);
});

Deno.test("HpackEncoder: size updates — none when unchanged, smallest then final when it changed twice", () => {
  const e = new HpackEncoder();
  e.setMaxTableSize(4096);
  assert.equal(toHex(e.encode([":method", "GET"])), "82");
  e.setMaxTableSize(0);
  e.setMaxTableSize(4096);
  assert.equal(toHex(e.encode([":method", "GET"])), "20" + "3fe11f" + "82");
  e.setMaxTableSize(1000);
  e.setMaxTableSize(100);
  e.setMaxTableSize(2000);
  assert.equal(toHex(e.encode([])), "3f45" + "3fb10f");
  e.setMaxTableSize(0);
  const d = new HpackDecoder();
  assert.deepEqual(d.decode(e.encode(["x-a", "1"])), ["x-a", "1"]);
  assert.equal(e.dynamicSize, 0, "a zero-size table holds nothing");
  assert.equal(d.dynamicSize, 0);
});

const GRPC_HEAD = [
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

Deno.test("HpackEncoder: a repeated gRPC head is indexes plus :path and grpc-timeout literals", () => {
  const e = new HpackEncoder();
  const d = new HpackDecoder();
  const first = e.encode(GRPC_HEAD).slice();
  const second = e.encode(GRPC_HEAD).slice();
  assert.deepEqual(d.decode(first), GRPC_HEAD);
  assert.deepEqual(d.decode(second), GRPC_HEAD);
  // :method POST (83), :scheme http (86), :path without indexing by static name (04 ...),
  // then :authority, content-type, user-agent, te from the dynamic table (newest first: te = 62),
  // grpc-timeout without indexing with a literal name.
  const path = "/helloworld.Greeter/SayHello";
  const want = "8386" + "04" +
    toHex(new Uint8Array([path.length, ...Array.from(path, (c) => c.charCodeAt(0))])) +
    "c1c0bfbe" + "00";
  assert.ok(toHex(second).startsWith(want), toHex(second));
  assert.equal(second.length, 2 + 2 + path.length + 4 + 1 + 13 + 8);
  assert.ok(first.length > 130);
});

Deno.test("HpackEncoder: credentials and short cookies are never indexed; long cookies are", () => {
  const e = new HpackEncoder();
  const d = new HpackDecoder();
  const head = ["authorization", "Bearer abc", "cookie", "a=1", "proxy-authorization", "Basic Zm9v"];
  for (let i = 0; i < 3; i++) {
    const b = e.encode(head);
    // 0001 prefix + static name index (23, 32, 49 need the 4-bit prefix's continuation octet).
    assert.equal(toHex(b.subarray(0, 2)), "1f08", `authorization never indexed, block ${i}`);
    assert.deepEqual(d.decode(b), head);
  }
  assert.equal(e.dynamicLength, 0);
  const longCookie = ["cookie", "session=0123456789abcdef0123"];
  const b1 = e.encode(longCookie).slice();
  assert.equal(b1[0], 0x60, "literal with indexing, static name 32");
  assert.equal(toHex(e.encode(longCookie)), "be");
  d.decode(b1);
});

Deno.test("HpackEncoder: :path, content-length and values over a quarter of the table are not indexed", () => {
  const e = new HpackEncoder();
  e.encode([":path", "/a", "content-length", "12", "x-big", "y".repeat(1000), "x-ok", "y".repeat(900)]);
  assert.equal(e.dynamicLength, 1, "only x-ok went into the table");
  const e2 = new HpackEncoder({ maxTableSize: 256 });
  e2.encode(["x-a", "y".repeat(40)]); // 3 + 40 + 32 = 75 > 64
  assert.equal(e2.dynamicLength, 0);
});

Deno.test("HpackEncoder: returns a view reused by the next encode(), grown for large lists", () => {
  const e = new HpackEncoder();
  const big = ["x-big", "z".repeat(100_000), "x-a", "1"];
  const b = e.encode(big);
  assert.deepEqual(new HpackDecoder().decode(b), big);
  const a = e.encode([":method", "GET"]);
  assert.equal(a.buffer, e.encode([":method", "POST"]).buffer, "same backing buffer");
});

function assertHpackError(block: string, message: RegExp, d = new HpackDecoder()): void {
  assert.throws(() => d.decode(hex(block)), (e: unknown) => {
    assert.ok(e instanceof HpackError, `${block}: ${e}`);
    assert.match(e.message, message, block);
    return true;
  });
}

Deno.test("HpackDecoder: each malformed block is an HpackError naming the problem", () => {
  const three = () => {
    const d = new HpackDecoder();
    d.decode(hex("4001 61 0131 4001 62 0132 4001 63 0133"));
    return d;
  };
  assertHpackError("c6", /^index 70 is beyond the tables \(61 static \+ 3 dynamic\)$/, three());
  assertHpackError("c1", /^index 65 is beyond the tables \(61 static \+ 3 dynamic\)$/, three());
  assert.deepEqual(three().decode(hex("c0")), ["a", "1"], "index 64 is the oldest of three");
  assertHpackError("ff7f", /index 254 is beyond the tables \(61 static \+ 0 dynamic\)/);
  assertHpackError("7f00 0161", /index 63 is beyond the tables/); // literal with an indexed name
  assertHpackError("0f2f 0161", /index 62 is beyond the tables/); // without indexing, 4-bit prefix
  assertHpackError("80", /index 0 is not valid/);
  assertHpackError("3fe13f", /^dynamic table size update 8192 exceeds the limit 4096$/);
  assertHpackError("3fe21f", /dynamic table size update 4097 exceeds the limit 4096/);
  assertHpackError("3fe11f", /exceeds the limit 1024/, new HpackDecoder({ maxTableSize: 1024 }));
  assertHpackError("82 20", /dynamic table size update after a field/);
  assertHpackError("ffffffffff0f", /^integer overflow$/); // 2^31 and more
  assertHpackError("ff8080808080 00", /^integer overflow$/); // more than five continuation octets
  assertHpackError("41 7f ffffffff07", /integer overflow/); // a string length too
  assertHpackError("ff", /truncated block/);
  assertHpackError("ff80", /truncated block/);
  assertHpackError("41", /truncated block/);
  assertHpackError("40", /truncated block/);
  assertHpackError("4001", /truncated block/);
  assertHpackError("400161", /truncated block/);
  assertHpackError("410f7777", /truncated block: string of 15 bytes, 2 left/);
  assertHpackError("41 84 ffffffff", /EOS/);
  assertHpackError("41 82 1fff", /^Huffman padding longer than 7 bits$/);
  assertHpackError("41 81 18", /padding is not a prefix of EOS/);
  // 2^31 - 1 itself is a valid integer (here a size update beyond any limit).
  assertHpackError("3fe0ffffff07", /dynamic table size update 2147483647 exceeds/);
});

Deno.test("HpackDecoder: an over-limit list is HeaderListTooLarge, and the table stays in sync", () => {
  const e = new HpackEncoder();
  const d = new HpackDecoder({ maxListSize: 250, maxFieldCount: 5 });
  const big = [":authority", "a".repeat(150), "x-a", "1", "x-b", "2"];
  assert.throws(() => d.decode(e.encode(big)), (err: unknown) => {
    assert.ok(err instanceof HeaderListTooLarge);
    assert.equal(err.count, 3);
    assert.equal(err.size, 10 + 150 + 32 + 3 + 1 + 32 + 3 + 1 + 32);
    assert.match(err.message, /3 fields, 264 bytes exceeds the limit \(5 fields, 250 bytes\)/);
    return true;
  });
  assert.equal(d.lastListSize, 264);
  // The next block refers to all three entries the refused block added.
  assert.deepEqual(d.decode(e.encode(["x-b", "2", "x-a", "1"])), ["x-b", "2", "x-a", "1"]);
  assert.equal(d.dynamicSize, e.dynamicSize);
  // The count limit alone.
  const many: string[] = [];
  for (let i = 0; i < 6; i++) many.push("x-a", "1");
  assert.throws(
    () => d.decode(e.encode(many)),
    (err: unknown) => err instanceof HeaderListTooLarge && err.count === 6,
  );
  assert.deepEqual(d.decode(e.encode(["x-c", "3", ":authority", "a".repeat(150)])), [
    "x-c",
    "3",
    ":authority",
    "a".repeat(150),
  ]);
  // Exactly at the limits is fine.
  const d2 = new HpackDecoder({ maxListSize: 3 + 1 + 32, maxFieldCount: 1 });
  assert.deepEqual(d2.decode(new HpackEncoder().encode(["x-a", "1"])), ["x-a", "1"]);
});
