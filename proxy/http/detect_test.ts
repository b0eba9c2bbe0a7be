import assert from "node:assert/strict";
import * as net from "node:net";
import { DetectError, detectHttp, detectProtocol } from "./detect.ts";

const enc = (s: string) => new TextEncoder().encode(s);
const PREFACE = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

Deno.test("detectHttp: HTTP/2 preface, whole or the first 14 bytes, with or without frames after", () => {
  assert.equal(detectHttp(enc(PREFACE)), "http2");
  assert.equal(detectHttp(enc(PREFACE + "\x00\x00\x00\x04\x00\x00\x00\x00\x00")), "http2");
  assert.equal(detectHttp(enc("PRI * HTTP/2.0")), "http2");
  assert.equal(detectHttp(enc("PRI * HTTP/2.0\r\n\r\nS")), "http2");
  assert.equal(detectHttp(enc("PRI * HTTP/2.")), "opaque", "13 bytes are not enough");
  assert.equal(
    detectHttp(enc("PRI * HTTP/2.0\r\n\r\nXX\r\n\r\n")),
    "opaque",
    "preface must match where present",
  );
});

Deno.test("detectHttp: HTTP/1 request lines and every prefix of at least 14 bytes", () => {
  const reqs = [
    "GET / HTTP/1.1\r\n",
    "GET /foo/bar/bar/blah HTTP/1.1\r\nHost: foob.example.com\r\n\r\n",
    "POST /foo HTTP/1.1\r\nContent-Length: 0\r\n\r\n",
    "OPTIONS * HTTP/1.1\r\n\r\n",
    "GET http://example.com/x HTTP/1.1\r\n\r\n",
    "CONNECT example.com:443 HTTP/1.1\r\n\r\n",
    "DELETE /items/7 HTTP/1.0\r\n\r\n",
    "M-SEARCH * HTTP/1.1\r\n\r\n",
    "PRI /not-the-preface HTTP/1.1\r\n\r\n",
  ];
  for (const r of reqs) {
    for (let n = 1; n <= r.length; n++) {
      const want = n >= 14 ? "http1" : "opaque";
      assert.equal(detectHttp(enc(r.slice(0, n))), want, `${JSON.stringify(r.slice(0, n))}`);
    }
  }
  // A bare LF still reads as HTTP/1 here; the HTTP/1 codec is the one that refuses it.
  assert.equal(detectHttp(enc("GET / HTTP/1.1\nHost: x\n\n")), "http1");
});

Deno.test("detectHttp: near misses and other protocols are opaque", () => {
  const cases = [
    "get / HTTP/1.1\r\n\r\n", // methods are upper case
    "GET  / HTTP/1.1\r\n\r\n",
    "GET / HTTP/2.0\r\n\r\n",
    "GET / HTTP/1.2\r\n\r\n",
    "GET / HTTPS/1.1\r\n",
    "GET /\x00 HTTP/1.1\r\n",
    "GET /a\tb HTTP/1.1\r\n",
    "GET / HTTP/1.1\rX\n",
    "GET ?x HTTP/1.1\r\n\r\n",
    "AVERYVERYLONGMETHODNAME / HTTP/1.1\r\n",
    "HELLOWORLDFOOBAR",
    "foo.bar.blah\r\nbobo",
    "SSH-2.0-OpenSSH_9.6\r\n",
    "220 mail.example.com ESMTP\r\n",
    "*1\r\n$4\r\nPING\r\n", // redis
    "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03abcdefgh", // TLS ClientHello
    "\x00\x00\x00\x08\x04\xd2\x16\x2f\x00\x00\x00\x00", // postgres SSLRequest
    "",
  ];
  for (const c of cases) assert.equal(detectHttp(enc(c)), "opaque", JSON.stringify(c));
});

Deno.test("detectHttp: only the first 1024 bytes count", () => {
  const longTarget = "GET /" + "a".repeat(2000) + " HTTP/1.1\r\n";
  assert.equal(detectHttp(enc(longTarget)), "http1", "a valid prefix within 1024 bytes");
  const late = "x".repeat(1024) + PREFACE;
  assert.equal(detectHttp(enc(late)), "opaque");
});

Deno.test("detectHttp: random bytes are opaque (seeded fuzz, 200k buffers)", () => {
  let x = 0x9e3779b9;
  const next = () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return x >>> 0;
  };
  const buf = new Uint8Array(1024);
  for (let i = 0; i < 200_000; i++) {
    const n = 14 + (next() % (1024 - 14 + 1));
    for (let j = 0; j < n; j++) buf[j] = next() & 255;
    const b = buf.subarray(0, n);
    const got = detectHttp(b);
    if (got !== "opaque") {
      assert.fail(`random buffer #${i} (${n} bytes) detected as ${got}: ${Array.from(b.subarray(0, 32))}`);
    }
  }
});

async function pair(): Promise<{ client: net.Socket; server: net.Socket; close: () => void }> {
  const accepted = Promise.withResolvers<net.Socket>();
  const srv = net.createServer((s) => accepted.resolve(s));
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

Deno.test("detectProtocol: EOF before any byte is an error", async () => {
  const p = await pair();
  try {
    p.client.end();
    await assert.rejects(detectProtocol(p.server, 2000), DetectError);
  } finally {
    p.close();
  }
});
