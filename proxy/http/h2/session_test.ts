/**
 * weft's HTTP/2 framing against hostile and broken peers, with raw frames on real loopback
 * sockets: each violation gets the error RFC 9113 names (a connection error as GOAWAY, a stream
 * error as RST_STREAM), and a well-behaved client on another connection keeps being served.
 */
import assert from "node:assert/strict";
import { type Body, HeaderList, textResponse } from "../message.ts";
import {
  call,
  closeSession,
  concat,
  connectClient,
  errorCode,
  FLAG,
  FRAME,
  frame,
  hpackLiteral,
  PREFACE,
  type RawFrame,
  RawH2Client,
  startH2Proxy,
} from "./testing.ts";
import * as net from "node:net";

const GOOD: [string, string][] = [[":method", "POST"], [":scheme", "http"], [":path", "/"], [
  ":authority",
  "x",
]];
/** A request the service never answers (it does not read the body either), so its stream stays open. */
const HOLD: [string, string][] = [[":method", "POST"], [":scheme", "http"], [":path", "/hold"], [
  ":authority",
  "x",
]];
const CONTINUATION = 9;
const PUSH_PROMISE = 5;
const PRIORITY = 2;

const u32 = (v: number) => {
  const b = new Uint8Array(4);
  new DataView(b.buffer).setUint32(0, v);
  return b;
};
const setting = (id: number, v: number) => {
  const b = new Uint8Array(6);
  const d = new DataView(b.buffer);
  d.setUint16(0, id);
  d.setUint32(2, v);
  return b;
};

interface Case {
  name: string;
  frames: () => Uint8Array[];
  /** "goaway" (connection error) or "rst" (stream error) with this code. */
  expect: "goaway" | "rst";
  code: number;
}

const headers = (id: number, fields = GOOD, end = false) =>
  frame(FRAME.HEADERS, FLAG.END_HEADERS | (end ? FLAG.END_STREAM : 0), id, hpackLiteral(fields));

const CASES: Case[] = [
  {
    name: "DATA on stream 0",
    frames: () => [frame(FRAME.DATA, 0, 0, new Uint8Array(3))],
    expect: "goaway",
    code: 1,
  },
  {
    name: "frame larger than SETTINGS_MAX_FRAME_SIZE",
    frames: () => [frame(FRAME.DATA, 0, 1, new Uint8Array(16_385))],
    expect: "goaway",
    code: 6,
  },
  {
    name: "DATA on an idle stream",
    frames: () => [frame(FRAME.DATA, 0, 9, new Uint8Array(1))],
    expect: "goaway",
    code: 1,
  },
  {
    name: "DATA beyond the stream window",
    frames: () => [
      headers(1, HOLD),
      ...Array.from({ length: 5 }, () => frame(FRAME.DATA, 0, 1, new Uint8Array(16_000))),
    ],
    expect: "rst",
    code: 3,
  },
  {
    name: "connection WINDOW_UPDATE past 2^31-1",
    frames: () => [frame(FRAME.WINDOW_UPDATE, 0, 0, u32(0x7fffffff))],
    expect: "goaway",
    code: 3,
  },
  {
    name: "WINDOW_UPDATE of 0 on the connection",
    frames: () => [frame(FRAME.WINDOW_UPDATE, 0, 0, u32(0))],
    expect: "goaway",
    code: 1,
  },
  {
    name: "CONTINUATION without a field block",
    frames: () => [frame(CONTINUATION, FLAG.END_HEADERS, 1, new Uint8Array(0))],
    expect: "goaway",
    code: 1,
  },
  {
    name: "another frame inside a field block",
    frames: () => [
      frame(FRAME.HEADERS, 0, 1, hpackLiteral(GOOD)),
      frame(FRAME.PING, 0, 0, new Uint8Array(8)),
    ],
    expect: "goaway",
    code: 1,
  },
  {
    name: "CONTINUATION flood",
    frames: () => [
      frame(FRAME.HEADERS, 0, 1, hpackLiteral(GOOD)),
      ...Array.from({ length: 10 }, () => frame(CONTINUATION, 0, 1, new Uint8Array(16_000))),
    ],
    expect: "goaway",
    code: 11,
  },
  {
    name: "HPACK index beyond the tables",
    frames: () => [frame(FRAME.HEADERS, FLAG.END_HEADERS, 1, new Uint8Array([0xff, 0x7f]))],
    expect: "goaway",
    code: 9,
  },
  {
    name: "PUSH_PROMISE from a client",
    frames: () => [frame(PUSH_PROMISE, 4, 1, u32(2))],
    expect: "goaway",
    code: 1,
  },
  { name: "a stream with an even id", frames: () => [headers(2)], expect: "goaway", code: 1 },
  {
    name: "SETTINGS_INITIAL_WINDOW_SIZE above 2^31-1",
    frames: () => [frame(FRAME.SETTINGS, 0, 0, setting(4, 0x80000000))],
    expect: "goaway",
    code: 3,
  },
  {
    name: "SETTINGS_MAX_FRAME_SIZE below 16384",
    frames: () => [frame(FRAME.SETTINGS, 0, 0, setting(5, 100))],
    expect: "goaway",
    code: 1,
  },
  {
    name: "SETTINGS with a partial entry",
    frames: () => [frame(FRAME.SETTINGS, 0, 0, new Uint8Array(5))],
    expect: "goaway",
    code: 6,
  },
  {
    name: "PING of 7 bytes",
    frames: () => [frame(FRAME.PING, 0, 0, new Uint8Array(7))],
    expect: "goaway",
    code: 6,
  },
  {
    name: "RST_STREAM on an idle stream",
    frames: () => [frame(FRAME.RST_STREAM, 0, 11, u32(8))],
    expect: "goaway",
    code: 1,
  },
  {
    name: "body longer than its content-length",
    frames: () => [
      headers(1, [...GOOD, ["content-length", "2"]]),
      frame(FRAME.DATA, FLAG.END_STREAM, 1, new Uint8Array(5)),
    ],
    expect: "rst",
    code: 1,
  },
  {
    name: "body shorter than its content-length",
    frames: () => [
      headers(1, [...GOOD, ["content-length", "9"]]),
      frame(FRAME.DATA, FLAG.END_STREAM, 1, new Uint8Array(5)),
    ],
    expect: "rst",
    code: 1,
  },
  {
    name: "trailers without END_STREAM",
    frames: () => [headers(1), frame(FRAME.HEADERS, FLAG.END_HEADERS, 1, hpackLiteral([["x-t", "1"]]))],
    expect: "rst",
    code: 1,
  },
  {
    name: "DATA after END_STREAM",
    frames: () => [
      headers(1, HOLD),
      frame(FRAME.DATA, FLAG.END_STREAM, 1),
      frame(FRAME.DATA, 0, 1, new Uint8Array(1)),
    ],
    expect: "rst",
    code: 5,
  },
  {
    name: "PRIORITY of the wrong length",
    frames: () => [headers(1, HOLD), frame(PRIORITY, 0, 1, new Uint8Array(4))],
    expect: "rst",
    code: 6,
  },
];

function pick(raw: RawH2Client, want: "goaway" | "rst"): Promise<RawFrame | undefined> {
  return raw.waitFor((f) => f.type === (want === "goaway" ? FRAME.GOAWAY : FRAME.RST_STREAM), 3000);
}

Deno.test("H2Session: protocol violations get the RFC 9113 error; other connections unaffected", async () => {
  // The service waits for the request body so streams stay open while the violations arrive.
  const p = await startH2Proxy(async (req, signal) => {
    if (req.path === "/hold") {
      return await new Promise((_, reject) => signal.addEventListener("abort", () => reject(signal.reason)));
    }
    for (let c = await req.body.read(); c !== null; c = await req.body.read()) { /* drain */ }
    return textResponse(200, "ok");
  });
  const good = await connectClient(p.port);
  try {
    for (const c of CASES) {
      const raw = await RawH2Client.open(p.port);
      await raw.waitFor((f) => f.type === FRAME.SETTINGS);
      raw.write(concat(c.frames())); // one write: the frames arrive together, as an attacker would send them
      const f = await pick(raw, c.expect);
      const other = raw.frames.find((x) =>
        x.type === (c.expect === "goaway" ? FRAME.RST_STREAM : FRAME.GOAWAY)
      );
      raw.destroy();
      assert.ok(f, `${c.name}: no ${c.expect} (got ${raw.frames.map((x) => x.type).join(",")})`);
      assert.equal(errorCode(f), c.code, `${c.name}: error code`);
      if (c.expect === "rst") {
        assert.equal(other, undefined, `${c.name}: a stream error, not a connection error`);
      }
      const r = await call(good, { ":path": "/" });
      assert.equal(r.status, 200, `${c.name}: another connection still served`);
    }
  } finally {
    await closeSession(good);
    await p.close();
  }
});

Deno.test("H2Session: a connection that does not start with the preface is closed with GOAWAY", async () => {
  const p = await startH2Proxy(() => Promise.resolve(textResponse(200, "ok")));
  try {
    const sock = net.connect({ host: "127.0.0.1", port: p.port });
    const got: Uint8Array[] = [];
    sock.on("data", (c: Uint8Array) => got.push(c));
    const closed = new Promise((r) => sock.on("close", r));
    sock.on("error", () => {});
    sock.write("GET / HTTP/1.1\r\nHost: x\r\n\r\n");
    await closed;
    const all = new Uint8Array(got.reduce((n, c) => n + c.length, 0));
    let at = 0;
    for (const c of got) {
      all.set(c, at);
      at += c.length;
    }
    // Our SETTINGS, then GOAWAY PROTOCOL_ERROR.
    let o = 0;
    let goaway: number | undefined;
    while (o + 9 <= all.length) {
      const len = (all[o] << 16) | (all[o + 1] << 8) | all[o + 2];
      if (all[o + 3] === FRAME.GOAWAY) goaway = new DataView(all.buffer, o + 13, 4).getUint32(0);
      o += 9 + len;
    }
    assert.equal(goaway, 1);
  } finally {
    await p.close();
  }
});

Deno.test("H2Session: PING is answered with the same payload; SETTINGS are acknowledged", async () => {
  const p = await startH2Proxy(() => Promise.resolve(textResponse(200, "ok")));
  try {
    const raw = await RawH2Client.open(p.port);
    const opaque = new Uint8Array([1, 2, 3, 4, 5, 6, 7, 8]);
    raw.write(frame(FRAME.PING, 0, 0, opaque));
    const ack = await raw.waitFor((f) => f.type === FRAME.PING && (f.flags & FLAG.ACK) !== 0);
    assert.ok(ack);
    assert.deepEqual([...ack.payload], [...opaque]);
    assert.ok(await raw.waitFor((f) => f.type === FRAME.SETTINGS && (f.flags & FLAG.ACK) !== 0));
    raw.destroy();
  } finally {
    await p.close();
  }
});

Deno.test("H2Session: a request split over HEADERS + CONTINUATION with padding and priority is served", async () => {
  const p = await startH2Proxy((req) => Promise.resolve(textResponse(200, req.headers.get("x-long") ?? "")));
  try {
    const raw = await RawH2Client.open(p.port);
    const block = hpackLiteral([
      ...GOOD.map(([n, v]) => [n, n === ":method" ? "GET" : v] as [string, string]),
      [
        "x-long",
        "v".repeat(100),
      ],
    ]);
    const cut = 20;
    // HEADERS with PADDED (3 bytes of padding) and PRIORITY (5 bytes), then the rest in CONTINUATION.
    const first = new Uint8Array(1 + 5 + cut + 3);
    first[0] = 3;
    first.set(block.subarray(0, cut), 6);
    raw.write(
      frame(FRAME.HEADERS, 0x8 | 0x20 | FLAG.END_STREAM, 1, first),
      frame(CONTINUATION, FLAG.END_HEADERS, 1, block.subarray(cut)),
    );
    const data = await raw.waitFor((f) => f.type === FRAME.DATA && f.streamId === 1);
    raw.destroy();
    assert.ok(data);
    assert.equal(new TextDecoder().decode(data.payload), "v".repeat(100));
  } finally {
    await p.close();
  }
});

Deno.test("H2Session: a body within the windows goes out as one DATA frame with END_STREAM; one beyond them waits for WINDOW_UPDATE", async () => {
  const body = new Uint8Array(25).fill(0x62);
  const p = await startH2Proxy((req) =>
    Promise.resolve(
      req.path === "/small" ? textResponse(200, "hello") : {
        status: 200,
        headers: new HeaderList(["content-length", "25"]),
        body: bytesBody(body),
      },
    )
  );
  try {
    // The client allows 10 bytes per stream: the 25-byte body cannot be queued at once.
    const raw = await RawH2Client.open(p.port, false);
    raw.write(PREFACE, frame(FRAME.SETTINGS, 0, 0, setting(4, 10)));
    raw.write(
      frame(FRAME.HEADERS, FLAG.END_HEADERS | FLAG.END_STREAM, 1, hpackLiteral(rewritePath(GOOD, "/small"))),
    );
    const small = await raw.waitFor((f) => f.type === FRAME.DATA && f.streamId === 1);
    assert.ok(small);
    assert.equal(new TextDecoder().decode(small.payload), "hello");
    assert.equal(small.flags & FLAG.END_STREAM, FLAG.END_STREAM, "END_STREAM rides on the only DATA frame");
    assert.equal(raw.frames.filter((f) => f.type === FRAME.DATA && f.streamId === 1).length, 1);

    raw.write(
      frame(FRAME.HEADERS, FLAG.END_HEADERS | FLAG.END_STREAM, 3, hpackLiteral(rewritePath(GOOD, "/big"))),
    );
    assert.ok(await raw.waitFor((f) => f.type === FRAME.DATA && f.streamId === 3));
    await new Promise((r) => setTimeout(r, 50));
    const before = raw.frames.filter((f) => f.type === FRAME.DATA && f.streamId === 3);
    assert.deepEqual(
      before.map((f) => f.payload.length),
      [10],
      "only the window's 10 bytes before WINDOW_UPDATE",
    );
    raw.write(frame(FRAME.WINDOW_UPDATE, 0, 3, u32(100)));
    const end = await raw.waitFor((f) =>
      f.type === FRAME.DATA && f.streamId === 3 && (f.flags & FLAG.END_STREAM) !== 0
    );
    assert.ok(end);
    const all = raw.frames.filter((f) => f.type === FRAME.DATA && f.streamId === 3);
    assert.deepEqual([...concat(all.map((f) => f.payload))], [...body]);
    raw.destroy();
  } finally {
    await p.close();
  }
});

function rewritePath(fields: [string, string][], path: string): [string, string][] {
  return fields.map(([n, v]) => [n, n === ":path" ? path : v]);
}

function bytesBody(b: Uint8Array): Body {
  let sent = false;
  return {
    length: b.length,
    read: () => Promise.resolve(sent ? null : (sent = true, b)),
    trailers: undefined,
    cancel: () => {},
  };
}
