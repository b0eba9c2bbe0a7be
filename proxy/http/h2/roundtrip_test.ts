/**
 * HTTP/2 through one proxy hop on real loopback sockets: node:http2 client → serveHttp2 →
 * Http2Connection → node:http2 backend. Each test names what must survive the hop.
 */
import assert from "node:assert/strict";
import * as http2 from "node:http2";
import {
  call,
  closeSession,
  concat,
  connectClient,
  pattern,
  resetStream,
  startBackend,
  startHop,
} from "./testing.ts";

const { NGHTTP2_CANCEL } = http2.constants;

interface BackendState {
  rstCodes: Map<string, number>;
  maxActive: number;
  active: number;
  sessionsSeen: number;
}

function backendHandler(state: BackendState) {
  return (stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders) => {
    const path = String(headers[":path"]);
    const tag = String(headers["x-tag"] ?? path);
    stream.once("close", () => state.rstCodes.set(tag, stream.rstCode ?? -1));
    switch (path) {
      case "/unary": {
        const chunks: Uint8Array[] = [];
        let reqTrailers: http2.IncomingHttpHeaders | undefined;
        stream.on("trailers", (t) => (reqTrailers = t));
        stream.on("data", (c: Uint8Array) => chunks.push(c));
        stream.on("end", () => {
          stream.respond({
            ":status": 200,
            "content-type": "application/grpc",
            "x-request-te": String(headers["te"]),
            "x-request-host": String(headers["host"]),
            "x-request-authority": String(headers[":authority"]),
            "x-request-cookie": String(headers["cookie"]),
          }, { waitForTrailers: true });
          stream.once("wantTrailers", () =>
            stream.sendTrailers({
              "grpc-status": "0",
              "grpc-message": "ok%20done",
              "x-request-trailer": String(reqTrailers?.["x-req-trailer"]),
            }));
          stream.end(concat(chunks));
        });
        return;
      }
      case "/echo": {
        stream.respond({ ":status": 200 }, { waitForTrailers: true });
        stream.once("wantTrailers", () => stream.sendTrailers({ "grpc-status": "0" }));
        stream.pipe(stream);
        return;
      }
      case "/trailers-only": {
        stream.respond(
          {
            ":status": 200,
            "content-type": "application/grpc",
            "grpc-status": "5",
            "grpc-message": "not%20found",
          },
          { endStream: true },
        );
        stream.resume();
        return;
      }
      case "/server-stream": {
        stream.resume();
        stream.respond({ ":status": 200 }, { waitForTrailers: true });
        stream.once("wantTrailers", () => stream.sendTrailers({ "grpc-status": "0" }));
        let i = 0;
        const next = () => {
          if (stream.destroyed) return;
          if (i === 5) {
            stream.end();
            return;
          }
          stream.write(`msg${i++};`);
          setTimeout(next, 10);
        };
        next();
        return;
      }
      case "/client-stream": {
        let chunks = 0;
        let bytes = 0;
        stream.on("data", (c: Uint8Array) => {
          chunks++;
          bytes += c.length;
        });
        stream.on("end", () => {
          stream.respond({ ":status": 200 }, { waitForTrailers: true });
          stream.once("wantTrailers", () => stream.sendTrailers({ "grpc-status": "0" }));
          stream.end(`${chunks} ${bytes}`);
        });
        return;
      }
      case "/bidi": {
        // Answers each message as it arrives: only a hop that streams both ways lets this finish.
        stream.respond({ ":status": 200 }, { waitForTrailers: true });
        stream.once("wantTrailers", () => stream.sendTrailers({ "grpc-status": "0" }));
        stream.on("data", (c: Uint8Array) => stream.write(`re:${new TextDecoder().decode(c)}`));
        stream.on("end", () => stream.end());
        return;
      }
      case "/fail-mid-body": {
        stream.resume();
        stream.respond({ ":status": 200 });
        stream.write("partial");
        // destroy(error) is what makes Deno's node:http2 send RST_STREAM INTERNAL_ERROR.
        setTimeout(() => stream.destroy(new Error("backend failed")), 20);
        return;
      }
      case "/hang": {
        stream.resume();
        stream.respond({ ":status": 200 });
        stream.write("partial");
        return;
      }
      case "/held": {
        stream.resume();
        state.active++;
        state.maxActive = Math.max(state.maxActive, state.active);
        setTimeout(() => {
          state.active--;
          if (stream.destroyed) return;
          stream.respond({ ":status": 200 });
          stream.end(String(headers["x-n"]));
        }, Number(headers["x-hold-ms"] ?? 5));
        return;
      }
      default:
        stream.respond({ ":status": 404 }, { endStream: true });
    }
  };
}

async function setup(settings: http2.Settings = {}) {
  const state: BackendState = { rstCodes: new Map(), maxActive: 0, active: 0, sessionsSeen: 0 };
  const backend = await startBackend(backendHandler(state), settings);
  const hop = await startHop(backend.port);
  const client = await connectClient(hop.port);
  return {
    state,
    backend,
    hop,
    client,
    async close() {
      await closeSession(client);
      await hop.close();
      await backend.close();
    },
  };
}

Deno.test("h2 hop: unary request and response with headers, body and trailers intact", async () => {
  const t = await setup();
  try {
    const body = pattern(1000);
    const r = await call(
      t.client,
      {
        ":method": "POST",
        ":path": "/unary",
        "content-type": "application/grpc",
        "cookie": ["a=1", "b=2"],
      },
      [body],
      { "x-req-trailer": "sent-by-client" },
    );
    assert.equal(r.status, 200);
    assert.equal(r.headers["content-type"], "application/grpc");
    assert.deepEqual(r.body, body);
    assert.equal(r.trailers?.["grpc-status"], "0");
    assert.equal(r.trailers?.["grpc-message"], "ok%20done");
    assert.equal(r.trailers?.["x-request-trailer"], "sent-by-client", "request trailers reach the backend");
    // gRPC requests carry te: trailers to the backend; host never appears beside :authority.
    assert.equal(r.headers["x-request-te"], "trailers");
    assert.equal(r.headers["x-request-host"], "undefined");
    assert.equal(r.headers["x-request-authority"], `127.0.0.1:${t.hop.port}`);
    assert.equal(r.headers["x-request-cookie"], "a=1; b=2");
  } finally {
    await t.close();
  }
});

Deno.test("h2 hop: 16 MiB both ways under flow control, byte-exact", async () => {
  const t = await setup();
  try {
    const big = pattern(16 << 20, 7);
    const chunks: Uint8Array[] = [];
    for (let o = 0; o < big.length; o += 1 << 20) chunks.push(big.subarray(o, o + (1 << 20)));
    const r = await call(t.client, { ":method": "POST", ":path": "/echo" }, chunks);
    assert.equal(r.status, 200);
    assert.equal(r.body.length, big.length);
    assert.ok(r.body.every((b, i) => b === big[i]), "echoed bytes equal the sent ones");
    assert.equal(r.trailers?.["grpc-status"], "0");
  } finally {
    await t.close();
  }
});

Deno.test("h2 hop: gRPC trailers-only error keeps END_STREAM on the headers", async () => {
  const t = await setup();
  try {
    const r = await call(t.client, {
      ":method": "POST",
      ":path": "/trailers-only",
      "content-type": "application/grpc",
    }, [
      new Uint8Array(5),
    ]);
    assert.equal(r.status, 200);
    assert.equal(r.endOnHeaders, true, "trailers-only response must end on its HEADERS frame");
    assert.equal(r.headers["grpc-status"], "5");
    assert.equal(r.headers["grpc-message"], "not%20found");
    assert.equal(r.body.length, 0);
    assert.equal(r.trailers, undefined);
  } finally {
    await t.close();
  }
});

Deno.test("h2 hop: server streaming delivers messages as they are sent", async () => {
  const t = await setup();
  try {
    const req = t.client.request({ ":method": "POST", ":path": "/server-stream" }, { endStream: true });
    const arrivals: string[] = [];
    let trailers: http2.IncomingHttpHeaders | undefined;
    req.on("data", (c: Uint8Array) => arrivals.push(new TextDecoder().decode(c)));
    req.on("trailers", (tr) => (trailers = tr));
    await new Promise((r) => req.on("close", r));
    assert.equal(arrivals.join(""), "msg0;msg1;msg2;msg3;msg4;");
    // Sent 10 ms apart, so a hop that buffered the whole body would deliver one chunk.
    assert.ok(arrivals.length >= 3, `messages arrived in ${arrivals.length} chunk(s)`);
    assert.equal(trailers?.["grpc-status"], "0");
  } finally {
    await t.close();
  }
});

Deno.test("h2 hop: client streaming reaches the backend chunk by chunk", async () => {
  const t = await setup();
  try {
    const req = t.client.request({ ":method": "POST", ":path": "/client-stream" });
    let body = "";
    req.on("data", (c: Uint8Array) => (body += new TextDecoder().decode(c)));
    const done = new Promise((r) => req.on("close", r));
    for (let i = 0; i < 10; i++) {
      req.write(pattern(100, i + 1));
      await new Promise((r) => setTimeout(r, 5));
    }
    req.end();
    await done;
    const [chunks, bytes] = body.split(" ").map(Number);
    assert.equal(bytes, 1000);
    assert.ok(chunks >= 5, `backend saw ${chunks} chunk(s) for 10 spaced writes`);
  } finally {
    await t.close();
  }
});

Deno.test("h2 hop: bidi streaming ping-pong (each reply before the next message)", async () => {
  const t = await setup();
  try {
    const req = t.client.request({ ":method": "POST", ":path": "/bidi" });
    let trailers: http2.IncomingHttpHeaders | undefined;
    req.on("trailers", (tr) => (trailers = tr));
    const replies: string[] = [];
    let wake: (() => void) | undefined;
    req.on("data", (c: Uint8Array) => {
      replies.push(new TextDecoder().decode(c));
      wake?.();
    });
    for (let i = 0; i < 20; i++) {
      const got = new Promise<void>((r) => (wake = r));
      req.write(`m${i}`);
      // The next message goes only after this one's reply came back through the hop.
      await Promise.race([
        got,
        new Promise((_, rej) => setTimeout(() => rej(new Error(`no reply to m${i}`)), 3000)),
      ]);
    }
    req.end();
    await new Promise((r) => req.on("close", r));
    assert.equal(replies.join(""), Array.from({ length: 20 }, (_, i) => `re:m${i}`).join(""));
    assert.equal(trailers?.["grpc-status"], "0");
  } finally {
    await t.close();
  }
});

Deno.test("h2 hop: client cancel resets the backend stream (RST_STREAM CANCEL)", async () => {
  const t = await setup();
  try {
    const req = t.client.request({ ":method": "POST", ":path": "/hang", "x-tag": "cancel-me" }, {
      endStream: true,
    });
    req.on("error", () => {});
    await new Promise((r) => req.once("data", r));
    req.close(NGHTTP2_CANCEL);
    const deadline = Date.now() + 3000;
    while (!t.state.rstCodes.has("cancel-me") && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 10));
    }
    assert.equal(
      t.state.rstCodes.get("cancel-me"),
      NGHTTP2_CANCEL,
      "backend stream closed by RST_STREAM CANCEL",
    );
  } finally {
    await t.close();
  }
});

Deno.test("h2 hop: client cancels a request it is still sending → backend sees RST CANCEL, not END_STREAM", async () => {
  const t = await setup();
  try {
    const req = t.client.request({ ":method": "POST", ":path": "/bidi", "x-tag": "open-cancel" });
    req.on("error", () => {});
    req.write("m0");
    await new Promise((r) => req.once("data", r));
    resetStream(req, NGHTTP2_CANCEL);
    const deadline = Date.now() + 3000;
    while (!t.state.rstCodes.has("open-cancel") && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 10));
    }
    assert.equal(t.state.rstCodes.get("open-cancel"), NGHTTP2_CANCEL);
  } finally {
    await t.close();
  }
});

Deno.test("h2 hop: backend reset mid-body reaches the client as a reset, not a short clean body", async () => {
  const t = await setup();
  try {
    const req = t.client.request({ ":method": "GET", ":path": "/fail-mid-body" }, { endStream: true });
    req.on("error", () => {});
    let ended = false;
    let body = "";
    req.on("data", (c: Uint8Array) => (body += new TextDecoder().decode(c)));
    req.on("end", () => (ended = true));
    await new Promise((r) => req.on("close", r));
    assert.equal(body, "partial");
    assert.equal(ended, false, "the client must not see END_STREAM");
    assert.equal(req.rstCode, http2.constants.NGHTTP2_INTERNAL_ERROR);
  } finally {
    await t.close();
  }
});

Deno.test("h2 hop: 300 concurrent streams on one connection, backend limit 50 respected", async () => {
  const t = await setup({ maxConcurrentStreams: 50 });
  try {
    const rs = await Promise.all(
      Array.from(
        { length: 300 },
        (_, i) => call(t.client, { ":method": "GET", ":path": "/held", "x-n": String(i), "x-hold-ms": "10" }),
      ),
    );
    rs.forEach((r, i) => {
      assert.equal(r.status, 200);
      assert.equal(new TextDecoder().decode(r.body), String(i));
    });
    assert.ok(t.state.maxActive <= 50, `backend saw ${t.state.maxActive} concurrent streams`);
    assert.ok(t.state.maxActive > 1, "requests were multiplexed, not serialized");
    assert.equal(t.backend.sessions.size, 1, "one upstream connection carried all of them");
  } finally {
    await t.close();
  }
});

Deno.test("h2 hop: backend GOAWAY → in-flight stream finishes, next request uses a new connection", async () => {
  const t = await setup();
  try {
    const first = await call(t.client, { ":method": "GET", ":path": "/held", "x-n": "1" });
    assert.equal(first.status, 200);
    const oldSessions = [...t.backend.sessions];
    assert.equal(oldSessions.length, 1);
    const inflight = call(t.client, { ":method": "GET", ":path": "/held", "x-n": "2", "x-hold-ms": "200" });
    await new Promise((r) => setTimeout(r, 50));
    // Graceful shutdown of the backend connection: GOAWAY, then close once streams are done.
    oldSessions[0].close();
    await new Promise((r) => setTimeout(r, 50));
    const after = await call(t.client, { ":method": "GET", ":path": "/held", "x-n": "3" });
    assert.equal(after.status, 200);
    assert.equal(new TextDecoder().decode(after.body), "3");
    const r2 = await inflight;
    assert.equal(r2.status, 200, "stream admitted before GOAWAY completes");
    assert.equal(new TextDecoder().decode(r2.body), "2");
    const deadline = Date.now() + 3000;
    while (t.backend.sessions.has(oldSessions[0]) && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 10));
    }
    assert.ok(!t.backend.sessions.has(oldSessions[0]), "old backend connection closed after its last stream");
    assert.equal(t.backend.sessions.size, 1, "a new backend connection serves new requests");
  } finally {
    await t.close();
  }
});

Deno.test("h2 hop: backend connection dies → next request reconnects", async () => {
  const t = await setup();
  try {
    assert.equal((await call(t.client, { ":method": "GET", ":path": "/held", "x-n": "1" })).status, 200);
    for (const s of t.backend.sessions) s.destroy();
    await new Promise((r) => setTimeout(r, 50));
    const r = await call(t.client, { ":method": "GET", ":path": "/held", "x-n": "2" });
    assert.equal(r.status, 200);
    assert.equal(new TextDecoder().decode(r.body), "2");
  } finally {
    await t.close();
  }
});
