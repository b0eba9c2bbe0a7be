/** HPACK against the examples of RFC 7541 Appendix C, round trips, and broken blocks. */
import assert from "node:assert/strict";
import { HeaderListTooLarge, HpackDecoder, HpackEncoder, HpackError } from "./hpack.ts";
import { huffmanDecode, huffmanEncode, huffmanLength } from "./hpack_huffman.ts";

const hex = (s: string) => new Uint8Array(s.match(/../g)!.map((b) => parseInt(b, 16)));
const pairs = (raw: string[]) => {
  const out: [string, string][] = [];
  for (let i = 0; i < raw.length; i += 2) out.push([raw[i], raw[i + 1]]);
  return out;
};

const REQUESTS: [string, string][][] = [
  [[":method", "GET"], [":scheme", "http"], [":path", "/"], [":authority", "www.example.com"]],
  [[":method", "GET"], [":scheme", "http"], [":path", "/"], [":authority", "www.example.com"], [
    "cache-control",
    "no-cache",
  ]],
  [[":method", "GET"], [":scheme", "https"], [":path", "/index.html"], [":authority", "www.example.com"], [
    "custom-key",
    "custom-value",
  ]],
];

const DATE1 = "Mon, 21 Oct 2013 20:13:21 GMT";
const DATE2 = "Mon, 21 Oct 2013 20:13:22 GMT";
const COOKIE = "foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1";
const RESPONSES: [string, string][][] = [
  [[":status", "302"], ["cache-control", "private"], ["date", DATE1], [
    "location",
    "https://www.example.com",
  ]],
  [[":status", "307"], ["cache-control", "private"], ["date", DATE1], [
    "location",
    "https://www.example.com",
  ]],
  [
    [":status", "200"],
    ["cache-control", "private"],
    ["date", DATE2],
    ["location", "https://www.example.com"],
    [
      "content-encoding",
      "gzip",
    ],
    ["set-cookie", COOKIE],
  ],
];

function sequence(
  name: string,
  blocks: string[],
  want: [string, string][][],
  tableSize: number,
  sizes: number[],
) {
  Deno.test(`HpackDecoder: RFC 7541 ${name}`, () => {
    const d = new HpackDecoder({ maxTableSize: tableSize });
    for (let i = 0; i < blocks.length; i++) {
      assert.deepEqual(pairs(d.decode(hex(blocks[i]))), want[i], `${name} block ${i + 1}`);
      assert.equal(d.dynamicSize, sizes[i], `${name} table size after block ${i + 1}`);
    }
  });
}

sequence(
  "C.3 requests without Huffman",
  [
    "828684410f7777772e6578616d706c652e636f6d",
    "828684be58086e6f2d6361636865",
    "828785bf400a637573746f6d2d6b65790c637573746f6d2d76616c7565",
  ],
  REQUESTS,
  4096,
  [57, 110, 164],
);

sequence(
  "C.4 requests with Huffman",
  [
    "828684418cf1e3c2e5f23a6ba0ab90f4ff",
    "828684be5886a8eb10649cbf",
    "828785bf408825a849e95ba97d7f8925a849e95bb8e8b4bf",
  ],
  REQUESTS,
  4096,
  [57, 110, 164],
);

sequence(
  "C.5 responses without Huffman, eviction at 256",
  [
    "4803333032580770726976617465611d4d6f6e2c203231204f637420323031332032303a31333a323120474d546e1768747470733a2f2f7777772e6578616d706c652e636f6d",
    "4803333037c1c0bf",
    "88c1611d4d6f6e2c203231204f637420323031332032303a31333a323220474d54c05a04677a69707738666f6f3d4153444a4b48514b425a584f5157454f50495541585157454f49553b206d61782d6167653d333630303b2076657273696f6e3d31",
  ],
  RESPONSES,
  256,
  [222, 222, 215],
);

sequence(
  "C.6 responses with Huffman, eviction at 256",
  [
    "488264025885aec3771a4b6196d07abe941054d444a8200595040b8166e082a62d1bff6e919d29ad171863c78f0b97c8e9ae82ae43d3",
    "4883640effc1c0bf",
    "88c16196d07abe941054d444a8200595040b8166e084a62d1bffc05a839bd9ab77ad94e7821dd7f2e6c7b335dfdfcd5b3960d5af27087f3672c1ab270fb5291f9587316065c003ed4ee5b1063d5007",
  ],
  RESPONSES,
  256,
  [222, 222, 215],
);

Deno.test("HpackDecoder: C.3 dynamic table holds the RFC's entries, newest first", () => {
  const d = new HpackDecoder();
  for (const b of ["828684410f7777772e6578616d706c652e636f6d", "828684be58086e6f2d6361636865"]) {
    d.decode(hex(b));
  }
  d.decode(hex("828785bf400a637573746f6d2d6b65790c637573746f6d2d76616c7565"));
  assert.deepEqual(d.dynamicEntries, [
    ["custom-key", "custom-value"],
    ["cache-control", "no-cache"],
    [":authority", "www.example.com"],
  ]);
});

Deno.test("Huffman: every byte value round-trips; lengths agree", () => {
  const all = Array.from({ length: 256 }, (_, i) => String.fromCharCode(i)).join("");
  for (const s of [all, "", "a", "www.example.com", all.split("").reverse().join("").repeat(3)]) {
    const out = new Uint8Array(huffmanLength(s));
    assert.equal(huffmanEncode(s, out, 0), out.length);
    assert.equal(huffmanDecode(out, 0, out.length), s);
  }
  // The RFC's own example string (C.4.1).
  assert.equal(huffmanDecode(hex("f1e3c2e5f23a6ba0ab90f4ff"), 0, 12), "www.example.com");
});

Deno.test("HpackEncoder → HpackDecoder: random lists over many blocks, with table size changes", () => {
  let seed = 7;
  const rnd = (n: number) => (seed = (seed * 1103515245 + 12345) & 0x7fffffff) % n;
  const names = [
    ":method",
    ":path",
    ":authority",
    "content-type",
    "user-agent",
    "x-a",
    "x-b",
    "cookie",
    "authorization",
    "grpc-timeout",
  ];
  const e = new HpackEncoder();
  const d = new HpackDecoder();
  for (let block = 0; block < 500; block++) {
    if (block % 97 === 50) e.setMaxTableSize([0, 256, 4096, 1024][rnd(4)]);
    const fields: string[] = [];
    const n = 1 + rnd(12);
    for (let i = 0; i < n; i++) {
      const v = rnd(3) === 0 ? "x".repeat(rnd(300)) : `v${rnd(20)}\u00e9\u00ff`;
      fields.push(names[rnd(names.length)], v);
    }
    assert.deepEqual(d.decode(e.encode(fields)), fields, `block ${block}`);
  }
});

Deno.test("HpackEncoder: a repeated head costs a few bytes; credentials are never indexed", () => {
  const e = new HpackEncoder();
  const head = [
    ":method",
    "POST",
    ":scheme",
    "http",
    ":path",
    "/pkg.Svc/Call",
    ":authority",
    "svc.ns.svc.cluster.local:8080",
    "content-type",
    "application/grpc",
    "user-agent",
    "grpc-node-js/1.14",
    "te",
    "trailers",
    "authorization",
    "Bearer abc",
  ];
  const first = e.encode(head).length;
  const second = e.encode(head);
  assert.ok(second.length < first / 2, `second block ${second.length} bytes, first ${first}`);
  assert.ok(second.length <= 40, `second block ${second.length} bytes`);
  // "Bearer abc" appears literally again (never indexed, 0001 prefix before its name index 23).
  const text = new TextDecoder("latin1").decode(second);
  assert.ok(text.includes("Bearer abc"), "the authorization value is sent literally every time");
  const d = new HpackDecoder();
  const e2 = new HpackEncoder();
  for (let i = 0; i < 3; i++) {
    assert.deepEqual(d.decode(e2.encode(head)), head, `block ${i + 1} decodes back`);
  }
});

Deno.test("HpackDecoder: broken blocks are named; the limits refuse but keep the table in sync", () => {
  const bad: [string, RegExp][] = [
    ["ff7f", /index 254 is beyond the tables \(61 static \+ 0 dynamic\)/],
    ["80", /index 0 is not valid/],
    ["3fe21f", /dynamic table size update 4097 exceeds the limit 4096/],
    ["82" + "3f", /size update after a field|truncated integer/],
    ["410f7777", /runs past the end of the block/],
    ["ffffffffffff7f", /integer overflow/],
    ["4185ffffffffff", /EOS|padding/],
    ["418100", /padding is not all ones/],
  ];
  for (const [h, want] of bad) {
    assert.throws(() => new HpackDecoder().decode(hex(h)), (e: unknown) => {
      assert.ok(e instanceof HpackError, `${h}: ${e}`);
      assert.match((e as Error).message, want, h);
      return true;
    });
  }
  const d = new HpackDecoder({ maxListSize: 100, maxFieldCount: 10 });
  const e = new HpackEncoder();
  const big = e.encode([":authority", "a".repeat(80), "x-a", "1"]);
  assert.throws(() => d.decode(big), (err: unknown) => {
    assert.ok(err instanceof HeaderListTooLarge);
    assert.equal(err.count, 2);
    return true;
  });
  // The next block refers to entries the refused block added: still decodes.
  assert.deepEqual(d.decode(e.encode(["x-a", "1"])), ["x-a", "1"]);
});
