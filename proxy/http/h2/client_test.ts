/** Http2Connection against real node:http2 backends on loopback. */
import assert from "node:assert/strict";
import * as http2 from "node:http2";
import * as net from "node:net";
import { type Body, bytesBody, EMPTY_BODY, HeaderList, type HttpRequest } from "../message.ts";
import { Http2Connection } from "./client.ts";
import { Http2ClientError, Http2StreamReset } from "./errors.ts";
import { concat, pattern, startBackend, tcpConnect } from "./testing.ts";

function get(path: string, body: Body = EMPTY_BODY, headers = new HeaderList()): HttpRequest {
  return {
    method: body === EMPTY_BODY ? "GET" : "POST",
    scheme: "http",
    authority: "svc.test",
    path,
    version: "HTTP/2",
    headers,
    body,
  };
}

async function readAll(body: Body): Promise<Uint8Array> {
  const chunks: Uint8Array[] = [];
  for (;;) {
    const c = await body.read();
    if (c === null) return concat(chunks);
    chunks.push(c);
  }
}

Deno.test("Http2Connection: request fields, body and trailers reach the backend; response streams back", async () => {
  let seen:
    | { headers: http2.IncomingHttpHeaders; body: string; trailers?: http2.IncomingHttpHeaders }
    | undefined;
  const be = await startBackend((stream, headers) => {
    const chunks: Uint8Array[] = [];
    let trailers: http2.IncomingHttpHeaders | undefined;
    stream.on("trailers", (t) => (trailers = t));
    stream.on("data", (c: Uint8Array) => chunks.push(c));
    stream.on("end", () => {
      seen = { headers, body: new TextDecoder().decode(concat(chunks)), trailers };
      stream.respond({ ":status": 202, "x-r": "1" }, { waitForTrailers: true });
      stream.once("wantTrailers", () => stream.sendTrailers({ "grpc-status": "0", "x-t": "end" }));
      stream.write("part1,");
      stream.end("part2");
    });
  });
  const conn = new Http2Connection({ connect: tcpConnect(be.port), name: "be" });
  try {
    const res = await conn.request(
      get(
        "/p?x=1",
        bytesBody([new TextEncoder().encode("hello")], new HeaderList(["x-req-t", "rt"])),
        new HeaderList(["x-a", "b", "host", "ignored", "connection", "close"]),
      ),
      AbortSignal.timeout(5000),
    );
    assert.equal(res.status, 202);
    assert.equal(res.headers.get("x-r"), "1");
    assert.equal(new TextDecoder().decode(await readAll(res.body)), "part1,part2");
    assert.equal(res.body.trailers?.get("grpc-status"), "0");
    assert.equal(res.body.trailers?.get("x-t"), "end");
    assert.ok(seen);
    assert.equal(seen.headers[":method"], "POST");
    assert.equal(seen.headers[":authority"], "svc.test");
    assert.equal(seen.headers[":path"], "/p?x=1");
    assert.equal(seen.headers["x-a"], "b");
    assert.equal(seen.headers["host"], undefined, "host is carried as :authority only");
    assert.equal(seen.headers["connection"], undefined);
    assert.equal(seen.body, "hello");
    assert.equal(seen.trailers?.["x-req-t"], "rt", "request trailers sent");
  } finally {
    await conn.close(0);
    await be.close();
  }
});

Deno.test("Http2Connection: connect refused → Http2ClientError connect_failed, safe to retry", async () => {
  const srv = net.createServer();
  await new Promise<void>((r) => srv.listen(0, "127.0.0.1", () => r()));
  const port = (srv.address() as net.AddressInfo).port;
  await new Promise<void>((r) => srv.close(() => r()));
  const conn = new Http2Connection({ connect: tcpConnect(port), name: `127.0.0.1:${port}` });
  try {
    await assert.rejects(conn.request(get("/"), AbortSignal.timeout(5000)), (e: unknown) => {
      assert.ok(e instanceof Http2ClientError);
      assert.equal(e.reason, "connect_failed");
      assert.equal(e.safeToRetry, true);
      assert.equal(e.status, 502);
      assert.match(e.message, /connect failed/);
      return true;
    });
  } finally {
    await conn.close(0);
  }
});

Deno.test("Http2Connection: a connect that hangs is cut at connectTimeoutMs", async () => {
  const conn = new Http2Connection({
    name: "blackhole",
    connectTimeoutMs: 100,
    connect: (signal) =>
      new Promise((_, reject) => signal.addEventListener("abort", () => reject(signal.reason))),
  });
  const t0 = Date.now();
  await assert.rejects(conn.request(get("/"), AbortSignal.timeout(5000)), /timed out after 100ms/);
  assert.ok(Date.now() - t0 < 2000);
  await conn.close(0);
});

Deno.test("Http2Connection: abort before the response → RST_STREAM CANCEL at the backend", async () => {
  const rst = Promise.withResolvers<number>();
  const be = await startBackend((stream) => {
    stream.resume();
    stream.once("close", () => rst.resolve(stream.rstCode ?? -1));
  });
  const conn = new Http2Connection({ connect: tcpConnect(be.port), name: "be" });
  try {
    const ac = new AbortController();
    const p = conn.request(get("/wait"), ac.signal);
    await new Promise((r) => setTimeout(r, 50));
    ac.abort(new Error("caller gave up"));
    await assert.rejects(p, /caller gave up/);
    assert.equal(await rst.promise, http2.constants.NGHTTP2_CANCEL);
  } finally {
    await conn.close(0);
    await be.close();
  }
});

Deno.test("Http2Connection: a slow response reader holds the backend back (flow control)", async () => {
  const big = pattern(8 << 20, 5);
  let handed = 0;
  const be = await startBackend((stream) => {
    stream.resume();
    stream.respond({ ":status": 200 });
    let o = 0;
    const pump = () => {
      while (o < big.length) {
        const c = big.subarray(o, o + 65536);
        o += c.length;
        handed += c.length;
        if (!stream.write(c)) {
          stream.once("drain", pump);
          return;
        }
      }
      stream.end();
    };
    pump();
  });
  const conn = new Http2Connection({ connect: tcpConnect(be.port), name: "be" });
  try {
    const res = await conn.request(get("/big"), AbortSignal.timeout(10_000));
    await new Promise((r) => setTimeout(r, 300));
    assert.ok(handed <= 512 * 1024, `backend could write ${handed} bytes while nobody read`);
    const got = await readAll(res.body);
    assert.equal(got.length, big.length);
    assert.ok(got.every((b, i) => b === big[i]));
  } finally {
    await conn.close(0);
    await be.close();
  }
});

Deno.test("Http2Connection: REFUSED_STREAM is safe to retry; a reset mid-body fails the body read", async () => {
  const be = await startBackend((stream, headers) => {
    stream.resume();
    if (headers[":path"] === "/refuse") {
      stream.close(http2.constants.NGHTTP2_REFUSED_STREAM);
      return;
    }
    stream.respond({ ":status": 200 });
    stream.write("some");
    // destroy(error) is what makes Deno's node:http2 send RST_STREAM INTERNAL_ERROR (see resetStream in testing.ts).
    setTimeout(() => stream.destroy(new Error("backend failed")), 20);
  });
  const conn = new Http2Connection({ connect: tcpConnect(be.port), name: "be" });
  try {
    await assert.rejects(conn.request(get("/refuse"), AbortSignal.timeout(5000)), (e: unknown) => {
      assert.ok(e instanceof Http2ClientError);
      assert.equal(e.reason, "refused");
      assert.equal(e.safeToRetry, true);
      return true;
    });
    const res = await conn.request(get("/reset"), AbortSignal.timeout(5000));
    assert.equal(res.status, 200);
    await assert.rejects(readAll(res.body), (e: unknown) => {
      assert.ok(e instanceof Http2StreamReset);
      assert.equal(e.code, http2.constants.NGHTTP2_INTERNAL_ERROR);
      return true;
    });
  } finally {
    await conn.close(0);
    await be.close();
  }
});

Deno.test("Http2Connection: cancelling a response body resets the backend stream", async () => {
  const rst = Promise.withResolvers<number>();
  const be = await startBackend((stream) => {
    stream.resume();
    stream.once("close", () => rst.resolve(stream.rstCode ?? -1));
    stream.respond({ ":status": 200 });
    stream.write("first");
  });
  const conn = new Http2Connection({ connect: tcpConnect(be.port), name: "be" });
  try {
    const res = await conn.request(get("/"), AbortSignal.timeout(5000));
    assert.equal(new TextDecoder().decode((await res.body.read())!), "first");
    res.body.cancel();
    assert.equal(await rst.promise, http2.constants.NGHTTP2_CANCEL);
  } finally {
    await conn.close(0);
    await be.close();
  }
});

Deno.test("Http2Connection: many requests share one session; close() then refuses new ones", async () => {
  let sessions = 0;
  const be = await startBackend((stream, headers) => {
    stream.resume();
    stream.respond({ ":status": 200 });
    stream.end(String(headers[":path"]));
  });
  const conn = new Http2Connection({ connect: tcpConnect(be.port), name: "be" });
  try {
    const rs = await Promise.all(
      Array.from({ length: 100 }, (_, i) => conn.request(get(`/${i}`), AbortSignal.timeout(5000))),
    );
    for (let i = 0; i < rs.length; i++) {
      assert.equal(new TextDecoder().decode(await readAll(rs[i].body)), `/${i}`);
    }
    sessions = be.sessions.size;
    assert.equal(sessions, 1, "one connection for 100 concurrent requests");
    assert.equal(conn.activeStreams, 0);
    await conn.close(100);
    await assert.rejects(conn.request(get("/late"), AbortSignal.timeout(5000)), (e: unknown) => {
      assert.ok(e instanceof Http2ClientError);
      assert.equal(e.reason, "closed");
      return true;
    });
  } finally {
    await conn.close(0);
    await be.close();
  }
});

Deno.test("Http2Connection: keepalive closes a connection whose peer went silent and reports it", async () => {
  // The backend holds the stream open; a relay in between stops forwarding (a peer gone without a FIN).
  const backend = await startBackend(() => {});
  const socks = new Set<net.Socket>();
  let silent = false;
  const relay = net.createServer((a) => {
    const b = net.connect({ host: "127.0.0.1", port: backend.port });
    for (const s of [a, b]) {
      socks.add(s);
      s.on("error", () => {});
    }
    a.on("data", (d) => silent || b.write(d));
    b.on("data", (d) => silent || a.write(d));
  });
  await new Promise<void>((r) => relay.listen(0, "127.0.0.1", () => r()));
  let timeouts = 0;
  const conn = new Http2Connection({
    connect: tcpConnect((relay.address() as net.AddressInfo).port),
    name: "silent",
    keepAlive: { intervalMs: 100, timeoutMs: 200 },
    onKeepAliveTimeout: () => timeouts++,
  });
  try {
    const pending = conn.request(get("/hang"), AbortSignal.timeout(5000));
    pending.catch(() => {});
    await new Promise((r) => setTimeout(r, 150));
    silent = true;
    const t0 = performance.now();
    await assert.rejects(pending);
    assert.ok(performance.now() - t0 < 2000, "the stream hung past the keepalive timeout");
    assert.equal(timeouts, 1);
  } finally {
    await conn.close(0).catch(() => {});
    relay.close();
    for (const s of socks) s.destroy();
    await backend.close();
  }
});
