import assert from "node:assert/strict";
import * as net from "node:net";
import { DetectError, detectHttp, detectProtocol, settle } from "./detect.ts";
import { DETECT_HTTP1_CORPUS } from "./detect_corpus.ts";
import { HOSTILE_CORPUS } from "./h1/hostile_corpus.ts";
import { H1ParseError } from "./h1/errors.ts";
import { DEFAULT_LIMITS, parseRequestHead } from "./h1/head.ts";

const enc = (s: string) => new TextEncoder().encode(s);
const PREFACE = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

const latin1 = (s: string) => Uint8Array.from(s, (ch) => ch.charCodeAt(0));

/** What the proxy's HTTP/1 server does with a head: strip leading CRLF pairs, then parse. */
function serverAccepts(wire: string): boolean {
  let s = wire;
  while (s.startsWith("\r\n")) s = s.slice(2);
  const end = s.search(/\n\r?\n/);
  const head = end < 0 ? s : s.slice(0, s.indexOf("\n", end + 1) + 1);
  try {
    parseRequestHead(latin1(head), DEFAULT_LIMITS);
    return true;
  } catch (e) {
    if (e instanceof H1ParseError) return false;
    throw e;
  }
}

/** Every prefix of `wire` is undecided or `final` (never opaque), and the whole is `final`. */
function assertNeverOpaque(wire: string, final: string): void {
  const b = latin1(wire);
  for (let n = 0; n <= b.length; n++) {
    const got = detectHttp(b.subarray(0, n));
    assert.ok(got === "undecided" || got === final, `${JSON.stringify(wire.slice(0, n))}: ${got}`);
    if (n > 0) {
      assert.notEqual(settle(b.subarray(0, n)), "opaque", `${JSON.stringify(wire.slice(0, n))} settles`);
    }
  }
  assert.equal(detectHttp(b), final, JSON.stringify(wire));
}

Deno.test("detectHttp: HTTP/2 preface, whole, with frames after, and its prefixes undecided", () => {
  assert.equal(detectHttp(enc(PREFACE)), "http2");
  assert.equal(detectHttp(enc(PREFACE + "\x00\x00\x00\x04\x00\x00\x00\x00\x00")), "http2");
  for (let n = 1; n < PREFACE.length; n++) {
    assert.equal(detectHttp(enc(PREFACE.slice(0, n))), "undecided");
    assert.equal(settle(enc(PREFACE.slice(0, n))), "http2", "a preface cut short is still HTTP/2");
  }
  // Once it leaves the preface it is an HTTP/1 request line (which the HTTP/1 server answers 505).
  assert.equal(detectHttp(enc("PRI * HTTP/2.0\r\n\r\nXX\r\n\r\n")), "http1");
});

Deno.test("detectHttp: HTTP/1 request lines; no prefix of one is ever opaque", () => {
  const reqs = [
    "GET / HTTP/1.1\r\n",
    "GET /foo/bar/bar/blah HTTP/1.1\r\nHost: foob.example.com\r\n\r\n",
    "POST /foo HTTP/1.1\r\nContent-Length: 0\r\n\r\n",
    "OPTIONS * HTTP/1.1\r\n\r\n",
    "GET http://example.com/x HTTP/1.1\r\n\r\n",
    "CONNECT example.com:443 HTTP/1.1\r\n\r\n",
    "CONNECT 10.0.0.1:443 HTTP/1.1\r\n\r\n",
    "DELETE /items/7 HTTP/1.0\r\n\r\n",
    "M-SEARCH * HTTP/1.1\r\n\r\n",
    "PRI /not-the-preface HTTP/1.1\r\n\r\n",
  ];
  for (const r of reqs) assertNeverOpaque(r, "http1");
  // A bare LF still reads as HTTP/1 here; the HTTP/1 server is the one that refuses it.
  assert.equal(detectHttp(enc("GET / HTTP/1.1\nHost: x\n\n")), "http1");
});

Deno.test("detectHttp: every request the HTTP/1 server accepts, and lenient variants, is HTTP/1", () => {
  for (const c of DETECT_HTTP1_CORPUS) {
    const wire = c.wire("/closed/x");
    assert.equal(serverAccepts(wire), c.accepted, `${c.name}: the corpus says accepted=${c.accepted}`);
    assertNeverOpaque(wire, "http1");
  }
  // The hostile HTTP/1 corpus: whatever the server parses as a request is detected as HTTP/1.
  for (const [name, wire] of HOSTILE_CORPUS) {
    const w = typeof wire === "string" ? wire : wire.join("");
    if (serverAccepts(w)) assert.equal(detectHttp(latin1(w)), "http1", name);
  }
});

Deno.test("detectHttp: generated request lines the server accepts are all HTTP/1 (seeded, 20k)", () => {
  let x = 0x2545f491;
  const next = () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return x >>> 0;
  };
  const tchars = "!#$%&'*+-.^_`|~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
  const pick = (s: string, n: number) => Array.from({ length: n }, () => s[next() % s.length]).join("");
  let accepted = 0;
  for (let i = 0; i < 20_000; i++) {
    const method = pick(tchars, 1 + next() % 24);
    const target = "/" + pick(tchars + "/?=;:@,", next() % 40);
    const version = ["HTTP/1.1", "HTTP/1.0", "HTTP/1.1", "http/1.1", "HTTP/9.9"][next() % 5];
    const lead = "\r\n".repeat(next() % 3);
    const wire = `${lead}${method} ${target} ${version}\r\nHost: t\r\n\r\n`;
    if (serverAccepts(wire)) {
      accepted++;
      assert.equal(detectHttp(latin1(wire)), "http1", JSON.stringify(wire));
    }
  }
  assert.ok(accepted > 5_000, `${accepted} generated requests were accepted by the server`);
});

Deno.test("detectHttp: other protocols and near misses are opaque at once", () => {
  const cases = [
    "GET / HTTPS/1.1\r\n",
    "GET /\x00 HTTP/1.1\r\n",
    "GET k\r\n", // redis inline
    "foo.bar.blah\r\nbobo",
    "SSH-2.0-OpenSSH_9.6\r\n",
    "220 mail.example.com ESMTP\r\n",
    "*1\r\n$4\r\nPING\r\n", // redis
    "PING\r\n",
    "SET k v\r\n",
    "set k 0 0 5\r\nhello\r\n", // memcached
    "get foo\r\n",
    "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03abcdefgh", // TLS ClientHello
    "\x00\x00\x00\x08\x04\xd2\x16\x2f\x00\x00\x00\x00", // postgres SSLRequest
    "AMQP\x00\x00\x09\x01",
  ];
  for (const c of cases) assert.equal(detectHttp(latin1(c)), "opaque", JSON.stringify(c));
  assert.equal(detectHttp(enc("")), "undecided");
  assert.equal(settle(enc("")), "opaque", "nothing at all is opaque");
});

Deno.test("detectHttp: only the first 1024 bytes count; an undecided start at the limit is HTTP/1", () => {
  const longTarget = "GET /" + "a".repeat(2000) + " HTTP/1.1\r\n";
  assert.equal(detectHttp(enc(longTarget)), "undecided");
  assert.equal(settle(enc(longTarget)), "http1", "a valid prefix within 1024 bytes");
  const late = "x".repeat(1024) + PREFACE;
  assert.equal(detectHttp(enc(late)), "undecided");
  assert.equal(detectHttp(enc("x".repeat(1023) + ":" + PREFACE)), "opaque");
});

Deno.test("detectHttp: random bytes are never HTTP (seeded fuzz, 200k buffers)", () => {
  let x = 0x9e3779b9;
  const next = () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return x >>> 0;
  };
  const buf = new Uint8Array(1024);
  let undecided = 0;
  for (let i = 0; i < 200_000; i++) {
    const n = 14 + (next() % (1024 - 14 + 1));
    for (let j = 0; j < n; j++) buf[j] = next() & 255;
    const b = buf.subarray(0, n);
    const got = detectHttp(b);
    if (got === "undecided") undecided++;
    else if (got !== "opaque") {
      assert.fail(`random buffer #${i} (${n} bytes) detected as ${got}: ${Array.from(b.subarray(0, 32))}`);
    }
  }
  // A token then whitespace then target bytes could still be a request: rare, and bounded here.
  assert.ok(undecided < 200, `${undecided} random buffers were undecided`);
});

async function pair(): Promise<{ client: net.Socket; server: net.Socket; close: () => void }> {
  const accepted = Promise.withResolvers<net.Socket>();
  // As the proxy listens: a client's half-close leaves the socket open.
  const srv = net.createServer({ allowHalfOpen: true }, (s) => accepted.resolve(s));
  await new Promise<void>((r) => srv.listen(0, "127.0.0.1", () => r()));
  const client = net.connect({ host: "127.0.0.1", port: (srv.address() as net.AddressInfo).port });
  client.on("error", () => {});
  const server = await accepted.promise;
  server.on("error", () => {});
  return {
    client,
    server,
    close: () => {
      client.destroy();
      server.destroy();
      srv.close();
    },
  };
}

function readN(sock: net.Socket, n: number): Promise<string> {
  return new Promise((resolve) => {
    let got = "";
    const onData = (d: Uint8Array) => {
      got += new TextDecoder().decode(d);
      if (got.length >= n) {
        sock.off("data", onData);
        resolve(got);
      }
    };
    sock.on("data", onData);
    sock.resume();
  });
}

Deno.test("detectProtocol: classifies a live socket and puts the bytes back for the next reader", async () => {
  for (
    const [sent, want] of [[PREFACE + "rest", "http2"], ["GET / HTTP/1.1\r\nHost: a\r\n\r\n", "http1"], [
      "\x16\x03\x01 binary stuff here",
      "opaque",
    ]] as const
  ) {
    const p = await pair();
    try {
      p.client.write(sent);
      const d = await detectProtocol(p.server, 2000);
      assert.equal(d.protocol, want, JSON.stringify(sent));
      assert.equal(d.timedOut, false);
      assert.equal(
        await readN(p.server, sent.length),
        sent,
        "the next reader sees the stream from its start",
      );
    } finally {
      p.close();
    }
  }
});

Deno.test("detectProtocol: silence → opaque with timedOut, and later bytes still arrive", async () => {
  const p = await pair();
  try {
    const t0 = Date.now();
    const d = await detectProtocol(p.server, 100);
    assert.equal(d.protocol, "opaque");
    assert.equal(d.timedOut, true);
    assert.ok(Date.now() - t0 >= 90);
    p.client.write("server-speaks-first protocols get here unchanged");
    assert.equal(await readN(p.server, 10), "server-speaks-first protocols get here unchanged");
  } finally {
    p.close();
  }
});

Deno.test("detectProtocol: reads on until the bytes decide (a request line in pieces)", async () => {
  const p = await pair();
  try {
    p.client.write("G");
    setTimeout(() => p.client.write("ET /x HT"), 30);
    setTimeout(() => p.client.write("TP/1.1\r\nHost: a\r\n\r\n"), 60);
    const d = await detectProtocol(p.server, 5000);
    assert.equal(d.protocol, "http1");
    assert.equal(d.timedOut, false);
  } finally {
    p.close();
  }
});

Deno.test("detectProtocol: a request line dribbled past the timeout is HTTP/1, not opaque", async () => {
  const p = await pair();
  try {
    p.client.write("PURGE /adm");
    const d = await detectProtocol(p.server, 100);
    assert.equal(d.timedOut, true);
    assert.equal(d.protocol, "http1");
    p.client.write("in HTTP/1.1\r\n\r\n");
    assert.equal(await readN(p.server, 24), "PURGE /admin HTTP/1.1\r\n\r\n");
  } finally {
    p.close();
  }
});

Deno.test("detectProtocol: a short undecided message then EOF is opaque (it can never become a request)", async () => {
  const p = await pair();
  try {
    p.client.end("hello");
    const d = await detectProtocol(p.server, 5000);
    assert.equal(d.protocol, "opaque");
    assert.equal(d.timedOut, false);
    const ended = new Promise<void>((r) => p.server.once("end", () => r()));
    assert.equal(await readN(p.server, 5), "hello", "the next reader gets the bytes");
    await ended; // and the half-close, which the forwarder must pass on
    assert.equal(settle(enc("hello"), true), "opaque");
    assert.equal(settle(enc("hello")), "http1", "without EOF it could still become one");
  } finally {
    p.close();
  }
});

Deno.test("detectProtocol: EOF before any byte is an error", async () => {
  const p = await pair();
  try {
    p.client.end();
    await assert.rejects(detectProtocol(p.server, 2000), DetectError);
  } finally {
    p.close();
  }
});
