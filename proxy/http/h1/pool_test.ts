import assert from "node:assert/strict";
import * as net from "node:net";
import { connectTcp } from "../../transport/connect.ts";
import { type Body, bytesBody, EMPTY_BODY, HeaderList, type HttpRequest } from "../message.ts";
import { H1ParseError, Http1ClientError } from "./errors.ts";
import { Http1Pool } from "./pool.ts";
import { sleep, within } from "./testing.ts";

const enc = new TextEncoder();
const dec = new TextDecoder();

/**
 * A scripted backend: `onRequest(sock, n, head)` is called for each request head (n counts per
 * connection, from 1); request bodies are not parsed, so scripts only use body-less requests or
 * read bodies themselves.
 */
async function rawBackend(onRequest: (sock: net.Socket, n: number, head: string) => void) {
  let connections = 0;
  let closes = 0;
  const socks = new Set<net.Socket>();
  const srv = net.createServer({ allowHalfOpen: true }, (sock) => {
    connections++;
    socks.add(sock);
    sock.on("close", () => {
      closes++;
      socks.delete(sock);
    });
    sock.on("error", () => {});
    sock.on("end", () => sock.end());
    let buf = "";
    let n = 0;
    sock.setEncoding("latin1");
    sock.on("data", (d: string) => {
      buf += d;
      for (;;) {
        const i = buf.indexOf("\r\n\r\n");
        if (i < 0) return;
        const head = buf.slice(0, i + 4);
        buf = buf.slice(i + 4);
        onRequest(sock, ++n, head);
      }
    });
  });
  await new Promise<void>((r) => srv.listen(0, "127.0.0.1", r));
  const port = (srv.address() as net.AddressInfo).port;
  return {
    port,
    connections: () => connections,
    closes: () => closes,
    close: () => {
      for (const s of socks) s.destroy();
      return new Promise<void>((r) => srv.close(() => r()));
    },
  };
}

function request(
  method: string,
  path: string,
  body: Body = EMPTY_BODY,
  headers = new HeaderList(),
): HttpRequest {
  return { method, scheme: undefined, authority: "backend", path, version: "HTTP/1.1", headers, body };
}

async function text(body: Body): Promise<string> {
  let s = "";
  for (;;) {
    const c = await body.read();
    if (c === null) return s;
    s += dec.decode(c);
  }
}

const OK = (body: string) => `HTTP/1.1 200 OK\r\nContent-Length: ${body.length}\r\n\r\n${body}`;

function newPool(port: number, extra: Partial<ConstructorParameters<typeof Http1Pool>[0]> = {}) {
  return new Http1Pool({ connect: () => connectTcp("127.0.0.1", port, 1000), ...extra });
}

Deno.test("pool: sequential requests share one connection; surplus idle connections are closed", async () => {
  const be = await rawBackend((s, n) => setTimeout(() => s.write(OK(`n${n}`)), 20));
  const pool = newPool(be.port, { maxIdle: 2 });
  const signal = new AbortController().signal;
  try {
    for (let i = 1; i <= 3; i++) {
      const r = await pool.request(request("GET", "/"), signal);
      assert.equal(await text(r.body), `n${i}`);
    }
    assert.equal(be.connections(), 1);
    const rs = await Promise.all([1, 2, 3, 4].map(() => pool.request(request("GET", "/"), signal)));
    await Promise.all(rs.map((r) => text(r.body)));
    assert.equal(be.connections(), 4, "concurrent requests each get a connection");
    for (let i = 0; i < 50 && pool.openCount > 2; i++) await sleep(10);
    assert.deepEqual([pool.idleCount, pool.openCount], [2, 2], "only maxIdle stay");
  } finally {
    pool.close();
    await be.close();
  }
});

Deno.test("pool: a reused connection closed by the peer before a response: GET is retried once, POST with a body is not", async () => {
  // Answers the first request of each connection, closes on the second without a byte.
  const be = await rawBackend((s, n) => n === 1 ? s.write(OK("first")) : s.destroy());
  const pool = newPool(be.port);
  const signal = new AbortController().signal;
  try {
    assert.equal(await text((await pool.request(request("GET", "/a"), signal)).body), "first");
    const r = await pool.request(request("GET", "/b"), signal);
    assert.equal(await text(r.body), "first", "answered on a fresh connection");
    assert.equal(pool.retries, 1);
    assert.equal(be.connections(), 2);

    const post = request("POST", "/c", bytesBody([enc.encode("payload")]));
    await assert.rejects(
      pool.request(post, signal),
      (e) => e instanceof Http1ClientError && !e.safeToRetry && e.status === 502,
    );
    assert.equal(pool.retries, 1, "a request whose body was sent is not replayed");
  } finally {
    pool.close();
    await be.close();
  }
});

Deno.test("pool: idle connections time out; connections the server closes are dropped", async () => {
  const be = await rawBackend((s, n, head) => {
    if (head.startsWith("GET /close")) {
      s.end(`HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 1\r\n\r\nc`);
    } else s.write(OK(`n${n}`));
  });
  const pool = newPool(be.port, { idleTimeoutMs: 100 });
  const signal = new AbortController().signal;
  try {
    await text((await pool.request(request("GET", "/close"), signal)).body);
    for (let i = 0; i < 50 && pool.openCount > 0; i++) await sleep(10);
    assert.equal(pool.openCount, 0, "Connection: close is not pooled");
    await text((await pool.request(request("GET", "/"), signal)).body);
    assert.equal(pool.idleCount, 1);
    for (let i = 0; i < 100 && be.closes() < 2; i++) await sleep(10);
    assert.deepEqual([pool.idleCount, be.closes()], [0, 2], "idle connection closed after its timeout");
  } finally {
    pool.close();
    await be.close();
  }
});

Deno.test("pool: abort destroys that connection and rejects with the reason", async () => {
  const be = await rawBackend(() => {/* never answers */});
  const pool = newPool(be.port);
  try {
    const ctrl = new AbortController();
    const p = pool.request(request("GET", "/hang"), ctrl.signal);
    while (be.connections() === 0) await sleep(5);
    ctrl.abort(new Error("deadline"));
    await assert.rejects(p, /deadline/);
    assert.ok(
      await within(
        (async () => {
          while (be.closes() === 0) await sleep(5);
        })(),
        2000,
      ),
    );
    assert.equal(pool.openCount, 0);

    // Abort while the body streams: the read rejects and the connection goes.
    const be2 = await rawBackend((s) => s.write("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\npartial"));
    const pool2 = newPool(be2.port);
    const c2 = new AbortController();
    const r = await pool2.request(request("GET", "/"), c2.signal);
    assert.equal(dec.decode((await r.body.read())!), "partial");
    const pending = r.body.read();
    c2.abort(new Error("gone"));
    await assert.rejects(pending, /gone/);
    for (let i = 0; i < 100 && be2.closes() === 0; i++) await sleep(5);
    assert.equal(be2.closes(), 1);
    pool2.close();
    await be2.close();
  } finally {
    pool.close();
    await be.close();
  }
});

Deno.test("client: interim responses skipped, close-delimited bodies, malformed responses are 502", async () => {
  const be = await rawBackend((s, _n, head) => {
    if (head.startsWith("GET /hints")) {
      s.write("HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 100 Continue\r\n\r\n" + OK("final"));
    } else if (head.startsWith("GET /eof")) {
      s.end("HTTP/1.1 200 OK\r\n\r\nuntil the end");
    } else if (head.startsWith("GET /smuggle")) {
      s.write("HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\nabc");
    } else if (head.startsWith("GET /upgrade")) {
      s.write("HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\nConnection: upgrade\r\n\r\n");
    } else s.write("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nBad Name: x\r\n\r\nab");
  });
  const pool = newPool(be.port);
  const signal = new AbortController().signal;
  try {
    const h = await pool.request(request("GET", "/hints"), signal);
    assert.deepEqual([h.status, await text(h.body)], [200, "final"]);
    const e = await pool.request(request("GET", "/eof"), signal);
    assert.equal(e.body.length, undefined);
    assert.equal(await text(e.body), "until the end");
    for (const path of ["/smuggle", "/upgrade", "/badname"]) {
      await assert.rejects(
        pool.request(request("GET", path), signal),
        (err) => err instanceof H1ParseError && err.status === 502,
        path,
      );
    }
  } finally {
    pool.close();
    await be.close();
  }
});

Deno.test("client: a server answering before the request body is sent ends the exchange", async () => {
  const be = await rawBackend((s) => s.write("HTTP/1.1 413 Content Too Large\r\nContent-Length: 0\r\n\r\n"));
  const pool = newPool(be.port);
  try {
    let cancelled: Error | undefined;
    let reads = 0;
    // An endless request body: only cancel stops it.
    const endless: Body = {
      length: undefined,
      trailers: undefined,
      read: async () => {
        reads++;
        await sleep(1);
        return cancelled ? null : new Uint8Array(1024);
      },
      cancel: (e) => cancelled = e ?? new Error("cancelled"),
    };
    const r = await pool.request(request("POST", "/up", endless), new AbortController().signal);
    assert.equal(r.status, 413);
    await text(r.body);
    for (let i = 0; i < 100 && !cancelled; i++) await sleep(5);
    assert.ok(cancelled, "the request body was cancelled");
    assert.ok(reads > 0);
    for (let i = 0; i < 100 && pool.openCount > 0; i++) await sleep(5);
    assert.equal(pool.openCount, 0, "the connection is not reused");
  } finally {
    pool.close();
    await be.close();
  }
});

Deno.test("client: request head is origin-form with host from authority and only end-to-end fields", async () => {
  let seen = "";
  const be = await rawBackend((s, _n, head) => {
    seen = head;
    s.write(OK("k"));
  });
  const pool = newPool(be.port);
  try {
    const headers = new HeaderList([
      "x-a",
      "1",
      "connection",
      "close",
      "transfer-encoding",
      "gzip",
      "te",
      "trailers",
    ]);
    const r = await pool.request(
      { ...request("POST", "/p?q", bytesBody([enc.encode("abc")]), headers), authority: "svc.ns:80" },
      new AbortController().signal,
    );
    await text(r.body);
    assert.equal(
      seen,
      "POST /p?q HTTP/1.1\r\nhost: svc.ns:80\r\nx-a: 1\r\ncontent-length: 3\r\nte: trailers\r\nconnection: te\r\n\r\n",
    );
    await assert.rejects(
      pool.request(
        request("GET", "/", EMPTY_BODY, new HeaderList(["x-bad", "a\r\nInjected: 1"])),
        new AbortController().signal,
      ),
      /CR, LF/,
    );
    await sleep(0);
    assert.deepEqual(
      [pool.idleCount, pool.openCount],
      [1, 1],
      "the unsent-to connection went back to the pool",
    );
  } finally {
    pool.close();
    await be.close();
  }
});

Deno.test("client: aborting a finished exchange's signal leaves the connection and its next exchange alone", async () => {
  // The second request on a connection is answered late, so the first one's abort lands mid-exchange.
  const be = await rawBackend((s, n) => {
    if (n === 2) setTimeout(() => s.write(OK("two")), 100);
    else s.write(OK(`r${n}`));
  });
  const pool = newPool(be.port);
  try {
    const c1 = new AbortController();
    assert.equal(await text((await pool.request(request("GET", "/1"), c1.signal)).body), "r1");
    const c2 = new AbortController();
    const p2 = pool.request(request("GET", "/2"), c2.signal);
    await sleep(20);
    c1.abort(new Error("first request's client gone"));
    assert.equal(await text((await p2).body), "two");
    c2.abort(new Error("second request's client gone"));
    assert.equal(
      await text((await pool.request(request("GET", "/3"), new AbortController().signal)).body),
      "r3",
    );
    assert.equal(be.connections(), 1);
    assert.equal(be.closes(), 0);
  } finally {
    pool.close();
    await be.close();
  }
});
