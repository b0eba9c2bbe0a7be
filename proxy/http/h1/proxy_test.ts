/**
 * Round trips client → serveHttp1 → Http1Pool → backend on real loopback sockets. Backends are
 * node:http and Deno.serve, clients raw sockets, fetch and WebSocket: other implementations on both
 * ends, so the codec is checked against them rather than against itself.
 */
import assert from "node:assert/strict";
import * as http from "node:http";
import type * as net from "node:net";
import { createHash } from "node:crypto";
import { connectTcp } from "../../transport/connect.ts";
import { Http1Pool } from "./pool.ts";
import { RawClient, sleep, startServer, type TestServer, within } from "./testing.ts";

interface Backend {
  port: number;
  connections: () => number;
  server: http.Server;
  close(): Promise<void>;
}

async function startBackend(handler: http.RequestListener): Promise<Backend> {
  const server = http.createServer(handler);
  let connections = 0;
  const socks = new Set<net.Socket>();
  server.on("connection", (s: net.Socket) => {
    connections++;
    socks.add(s);
    s.on("close", () => socks.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    port: (server.address() as net.AddressInfo).port,
    connections: () => connections,
    server,
    close: () => {
      for (const s of socks) s.destroy();
      return new Promise((r) => server.close(() => r()));
    },
  };
}

async function startProxy(
  backendPort: number,
): Promise<{ proxy: TestServer; pool: Http1Pool; close(): Promise<void> }> {
  const pool = new Http1Pool({ connect: () => connectTcp("127.0.0.1", backendPort, 1000) });
  const proxy = await startServer(pool.service);
  return {
    proxy,
    pool,
    close: async () => {
      pool.close();
      await proxy.close();
    },
  };
}

/** Answers with what it received: method, url, body length, chosen headers and trailers. */
const echoJson: http.RequestListener = (req, res) => {
  let n = 0;
  const h = createHash("sha256");
  req.on("data", (d: Uint8Array) => {
    n += d.length;
    h.update(d);
  });
  req.on("end", () => {
    const out = JSON.stringify({
      method: req.method,
      url: req.url,
      host: req.headers.host,
      len: n,
      sha: h.digest("hex"),
      te: req.headers["transfer-encoding"] ?? null,
      hop: req.headers["x-hop"] ?? null,
      trailers: req.trailers,
    });
    if (req.url === "/chunked") {
      res.setHeader("trailer", "x-result");
      res.write(out.slice(0, 10));
      res.write(out.slice(10));
      res.addTrailers({ "x-result": "done" });
      res.end();
    } else res.end(out);
  });
};

Deno.test("proxy: GET and POST with Content-Length arrive intact; pooled connection reused", async () => {
  const backend = await startBackend(echoJson);
  const p = await startProxy(backend.port);
  try {
    for (let i = 0; i < 5; i++) {
      const body = "x".repeat(i * 1000);
      const r = await fetch(`http://127.0.0.1:${p.proxy.port}/p/${i}?q=1`, {
        method: i % 2 ? "POST" : "PUT",
        body,
        headers: { "x-hop": "kept", "connection": "keep-alive" },
      });
      const j = await r.json();
      assert.deepEqual([r.status, j.method, j.url, j.len, j.hop], [
        200,
        i % 2 ? "POST" : "PUT",
        `/p/${i}?q=1`,
        i * 1000,
        "kept",
      ]);
      assert.equal(j.host, `127.0.0.1:${p.proxy.port}`);
    }
    const g = await fetch(`http://127.0.0.1:${p.proxy.port}/get`);
    assert.equal((await g.json()).method, "GET");
    assert.equal(backend.connections(), 1, "every request used the one pooled backend connection");
    assert.equal(p.pool.opened, 1);
  } finally {
    await p.close();
    await backend.close();
  }
});

Deno.test("proxy: chunked request with trailers upstream, chunked response with trailers back", async () => {
  const backend = await startBackend(echoJson);
  const p = await startProxy(backend.port);
  const c = await RawClient.connect(p.proxy.port);
  try {
    c.send(
      "POST /chunked HTTP/1.1\r\nHost: svc\r\nTE: trailers\r\nTransfer-Encoding: chunked\r\nTrailer: x-sum\r\n\r\n" +
        "3\r\nabc\r\n4;ext=1\r\ndefg\r\n0\r\nX-Sum: 7\r\n\r\n",
    );
    const r = await c.response();
    assert.equal(r.status, 200);
    assert.equal(r.headers["transfer-encoding"], "chunked");
    const j = JSON.parse(r.body);
    assert.deepEqual([j.len, j.te, j.trailers], [7, "chunked", { "x-sum": "7" }]);
    assert.deepEqual(r.trailers, { "x-result": "done" });

    // The same exchange from a client that did not ask for trailers: body intact, trailers dropped.
    c.send("POST /chunked HTTP/1.1\r\nHost: svc\r\nContent-Length: 2\r\n\r\nhi");
    const r2 = await c.response();
    assert.deepEqual([JSON.parse(r2.body).len, r2.trailers], [2, {}]);
  } finally {
    c.destroy();
    await p.close();
    await backend.close();
  }
});

Deno.test("proxy: 32 MiB streamed up and back at the same time, intact", async () => {
  // The backend streams each request body back as it arrives.
  const backend = await startBackend((req, res) => {
    res.writeHead(200, { "content-type": "application/octet-stream" });
    req.pipe(res);
  });
  const p = await startProxy(backend.port);
  const total = 32 * 1024 * 1024;
  const piece = new Uint8Array(64 * 1024);
  for (let i = 0; i < piece.length; i++) piece[i] = (i * 31) & 0xff;
  try {
    let sentSha = createHash("sha256");
    let recvSha = createHash("sha256");
    let chunks = 0;
    let uploadDoneAt = Infinity;
    let firstBackAt = Infinity;
    const body = new ReadableStream<Uint8Array>({
      pull(ctrl) {
        if (chunks * piece.length >= total) {
          uploadDoneAt = performance.now();
          return ctrl.close();
        }
        const c = piece.slice();
        c[0] = chunks & 0xff;
        chunks++;
        sentSha = sentSha.update(c);
        ctrl.enqueue(c);
      },
    });
    const r = await fetch(`http://127.0.0.1:${p.proxy.port}/stream`, { method: "POST", body });
    let got = 0;
    for await (const c of r.body!) {
      if (got === 0) firstBackAt = performance.now();
      got += c.length;
      recvSha = recvSha.update(c);
    }
    assert.equal(got, total);
    assert.equal(recvSha.digest("hex"), sentSha.digest("hex"));
    // Streamed, not stored and forwarded: the echo starts coming back while the upload goes on.
    assert.ok(firstBackAt < uploadDoneAt, "response bytes arrived before the request body was all sent");
  } finally {
    await p.close();
    await backend.close();
  }
});

Deno.test("proxy: a backend that stops reading holds the client back (backpressure)", async () => {
  let release!: () => void;
  const released = new Promise<void>((r) => release = r);
  let backendGot = 0;
  const backend = await startBackend((req, res) => {
    req.pause();
    released.then(() => {
      req.on("data", (d: Uint8Array) => backendGot += d.length);
      req.on("end", () => res.end(`got ${backendGot}`));
      req.resume();
    });
  });
  const p = await startProxy(backend.port);
  const total = 256 * 1024 * 1024;
  const c = await RawClient.connect(p.proxy.port);
  let writing = true;
  try {
    c.send(`POST /slow HTTP/1.1\r\nHost: svc\r\nContent-Length: ${total}\r\n\r\n`);
    const piece = new Uint8Array(256 * 1024);
    let accepted = 0;
    const writer = (async () => {
      while (accepted < total && writing) {
        accepted += piece.length;
        if (!c.sock.write(piece)) await new Promise((r) => c.sock.once("drain", r));
      }
    })();
    // Let the pipes fill: kernel buffers on four socket ends plus the proxy's bounded buffers.
    let before = -1;
    for (let i = 0; i < 50 && accepted !== before; i++) {
      before = accepted;
      await sleep(100);
    }
    const stalledAt = accepted;
    console.log(`backpressure: client stalled after ${(stalledAt / 1048576).toFixed(1)} MiB`);
    assert.ok(stalledAt < total / 4, `client stalled after ${stalledAt >> 20} MiB of ${total >> 20} MiB`);
    release();
    await writer;
    const r = await c.response({ ms: 60_000 });
    assert.equal(r.body, `got ${total}`);
  } finally {
    writing = false;
    release();
    c.destroy();
    await p.close();
    await backend.close();
  }
});

Deno.test("proxy: pipelined requests come back in order", async () => {
  const backend = await startBackend((req, res) => {
    const delay = req.url === "/1" ? 40 : 0;
    setTimeout(() => res.end(`r${req.url}`), delay);
  });
  const p = await startProxy(backend.port);
  const c = await RawClient.connect(p.proxy.port);
  try {
    c.send(
      "GET /1 HTTP/1.1\r\nHost: a\r\n\r\nGET /2 HTTP/1.1\r\nHost: a\r\n\r\n" +
        "POST /3 HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\n\r\nzGET /4 HTTP/1.1\r\nHost: a\r\n\r\n",
    );
    const got = [];
    for (let i = 0; i < 4; i++) got.push((await c.response()).body);
    assert.deepEqual(got, ["r/1", "r/2", "r/3", "r/4"]);
  } finally {
    c.destroy();
    await p.close();
    await backend.close();
  }
});

Deno.test("proxy: HEAD, 204 and 304 from the backend have no body, connection stays usable", async () => {
  const backend = await startBackend((req, res) => {
    if (req.url === "/204") {
      res.writeHead(204).end();
    } else if (req.url === "/304") {
      res.writeHead(304, { etag: '"v1"' }).end();
    } else {
      res.setHeader("content-length", "11");
      res.end(req.method === "HEAD" ? undefined : "hello world");
    }
  });
  const p = await startProxy(backend.port);
  const c = await RawClient.connect(p.proxy.port);
  try {
    c.send("HEAD /h HTTP/1.1\r\nHost: a\r\n\r\n");
    const h = await c.response({ head: true });
    assert.deepEqual([h.status, h.headers["content-length"]], [200, "11"]);
    c.send("GET /204 HTTP/1.1\r\nHost: a\r\n\r\n");
    assert.equal((await c.response()).status, 204);
    c.send("GET /304 HTTP/1.1\r\nHost: a\r\n\r\n");
    const n = await c.response();
    assert.deepEqual([n.status, n.headers["etag"]], [304, '"v1"']);
    c.send("GET /g HTTP/1.1\r\nHost: a\r\n\r\n");
    assert.equal((await c.response()).body, "hello world");
    assert.equal(c.pending, "");
    assert.equal(backend.connections(), 1);
  } finally {
    c.destroy();
    await p.close();
    await backend.close();
  }
});

Deno.test("proxy: Expect: 100-continue, body sent only after the proxy says so", async () => {
  const backend = await startBackend(echoJson);
  const p = await startProxy(backend.port);
  const c = await RawClient.connect(p.proxy.port);
  try {
    c.send("POST /up HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 6\r\n\r\n");
    assert.ok(
      await c.waitFor((s) => s.includes("100 Continue")),
      "100 Continue arrives before the body is sent",
    );
    assert.equal((await c.response()).status, 100);
    c.send("abcdef");
    const r = await c.response();
    assert.deepEqual([r.status, JSON.parse(r.body).len], [200, 6]);
  } finally {
    c.destroy();
    await p.close();
    await backend.close();
  }
});

Deno.test("proxy: WebSocket upgrade, messages both ways", async () => {
  const ac = new AbortController();
  let backendClosed!: () => void;
  const backendDone = new Promise<void>((r) => backendClosed = r);
  let ws!: Deno.HttpServer;
  const port = await new Promise<number>((resolve) => {
    ws = Deno.serve({
      hostname: "127.0.0.1",
      port: 0,
      signal: ac.signal,
      onListen: (addr) => resolve(addr.port),
    }, (req) => {
      const { socket, response } = Deno.upgradeWebSocket(req);
      socket.onopen = () => socket.send("hello from backend");
      socket.onmessage = (e) => socket.send(`echo:${e.data}`);
      socket.onclose = () => backendClosed();
      return response;
    });
  });
  const p = await startProxy(port);
  try {
    const client = new WebSocket(`ws://127.0.0.1:${p.proxy.port}/chat`);
    const got: string[] = [];
    const done = new Promise<void>((resolve, reject) => {
      client.onerror = (e) => reject(new Error(`websocket error ${(e as ErrorEvent).message}`));
      client.onmessage = (e) => {
        got.push(String(e.data));
        if (got.length === 1) {
          client.send("one");
          client.send("two".repeat(50_000));
        }
        if (got.length === 3) resolve();
      };
    });
    await done;
    assert.deepEqual(got.map((s) => s.slice(0, 20)), [
      "hello from backend",
      "echo:one",
      "echo:twotwotwotwotwo",
    ]);
    assert.equal(got[2].length, 5 + 150_000);
    const closed = new Promise((r) => client.onclose = r);
    client.close();
    await closed;
    await backendDone;
  } finally {
    await p.close();
    ac.abort();
    await ws.finished;
  }
});

Deno.test("proxy: a client that goes away cancels the upstream request", async () => {
  let upstreamClosed!: () => void;
  const closed = new Promise<void>((r) => upstreamClosed = r);
  let arrived!: () => void;
  const inBackend = new Promise<void>((r) => arrived = r);
  const backend = await startBackend((req, res) => {
    arrived();
    res.on("close", () => upstreamClosed());
    void req;
  });
  const p = await startProxy(backend.port);
  try {
    const c = await RawClient.connect(p.proxy.port);
    c.send("GET /hang HTTP/1.1\r\nHost: a\r\n\r\n");
    await inBackend;
    c.destroy();
    assert.ok(await within(closed, 5000), "the backend saw its request's connection close");
    assert.equal(p.pool.openCount, 0, "the aborted upstream connection is not kept");
  } finally {
    await p.close();
    await backend.close();
  }
});
