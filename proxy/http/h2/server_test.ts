/** serveHttp2 on real loopback sockets: request translation, errors, limits, resets, shutdown. */
import assert from "node:assert/strict";
import * as http2 from "node:http2";
import type * as net from "node:net";
import {
  type Body,
  bytesBody,
  grpcErrorResponse,
  HeaderList,
  HttpError,
  type HttpRequest,
  type HttpService,
  textResponse,
} from "../message.ts";
import { peek } from "../../transport/peek.ts";
import { Http2StreamReset } from "./errors.ts";
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
  pattern,
  RawH2Client,
  startH2Proxy,
} from "./testing.ts";

async function readAll(req: HttpRequest): Promise<Uint8Array> {
  const chunks: Uint8Array[] = [];
  for (;;) {
    const c = await req.body.read();
    if (c === null) return concat(chunks);
    chunks.push(c);
  }
}

async function withServer(
  service: HttpService,
  fn: (port: number, p: Awaited<ReturnType<typeof startH2Proxy>>) => Promise<void>,
  opts: Parameters<typeof startH2Proxy>[1] = {},
  prepare?: (s: net.Socket) => Promise<net.Socket>,
): Promise<void> {
  const p = await startH2Proxy(service, opts, prepare);
  try {
    await fn(p.port, p);
  } finally {
    await p.close();
  }
}

const GOOD: [string, string][] = [[":method", "GET"], [":scheme", "http"], [":path", "/"], [
  ":authority",
  "x",
]];

Deno.test("serveHttp2: pseudo-headers become request fields; body, trailers and response come back", async () => {
  let seen: HttpRequest | undefined;
  let seenBody: Uint8Array | undefined;
  await withServer(async (req) => {
    seen = req;
    seenBody = await readAll(req);
    return {
      status: 201,
      headers: new HeaderList(["x-reply", "1", "x-reply", "2", "connection", "close"]),
      body: bytesBody([new TextEncoder().encode("done")], new HeaderList(["x-trailer", "t"])),
    };
  }, async (port) => {
    const c = await connectClient(port);
    try {
      const r = await call(c, { ":method": "PUT", ":path": "/a/b?q=1", "x-in": "v", "content-length": "3" }, [
        new TextEncoder().encode("abc"),
      ], { "x-req-trailer": "rt" });
      assert.equal(r.status, 201);
      assert.equal(r.headers["x-reply"], "1, 2", "repeated response fields both arrive");
      assert.equal(r.headers["connection"], undefined, "connection-specific fields are not sent");
      assert.equal(new TextDecoder().decode(r.body), "done");
      assert.equal(r.trailers?.["x-trailer"], "t");
    } finally {
      await closeSession(c);
    }
  });
  assert.ok(seen);
  assert.equal(seen.method, "PUT");
  assert.equal(seen.scheme, "http");
  assert.match(seen.authority, /^127\.0\.0\.1:\d+$/);
  assert.equal(seen.path, "/a/b?q=1");
  assert.equal(seen.version, "HTTP/2");
  assert.equal(seen.headers.get("x-in"), "v");
  assert.equal(seen.headers.raw.some((n) => n.startsWith(":")), false, "no pseudo-headers in the list");
  assert.equal(seen.body.length, 3);
  assert.equal(new TextDecoder().decode(seenBody), "abc");
  assert.equal(seen.body.trailers?.get("x-req-trailer"), "rt");
});

Deno.test("serveHttp2: serves a socket whose first bytes were peeked and unshifted", async () => {
  let peeked = 0;
  await withServer(
    () => Promise.resolve(textResponse(200, "after peek")),
    async (port) => {
      const c = await connectClient(port);
      try {
        const r = await call(c, { ":path": "/" });
        assert.equal(new TextDecoder().decode(r.body), "after peek");
      } finally {
        await closeSession(c);
      }
    },
    {},
    async (sock) => {
      const p = await peek(sock, (b) => b.length >= 24, 1024, 2000);
      peeked = p.bytes.length;
      return sock;
    },
  );
  assert.ok(peeked >= 24, "the preface was read before serveHttp2 took the socket");
});

Deno.test("serveHttp2: malformed requests get RST_STREAM PROTOCOL_ERROR, never reach the service, others unaffected", async () => {
  let calls = 0;
  const cases: [string, [string, string][]][] = [
    ["connection field", [...GOOD, ["connection", "keep-alive"]]],
    ["transfer-encoding", [...GOOD, ["transfer-encoding", "chunked"]]],
    ["te other than trailers", [...GOOD, ["te", "gzip"]]],
    ["upper-case name", [...GOOD, ["X-Upper", "1"]]],
    ["missing :path", GOOD.filter(([n]) => n !== ":path")],
    ["pseudo-header after a field", [[":method", "GET"], ["x-a", "1"], [":scheme", "http"], [":path", "/"]]],
    ["repeated :method", [...GOOD, [":method", "POST"]]],
    ["unknown pseudo-header", [...GOOD, [":bogus", "1"]]],
  ];
  await withServer(() => {
    calls++;
    return Promise.resolve(textResponse(200, "ok"));
  }, async (port) => {
    const good = await connectClient(port);
    try {
      for (const [name, fields] of cases) {
        const raw = await RawH2Client.open(port);
        raw.write(frame(FRAME.HEADERS, FLAG.END_HEADERS | FLAG.END_STREAM, 1, hpackLiteral(fields)));
        const f = await raw.waitFor((f) => f.type === FRAME.GOAWAY || f.type === FRAME.RST_STREAM);
        assert.ok(f, `${name}: no GOAWAY/RST_STREAM`);
        assert.equal(
          f.type,
          FRAME.RST_STREAM,
          `${name}: a stream error, not a connection error (RFC 9113 §8.1.1)`,
        );
        assert.equal(f.streamId, 1);
        assert.equal(errorCode(f), 1, `${name}: PROTOCOL_ERROR`);
        // The same connection goes on serving well-formed streams.
        raw.write(frame(FRAME.HEADERS, FLAG.END_HEADERS | FLAG.END_STREAM, 3, hpackLiteral(GOOD)));
        const ok = await raw.waitFor((f) => f.type === FRAME.HEADERS && f.streamId === 3);
        raw.destroy();
        assert.ok(ok, `${name}: no response on the same connection afterwards`);
        // A well-formed client on another connection keeps being served.
        assert.equal(
          (await call(good, { ":path": "/" })).status,
          200,
          `${name}: other connection still served`,
        );
      }
    } finally {
      await closeSession(good);
    }
  });
  // Per case: the well-formed stream 3 on the same connection and the call on the other one.
  assert.equal(calls, cases.length * 2, "only the well-formed requests reached the service");
});

Deno.test("serveHttp2: header list over the limit → 431; too many fields → RST ENHANCE_YOUR_CALM", async () => {
  let calls = 0;
  await withServer(() => {
    calls++;
    return Promise.resolve(textResponse(200, "ok"));
  }, async (port) => {
    const c = await connectClient(port);
    try {
      const r = await call(c, { ":path": "/", "x-big": "a".repeat(3000) });
      assert.equal(r.status, 431);
      assert.match(new TextDecoder().decode(r.body), /header list is \d+ bytes, limit 2048/);
      assert.equal(
        (await call(c, { ":path": "/", "x-small": "a" })).status,
        200,
        "same connection still usable",
      );
    } finally {
      await closeSession(c);
    }
    const raw = await RawH2Client.open(port);
    const many: [string, string][] = [...GOOD];
    for (let i = 0; i < 30; i++) many.push([`x-f${i}`, "v"]);
    raw.write(frame(FRAME.HEADERS, FLAG.END_HEADERS | FLAG.END_STREAM, 1, hpackLiteral(many)));
    const f = await raw.waitFor((f) => f.type === FRAME.RST_STREAM && f.streamId === 1);
    raw.destroy();
    assert.ok(f, "no RST_STREAM for 34 fields with a limit of 20");
    assert.equal(errorCode(f), 11);
  }, { maxHeaderListSize: 2048, maxHeaderCount: 20 });
  assert.equal(calls, 1);
});

Deno.test("serveHttp2: CONNECT is refused with 405", async () => {
  let calls = 0;
  await withServer(() => {
    calls++;
    return Promise.resolve(textResponse(200, "ok"));
  }, async (port) => {
    const c = await connectClient(port);
    try {
      const r = await call(c, { ":method": "CONNECT", ":authority": "example.com:443" });
      assert.equal(r.status, 405);
    } finally {
      await closeSession(c);
    }
  });
  assert.equal(calls, 0);
});

Deno.test("serveHttp2: HttpError → its status; for gRPC a trailers-only grpc-status; other errors → 502", async () => {
  await withServer((req) => {
    if (req.path === "/plain") return Promise.reject(new Error("boom"));
    if (req.path === "/nogrpc") return Promise.reject(new HttpError(503, "no endpoints", "no_endpoints"));
    return Promise.reject(new HttpError(504, "request timed out", "timeout", 4));
  }, async (port) => {
    const c = await connectClient(port);
    try {
      const http = await call(c, { ":path": "/nogrpc" });
      assert.equal(http.status, 503);
      assert.equal(new TextDecoder().decode(http.body), "no endpoints");

      const grpc = await call(
        c,
        { ":method": "POST", ":path": "/svc/M", "content-type": "application/grpc" },
        [
          new Uint8Array(5),
        ],
      );
      assert.equal(grpc.status, 200);
      assert.equal(grpc.endOnHeaders, true, "trailers-only");
      assert.equal(grpc.headers["grpc-status"], "4");
      assert.equal(decodeURIComponent(String(grpc.headers["grpc-message"])), "request timed out");

      const plain = await call(c, { ":path": "/plain" });
      assert.equal(plain.status, 502);
    } finally {
      await closeSession(c);
    }
  });
});

Deno.test("serveHttp2: gRPC error response from the service is sent trailers-only", async () => {
  await withServer(() => Promise.resolve(grpcErrorResponse(7, "denied by policy")), async (port) => {
    const c = await connectClient(port);
    try {
      const r = await call(c, { ":method": "POST", ":path": "/svc/M", "content-type": "application/grpc" }, [
        new Uint8Array(5),
      ]);
      assert.equal(r.endOnHeaders, true);
      assert.equal(r.headers["grpc-status"], "7");
      assert.equal(decodeURIComponent(String(r.headers["grpc-message"])), "denied by policy");
    } finally {
      await closeSession(c);
    }
  });
});

Deno.test("serveHttp2: client RST_STREAM aborts the service's signal", async () => {
  let reason: unknown;
  const aborted = Promise.withResolvers<void>();
  await withServer((_req, signal) =>
    new Promise((_resolve, reject) => {
      signal.addEventListener("abort", () => {
        reason = signal.reason;
        aborted.resolve();
        reject(signal.reason);
      });
    }), async (port) => {
    const c = await connectClient(port);
    try {
      const req = c.request({ ":path": "/wait" }, { endStream: true });
      req.on("error", () => {});
      await new Promise((r) => setTimeout(r, 50));
      req.close(http2.constants.NGHTTP2_CANCEL);
      await Promise.race([
        aborted.promise,
        new Promise((_, rej) => setTimeout(() => rej(new Error("no abort")), 3000)),
      ]);
      assert.ok(reason instanceof Http2StreamReset);
      assert.equal(reason.code, http2.constants.NGHTTP2_CANCEL);
    } finally {
      await closeSession(c);
    }
  });
});

Deno.test("serveHttp2: a request body nobody reads holds the client back (flow control), then flows", async () => {
  const startReading = Promise.withResolvers<void>();
  await withServer(async (req) => {
    await startReading.promise;
    const b = await readAll(req);
    return textResponse(200, `${b.length} ${b.every((x, i) => x === BIG[i])}`);
  }, async (port) => {
    const c = await connectClient(port);
    try {
      const req = c.request({ ":method": "POST", ":path": "/upload" });
      let reply = "";
      req.on("data", (d: Uint8Array) => (reply += new TextDecoder().decode(d)));
      const closed = new Promise((r) => req.on("close", r));
      let accepted = 0;
      let o = 0;
      const pump = () => {
        while (o < BIG.length) {
          const chunk = BIG.subarray(o, o + 65536);
          o += chunk.length;
          accepted += chunk.length;
          if (!req.write(chunk)) {
            req.once("drain", pump);
            return;
          }
        }
        req.end();
      };
      pump();
      await new Promise((r) => setTimeout(r, 300));
      // The stream window (64 KiB) + our queue + the client's own write buffer; nowhere near 16 MiB.
      assert.ok(accepted <= 512 * 1024, `client could hand over ${accepted} bytes while nobody read`);
      startReading.resolve();
      await closed;
      assert.equal(reply, `${BIG.length} true`);
    } finally {
      await closeSession(c);
    }
  });
});
const BIG = pattern(16 << 20, 3);

Deno.test("serveHttp2: SETTINGS_MAX_CONCURRENT_STREAMS enforced (excess stream → REFUSED_STREAM)", async () => {
  const release = Promise.withResolvers<void>();
  let calls = 0;
  await withServer(async () => {
    calls++;
    await release.promise;
    return textResponse(200, "ok");
  }, async (port) => {
    const raw = await RawH2Client.open(port);
    await raw.waitFor((f) => f.type === FRAME.SETTINGS && (f.flags & FLAG.ACK) === 0);
    await new Promise((r) => setTimeout(r, 20)); // our SETTINGS ACK lands first
    for (let i = 0; i < 4; i++) {
      raw.write(frame(FRAME.HEADERS, FLAG.END_HEADERS | FLAG.END_STREAM, 1 + 2 * i, hpackLiteral(GOOD)));
    }
    // A fourth stream over a limit of 3 is refused as a stream error (RFC 9113 §5.1.2), which
    // tells the client it was not processed and may be retried.
    const r = await raw.waitFor((f) => f.type === FRAME.RST_STREAM || f.type === FRAME.GOAWAY);
    assert.ok(r, "no RST_STREAM");
    assert.equal(r.type, FRAME.RST_STREAM);
    assert.equal(r.streamId, 7);
    assert.equal(errorCode(r), 7, "REFUSED_STREAM");
    release.resolve();
    for (const id of [1, 3, 5]) {
      assert.ok(
        await raw.waitFor((f) => f.type === FRAME.HEADERS && f.streamId === id),
        `stream ${id} answered`,
      );
    }
    raw.destroy();
  }, { maxConcurrentStreams: 3 });
  assert.equal(calls, 3);
});

Deno.test("serveHttp2: close(grace) refuses new streams without GOAWAY, lets an open stream finish, then closes", async () => {
  const p = await startH2Proxy(async (req) => {
    if (req.path === "/slow") await new Promise((r) => setTimeout(r, 150));
    return textResponse(200, req.path);
  });
  try {
    const c = await connectClient(p.port);
    let goaways = 0;
    c.on("goaway", () => goaways++);
    const slow = call(c, { ":path": "/slow" });
    await new Promise((r) => setTimeout(r, 30));
    const [conn] = [...p.conns];
    const t0 = Date.now();
    const closing = conn.close(2000);
    const late = c.request({ ":path": "/late" }, { endStream: true });
    const refused = new Promise<number>((r) => late.on("close", () => r(late.rstCode)));
    late.on("error", () => {});
    assert.equal(await refused, http2.constants.NGHTTP2_REFUSED_STREAM, "a stream opened during the drain");
    const r = await slow;
    assert.equal(new TextDecoder().decode(r.body), "/slow", "the open stream completed");
    await closing;
    assert.ok(Date.now() - t0 < 1500, "closed when the last stream finished, not at the grace deadline");
    assert.equal(conn.activeStreams, 0);
    assert.equal(goaways, 0, "no GOAWAY (it aborts Deno node:http2 peers with open streams)");
    c.destroy();
  } finally {
    await p.close();
  }
});

Deno.test("serveHttp2: close(grace) cuts a stream that outlives the grace period", async () => {
  const p = await startH2Proxy(() => new Promise(() => {}));
  try {
    const c = await connectClient(p.port);
    const req = c.request({ ":path": "/forever" }, { endStream: true });
    req.on("error", () => {});
    const closed = new Promise((r) => req.on("close", r));
    await new Promise((r) => setTimeout(r, 30));
    const [conn] = [...p.conns];
    const t0 = Date.now();
    await conn.close(100);
    await closed;
    const took = Date.now() - t0;
    assert.ok(took >= 90, `closed after ${took}ms, before the grace period`);
    c.destroy();
  } finally {
    await p.close();
  }
});

Deno.test("serveHttp2: the drain signal closes like close(grace): new streams refused, the open one finishes; a connection accepted after the drain closes at once", async () => {
  const drain = new AbortController();
  const p = await startH2Proxy(async (req) => {
    if (req.path === "/slow") await new Promise((r) => setTimeout(r, 150));
    return textResponse(200, req.path);
  }, { drain: drain.signal });
  try {
    const c = await connectClient(p.port);
    const slow = call(c, { ":path": "/slow" });
    await new Promise((r) => setTimeout(r, 30));
    const [conn] = [...p.conns];
    drain.abort();
    const late = c.request({ ":path": "/late" }, { endStream: true });
    const refused = new Promise<number>((r) => late.on("close", () => r(late.rstCode)));
    late.on("error", () => {});
    assert.equal(await refused, http2.constants.NGHTTP2_REFUSED_STREAM, "a stream opened during the drain");
    assert.equal(new TextDecoder().decode((await slow).body), "/slow", "the open stream completed");
    await conn.closed;
    c.destroy();

    const after = await connectClient(p.port);
    const closed = new Promise<void>((r) => after.on("close", () => r()));
    after.on("error", () => {});
    await closed;
    assert.equal(p.conns.size, 0, "the connection accepted after the drain was closed");
  } finally {
    await p.close();
  }
});

Deno.test("serveHttp2: sized response bodies that are not one ready chunk still arrive whole (two chunks, one that waits, one too long)", async () => {
  const enc = (s: string) => new TextEncoder().encode(s);
  const sized = (body: Body, length: number): Body => ({ ...body, length });
  await withServer((req) => {
    const h = new HeaderList();
    if (req.path === "/two") {
      return Promise.resolve({ status: 200, headers: h, body: sized(bytesBody([enc("ab"), enc("cd")]), 4) });
    }
    if (req.path === "/later") {
      // Nothing ready at first: readNow says "wait", read() delivers.
      let done = false;
      const later: Body = {
        length: 5,
        readNow: () => (done ? null : undefined),
        read: () => new Promise((r) => setTimeout(() => r(done ? null : (done = true, enc("later"))), 10)),
        trailers: undefined,
        cancel: () => {},
      };
      return Promise.resolve({ status: 200, headers: h, body: later });
    }
    // Declares 2 bytes, has 4: never passed on.
    return Promise.resolve({ status: 200, headers: h, body: sized(bytesBody([enc("ab"), enc("cd")]), 2) });
  }, async (port) => {
    const c = await connectClient(port);
    try {
      const two = await call(c, { ":method": "GET", ":path": "/two" });
      assert.equal(new TextDecoder().decode(two.body), "abcd");
      assert.equal(two.rstCode, undefined);
      const later = await call(c, { ":method": "GET", ":path": "/later" });
      assert.equal(new TextDecoder().decode(later.body), "later");
      const long = await call(c, { ":method": "GET", ":path": "/long" });
      assert.equal(long.rstCode, 2, "a body longer than declared is reset (INTERNAL_ERROR)");
      assert.notEqual(new TextDecoder().decode(long.body), "abcd");
    } finally {
      await closeSession(c);
    }
  });
});
