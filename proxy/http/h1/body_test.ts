import assert from "node:assert/strict";
import { PassThrough } from "node:stream";
import { type BodyOwner, ChunkedBody, CloseBody, LengthBody, type WireBody } from "./body.ts";
import { DEFAULT_LIMITS, type H1Limits } from "./head.ts";
import { SocketReader } from "./reader.ts";
import { H1ParseError } from "./errors.ts";

const enc = new TextEncoder();
const dec = new TextDecoder();

class Owner implements BodyOwner {
  finished: [Error | undefined, boolean][] = [];
  started = 0;
  bodyStarted(): void {
    this.started++;
  }
  bodyFinished(_b: WireBody, e: Error | undefined, cancelled: boolean): void {
    this.finished.push([e, cancelled]);
  }
}

async function readAll(b: WireBody): Promise<string> {
  let s = "";
  for (;;) {
    const c = await b.read();
    if (c === null) return s;
    s += dec.decode(c);
  }
}

/** Feeds `pieces` into a stream one per macrotask, as a socket would deliver them. */
function feed(stream: PassThrough, pieces: Uint8Array[], end: boolean): void {
  let i = 0;
  const next = () => {
    if (i < pieces.length) {
      stream.write(pieces[i++]);
      setTimeout(next, 0);
    } else if (end) stream.end();
  };
  next();
}

function chunked(limits: H1Limits = DEFAULT_LIMITS) {
  const stream = new PassThrough();
  const reader = new SocketReader(stream);
  const owner = new Owner();
  return { stream, reader, owner, body: new ChunkedBody(reader, owner, limits, 400) };
}

const WIRE =
  '5;ext=1\r\nhello\r\n1\r\n \r\nA ; x="y"\r\n0123456789\r\n0\r\nGrpc-Status: 0\r\nX-T: a\r\n\r\nNEXT';

Deno.test("chunked body: data, extensions and trailers, however the bytes are split", async () => {
  const all = enc.encode(WIRE);
  for (const size of [1, 2, 3, 7, all.length]) {
    const { stream, reader, owner, body } = chunked();
    const pieces: Uint8Array[] = [];
    for (let i = 0; i < all.length; i += size) pieces.push(all.slice(i, i + size));
    feed(stream, pieces, false);
    assert.equal(await readAll(body), "hello 0123456789", `split ${size}`);
    assert.deepEqual(body.trailers?.raw, ["grpc-status", "0", "x-t", "a"]);
    assert.deepEqual(owner.finished, [[undefined, false]]);
    // What follows the body stays for the next message.
    let rest = "";
    while (rest.length < 4) {
      const c = reader.take(Infinity);
      if (c !== null) rest += dec.decode(c);
      else await reader.wait();
    }
    assert.equal(rest, "NEXT");
    stream.destroy();
  }
});

Deno.test("chunked body: malformed framing fails the read with 400", async () => {
  const small = { ...DEFAULT_LIMITS, maxChunkLineBytes: 32, maxChunkExtBytes: 40, maxHeaders: 2 };
  const cases: [string, string][] = [
    ["chunk data not followed by CRLF", "3\r\nabcX\r\n0\r\n\r\n"],
    ["bare LF after the size", "3\nabc\r\n0\r\n\r\n"],
    ["bare LF after the data", "3\r\nabc\n0\r\n\r\n"],
    ["size not hex", "zz\r\nabc\r\n0\r\n\r\n"],
    ["0x prefix", "0x3\r\nabc\r\n0\r\n\r\n"],
    ["size overflow", "1000000000000000\r\n"],
    ["negative size", "-3\r\nabc\r\n0\r\n\r\n"],
    ["junk after the size", "3 x\r\nabc\r\n0\r\n\r\n"],
    ["line too long", "3;" + "e".repeat(40) + "\r\nabc\r\n0\r\n\r\n"],
    [
      "extensions over the body limit",
      "1;" + "e".repeat(25) + "\r\na\r\n1;" + "e".repeat(25) + "\r\nb\r\n0\r\n\r\n",
    ],
    ["control char in extension", "3;a\x01\r\nabc\r\n0\r\n\r\n"],
    ["too many trailers", "0\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n"],
    ["obs-fold in trailers", "0\r\nA: 1\r\n folded\r\n\r\n"],
  ];
  for (const [name, wire] of cases) {
    const { stream, owner, body } = chunked(small);
    feed(stream, [enc.encode(wire)], false);
    await assert.rejects(readAll(body), (e) => e instanceof H1ParseError && e.status === 400, name);
    assert.equal(owner.finished.length, 1, name);
    assert.ok(owner.finished[0][0] instanceof H1ParseError, name);
    stream.destroy();
  }
});

Deno.test("chunked body: the connection closing inside the body is an error", async () => {
  const { stream, body } = chunked();
  feed(stream, [enc.encode("5\r\nhel")], true);
  await assert.rejects(readAll(body), /connection closed/);
});

Deno.test("length body: exact bytes, then the rest stays; early end fails", async () => {
  const stream = new PassThrough();
  const reader = new SocketReader(stream);
  const owner = new Owner();
  const body = new LengthBody(reader, owner, 5, 400);
  feed(stream, [enc.encode("he"), enc.encode("lloGET")], false);
  assert.equal(await readAll(body), "hello");
  assert.deepEqual(owner.finished, [[undefined, false]]);
  assert.equal(owner.started, 1);
  assert.equal(dec.decode(reader.take(Infinity)!), "GET");
  stream.destroy();

  const s2 = new PassThrough();
  const short = new LengthBody(new SocketReader(s2), new Owner(), 10, 502);
  feed(s2, [enc.encode("abc")], true);
  await assert.rejects(readAll(short), (e) => e instanceof H1ParseError && /3 of 10/.test(e.message));
});

Deno.test("close-delimited body ends at FIN; cancel tells the owner", async () => {
  const stream = new PassThrough();
  const owner = new Owner();
  const body = new CloseBody(new SocketReader(stream), owner);
  feed(stream, [enc.encode("a"), enc.encode("b")], true);
  assert.equal(await readAll(body), "ab");

  const s2 = new PassThrough();
  const o2 = new Owner();
  const b2 = new LengthBody(new SocketReader(s2), o2, 10, 400);
  const pending = b2.read();
  b2.cancel(new Error("not needed"));
  await assert.rejects(pending, /not needed/);
  assert.deepEqual(o2.finished.map(([e, c]) => [e?.message, c]), [["not needed", true]]);
  s2.destroy();
});

Deno.test("socket reader: pauses the source above the high-water mark, resumes when read", async () => {
  const stream = new PassThrough();
  const reader = new SocketReader(stream, 1000);
  stream.write(new Uint8Array(600));
  stream.write(new Uint8Array(600));
  while (reader.buffered < 1200) await reader.wait();
  assert.equal(stream.isPaused(), true);
  reader.take(Infinity);
  assert.equal(stream.isPaused(), false);
  stream.destroy();
});
