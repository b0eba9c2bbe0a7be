import assert from "node:assert/strict";
import {
  BODY_CHUNKED,
  BODY_CLOSE,
  BODY_LENGTH,
  BODY_NONE,
  DEFAULT_LIMITS,
  HeadScanner,
  parseRequestHead,
  parseResponseHead,
  parseTrailers,
} from "./head.ts";
import { H1ParseError } from "./errors.ts";

const enc = new TextEncoder();
const bytes = (s: string) => new Uint8Array([...s].map((c) => c.charCodeAt(0)));
const req = (s: string) => parseRequestHead(enc.encode(s), DEFAULT_LIMITS);
const res = (s: string, method = "GET") => parseResponseHead(enc.encode(s), DEFAULT_LIMITS, method);

function status(f: () => unknown): number {
  try {
    f();
  } catch (e) {
    assert.ok(e instanceof H1ParseError, `expected H1ParseError, got ${e}`);
    return e.status;
  }
  return 0;
}

Deno.test("head scanner: finds the end across any split, bare LF endings included", () => {
  const cases: [string, number][] = [
    ["GET / HTTP/1.1\r\nHost: a\r\n\r\nNEXT", 27],
    ["GET / HTTP/1.1\nHost: a\n\nNEXT", 24],
    ["GET / HTTP/1.1\r\nHost: a\n\r\nX", 26],
    ["GET / HTTP/1.1\r\nHost: a\r\n", -1],
  ];
  for (const [text, end] of cases) {
    const bytes = enc.encode(text);
    for (let split = 0; split <= bytes.length; split++) {
      const s = new HeadScanner();
      const a = s.scan(bytes.subarray(0, split), 0);
      let found = a;
      if (a < 0) {
        const b = s.scan(bytes.subarray(split), 0);
        found = b < 0 ? -1 : split + b;
      }
      assert.equal(found, end, `${JSON.stringify(text)} split at ${split}`);
    }
  }
});

Deno.test("request head: fields, hop-by-hop consumed, host to authority", () => {
  const h = req(
    "POST /a/b?c=1 HTTP/1.1\r\nHost: svc.ns:8080\r\nUser-Agent: t\r\nContent-Length: 5\r\n" +
      "Connection: keep-alive, X-Hop\r\nKeep-Alive: timeout=5\r\nX-Hop: 1\r\nTE: trailers, deflate\r\n" +
      "Proxy-Connection: x\r\nX-Value:   spaced value \t\r\n\r\n",
  );
  assert.equal(h.method, "POST");
  assert.equal(h.path, "/a/b?c=1");
  assert.equal(h.authority, "svc.ns:8080");
  assert.equal(h.scheme, undefined);
  assert.equal(h.version, "HTTP/1.1");
  assert.equal(h.bodyKind, BODY_LENGTH);
  assert.equal(h.contentLength, 5);
  assert.equal(h.keepAlive, true);
  assert.equal(h.teTrailers, true);
  assert.deepEqual(h.headers.raw, [
    "user-agent",
    "t",
    "content-length",
    "5",
    "te",
    "trailers",
    "x-value",
    "spaced value",
  ]);
});

Deno.test("request head: absolute-form, asterisk, HTTP/1.0 and keep-alive rules", () => {
  const a = req("GET http://Example.com:81?q=1 HTTP/1.1\r\nHost: other\r\n\r\n");
  assert.deepEqual([a.scheme, a.authority, a.path], ["http", "Example.com:81", "/?q=1"]);
  const b = req("GET HTTPS://h/p/q HTTP/1.1\r\nHost: h\r\n\r\n");
  assert.deepEqual([b.scheme, b.authority, b.path], ["https", "h", "/p/q"]);
  const o = req("OPTIONS * HTTP/1.1\r\nHost: h\r\n\r\n");
  assert.equal(o.path, "*");
  const old = req("GET / HTTP/1.0\r\n\r\n");
  assert.deepEqual([old.authority, old.keepAlive], ["", false]);
  assert.equal(req("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n").keepAlive, true);
  assert.equal(req("GET / HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n").keepAlive, false);
  assert.equal(req("GET / HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n").bodyKind, BODY_NONE);
  assert.equal(req("GET / HTTP/1.1\r\nHost: h\r\nContent-Length: 7, 7\r\n\r\n").contentLength, 7);
  assert.equal(
    req("GET / HTTP/1.1\r\nHost: h\r\nContent-Length: 7\r\ncontent-length: 7\r\n\r\n").contentLength,
    7,
  );
  const c = req("PUT / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: Chunked\r\n\r\n");
  assert.equal(c.bodyKind, BODY_CHUNKED);
  assert.equal(c.headers.has("transfer-encoding"), false);
  // obs-text (bytes >= 0x80) stays one char per byte, so it is written back unchanged.
  const obs = parseRequestHead(
    bytes("GET /caf\xe9 HTTP/1.1\r\nHost: h\r\nX-L: caf\xe9\r\n\r\n"),
    DEFAULT_LIMITS,
  );
  assert.equal(obs.headers.get("x-l"), "caf\xe9");
  assert.equal(obs.path, "/caf\xe9");
});

Deno.test("request head: upgrade intent kept, h2c dropped, expect", () => {
  const ws = req("GET /ws HTTP/1.1\r\nHost: h\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n");
  assert.equal(ws.upgrade, true);
  assert.equal(ws.headers.get("upgrade"), "websocket");
  assert.equal(ws.headers.get("connection"), "upgrade");
  const noToken = req("GET / HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\n\r\n");
  assert.equal(noToken.upgrade, false);
  assert.equal(noToken.headers.has("upgrade"), false);
  const h2c = req(
    "GET / HTTP/1.1\r\nHost: h\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAA\r\n\r\n",
  );
  assert.equal(h2c.upgrade, false);
  assert.equal(h2c.headers.size, 0);
  const ex = req("POST / HTTP/1.1\r\nHost: h\r\nExpect: 100-Continue\r\nContent-Length: 3\r\n\r\n");
  assert.equal(ex.expectContinue, true);
  assert.equal(ex.headers.has("expect"), false);
  assert.equal(req("GET / HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\n\r\n").expectContinue, false);
});

Deno.test("request head: each malformed or hostile head gets its status", () => {
  const H = "Host: h\r\n";
  const table: [string, string, number][] = [
    [
      "CL and TE (CL.TE)",
      `POST / HTTP/1.1\r\n${H}Content-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n`,
      400,
    ],
    [
      "TE and CL (TE.CL)",
      `POST / HTTP/1.1\r\n${H}Transfer-Encoding: chunked\r\nContent-Length: 4\r\n\r\n`,
      400,
    ],
    ["TE.TE obfuscated value", `POST / HTTP/1.1\r\n${H}Transfer-Encoding: xchunked\r\n\r\n`, 400],
    ["TE.TE chunked not last", `POST / HTTP/1.1\r\n${H}Transfer-Encoding: chunked, identity\r\n\r\n`, 400],
    [
      "TE.TE two fields",
      `POST / HTTP/1.1\r\n${H}Transfer-Encoding: chunked\r\nTransfer-Encoding: x\r\n\r\n`,
      400,
    ],
    ["TE.TE space before colon", `POST / HTTP/1.1\r\n${H}Transfer-Encoding : chunked\r\n\r\n`, 400],
    ["TE.TE vertical tab", `POST / HTTP/1.1\r\n${H}Transfer-Encoding:\x0bchunked\r\n\r\n`, 400],
    ["TE chunked twice", `POST / HTTP/1.1\r\n${H}Transfer-Encoding: chunked, chunked\r\n\r\n`, 400],
    ["TE gzip then chunked", `POST / HTTP/1.1\r\n${H}Transfer-Encoding: gzip, chunked\r\n\r\n`, 501],
    ["TE in HTTP/1.0", `POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n`, 400],
    ["differing CL", `POST / HTTP/1.1\r\n${H}Content-Length: 4\r\nContent-Length: 5\r\n\r\n`, 400],
    ["differing CL list", `POST / HTTP/1.1\r\n${H}Content-Length: 4, 5\r\n\r\n`, 400],
    ["CL not a number", `POST / HTTP/1.1\r\n${H}Content-Length: +4\r\n\r\n`, 400],
    ["CL huge", `POST / HTTP/1.1\r\n${H}Content-Length: 9999999999999999\r\n\r\n`, 400],
    ["obs-fold", `GET / HTTP/1.1\r\n${H}X-A: 1\r\n  continued\r\n\r\n`, 400],
    ["obs-fold tab", `GET / HTTP/1.1\r\n${H}X-A: 1\r\n\tcontinued\r\n\r\n`, 400],
    ["bare LF in fields", `GET / HTTP/1.1\r\nHost: h\nX-A: 1\r\n\r\n`, 400],
    ["bare LF request line", `GET / HTTP/1.1\nHost: h\r\n\r\n`, 400],
    ["bare LF everywhere", `GET / HTTP/1.1\nHost: h\n\n`, 400],
    ["bare CR in value", `GET / HTTP/1.1\r\n${H}X-A: a\rb\r\n\r\n`, 400],
    ["NUL in value", `GET / HTTP/1.1\r\n${H}X-A: a\0b\r\n\r\n`, 400],
    ["DEL in value", `GET / HTTP/1.1\r\n${H}X-A: a\x7fb\r\n\r\n`, 400],
    ["bad name char", `GET / HTTP/1.1\r\n${H}X(A): 1\r\n\r\n`, 400],
    ["non-ASCII name", `GET / HTTP/1.1\r\n${H}X-\xe9: 1\r\n\r\n`, 400],
    ["empty name", `GET / HTTP/1.1\r\n${H}: 1\r\n\r\n`, 400],
    ["no colon", `GET / HTTP/1.1\r\n${H}X-A\r\n\r\n`, 400],
    ["request line two spaces", `GET  / HTTP/1.1\r\n${H}\r\n`, 400],
    ["request line missing version", `GET /\r\n${H}\r\n`, 400],
    ["request line junk", `hello\r\n${H}\r\n`, 400],
    ["method with bad char", `G(T / HTTP/1.1\r\n${H}\r\n`, 400],
    ["target with control char", `GET /\x01 HTTP/1.1\r\n${H}\r\n`, 400],
    ["target not a path", `GET foo HTTP/1.1\r\n${H}\r\n`, 400],
    ["asterisk with GET", `GET * HTTP/1.1\r\n${H}\r\n`, 400],
    ["absolute-form userinfo", `GET http://u@h/ HTTP/1.1\r\n${H}\r\n`, 400],
    ["absolute-form empty authority", `GET http:/// HTTP/1.1\r\n${H}\r\n`, 400],
    ["fragment", `GET /a#b HTTP/1.1\r\n${H}\r\n`, 400],
    ["version 2.0", `GET / HTTP/2.0\r\n${H}\r\n`, 505],
    ["version 0.9", `GET / HTTP/0.9\r\n${H}\r\n`, 505],
    ["version 1.2", `GET / HTTP/1.2\r\n${H}\r\n`, 505],
    ["version lower-case", `GET / http/1.1\r\n${H}\r\n`, 400],
    ["version garbage", `GET / HTTP/1.1x\r\n${H}\r\n`, 400],
    ["no Host in 1.1", `GET / HTTP/1.1\r\nX-A: 1\r\n\r\n`, 400],
    ["two Hosts", `GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n`, 400],
    ["bad Host", `GET / HTTP/1.1\r\nHost: a b\r\n\r\n`, 400],
    ["Host with slash", `GET / HTTP/1.1\r\nHost: a/b\r\n\r\n`, 400],
    ["unknown expectation", `GET / HTTP/1.1\r\n${H}Expect: 200-ok\r\n\r\n`, 417],
    ["too many headers", `GET / HTTP/1.1\r\n${H}${"X-A: 1\r\n".repeat(100)}\r\n`, 431],
  ];
  for (const [name, text, want] of table) {
    const got = status(() => parseRequestHead(bytes(text), DEFAULT_LIMITS));
    assert.equal(got, want, `${name}: status ${got}, want ${want}`);
  }
  // 99 fields + Host is exactly the limit.
  assert.equal(status(() => req(`GET / HTTP/1.1\r\nHost: h\r\n${"X-A: 1\r\n".repeat(99)}\r\n`)), 0);
});

Deno.test("response head: framing by status, method, CL and TE", () => {
  const ok = res("HTTP/1.1 200 OK\r\nContent-Length: 3\r\nServer: x\r\n\r\n");
  assert.deepEqual([ok.status, ok.bodyKind, ok.contentLength, ok.keepAlive], [200, BODY_LENGTH, 3, true]);
  assert.deepEqual(ok.headers.raw, ["content-length", "3", "server", "x"]);
  const ch = res("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");
  assert.equal(ch.bodyKind, BODY_CHUNKED);
  const cl = res("HTTP/1.1 200 OK\r\n\r\n");
  assert.deepEqual([cl.bodyKind, cl.keepAlive], [BODY_CLOSE, false]);
  assert.equal(res("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n", "HEAD").bodyKind, BODY_NONE);
  assert.equal(res("HTTP/1.1 304 Not Modified\r\nContent-Length: 10\r\n\r\n").bodyKind, BODY_NONE);
  const nc = res("HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n");
  assert.deepEqual([nc.bodyKind, nc.headers.has("content-length")], [BODY_NONE, false]);
  assert.equal(res("HTTP/1.1 100 Continue\r\n\r\n").bodyKind, BODY_NONE);
  assert.equal(res("HTTP/1.0 200 OK\r\nContent-Length: 1\r\n\r\n").keepAlive, false);
  assert.equal(res("HTTP/1.0 200 OK\r\nContent-Length: 1\r\nConnection: keep-alive\r\n\r\n").keepAlive, true);
  assert.equal(res("HTTP/1.1 200\r\nContent-Length: 1\r\n\r\n").status, 200);
  const up = res("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n");
  assert.equal(up.headers.get("upgrade"), "websocket");
  const bad: [string, number][] = [
    ["HTTP/1.1 200 OK\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n", 502],
    ["HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n", 502],
    ["HTTP/1.1 2x0 OK\r\n\r\n", 502],
    ["HTTP/1.1 200 OK\r\nX: a\r\n b\r\n\r\n", 502],
    ["HTTP/1.1 200 OK\nContent-Length: 0\r\n\r\n", 502],
    ["HTTP/2 200 OK\r\n\r\n", 505],
  ];
  for (const [text, want] of bad) assert.equal(status(() => res(text)), want, JSON.stringify(text));
});

Deno.test("trailers: parsed, framing fields dropped, malformed rejected", () => {
  const t = parseTrailers("Grpc-Status: 0\r\nContent-Length: 5\r\nX-T: v\r\n\r\n", DEFAULT_LIMITS, 400);
  assert.deepEqual(t.raw, ["grpc-status", "0", "x-t", "v"]);
  assert.equal(status(() => parseTrailers("X: a\r\n b\r\n\r\n", DEFAULT_LIMITS, 400)), 400);
});

Deno.test("request head: field names fold to lower case whether or not they are common ones; near-misses stay apart", () => {
  const h = req(
    "GET / HTTP/1.1\r\nHOST: h\r\nUser-Agent: u\r\nX-Custom-Name: c\r\nContent-Type: t\r\ncontent_length: 7\r\n" +
      "Accept~: a\r\n\r\n",
  );
  assert.equal(h.authority, "h");
  // "content_length" is not Content-Length ('_' is no '-'): no body framing comes from it.
  assert.equal(h.bodyKind, BODY_NONE);
  assert.deepEqual(h.headers.raw, [
    "user-agent",
    "u",
    "x-custom-name",
    "c",
    "content-type",
    "t",
    "content_length",
    "7",
    "accept~",
    "a",
  ]);
  // Methods and versions read in place are the same strings as sliced ones.
  assert.equal(req("DELETE /x HTTP/1.0\r\n\r\n").method, "DELETE");
  assert.equal(req("PURGE /x HTTP/1.1\r\nHost: h\r\n\r\n").method, "PURGE");
  assert.equal(req("GET /x HTTP/1.0\r\n\r\n").version, "HTTP/1.0");
  assert.equal(status(() => req("GET /x HTTP/1.2\r\nHost: h\r\n\r\n")), 505);
  assert.equal(status(() => req("GET /x HTTP/1.1x\r\nHost: h\r\n\r\n")), 400);
  // A Content-Length list of one value is passed on as that value's plain form.
  assert.deepEqual(req("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 5, 5\r\n\r\n").headers.raw, [
    "content-length",
    "5",
  ]);
  assert.deepEqual(req("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 012\r\n\r\n").headers.raw, [
    "content-length",
    "12",
  ]);
  // A head in the middle of a chunk parses from its range.
  const buf = enc.encode("xxGET /r HTTP/1.1\r\nHost: h\r\n\r\nyy");
  assert.equal(parseRequestHead(buf, DEFAULT_LIMITS, 2, buf.length - 2).path, "/r");
});
