import assert from "node:assert/strict";
import {
  bytesBody,
  HeaderList,
  HttpError,
  type HttpRequest,
  type HttpResponse,
  type HttpService,
  textResponse,
} from "../message.ts";
import { H, HOSTILE_CORPUS } from "./hostile_corpus.ts";
import { RawClient, sleep, startServer } from "./testing.ts";
import { listenTcp } from "../../transport/listen.ts";
import { peek } from "../../transport/peek.ts";
import { serveHttp1 } from "./server.ts";

const dec = new TextDecoder();

async function readText(req: HttpRequest): Promise<string> {
  let s = "";
  for (;;) {
    const c = await req.body.read();
    if (c === null) return s;
    s += dec.decode(c, { stream: true });
  }
}

/** Reads the body (so body errors surface) and answers with what it saw. */
function echoService(seen: string[] = []): HttpService {
  return async (req) => {
    seen.push(req.path);
    const body = await readText(req);
    return textResponse(200, `${req.method} ${req.authority} ${req.path} ${body.length}`);
  };
}

Deno.test("hostile corpus: exact status and a closed connection each, while a keep-alive client keeps getting 200", async () => {
  const seen: string[] = [];
  const server = await startServer(echoService(seen), { headerTimeoutMs: 300 });
  const good = await RawClient.connect(server.port);
  let goodOk = 0;
  let goodFail = "";
  let stop = false;
  const goodLoop = (async () => {
    while (!stop) {
      good.send(`GET /good HTTP/1.1\r\n${H}\r\n`);
      const r = await good.response();
      if (r.status === 200 && r.body === "GET t /good 0") goodOk++;
      else goodFail = `${r.status} ${r.body}`;
      await sleep(5);
    }
  })();
  try {
    for (const [name, wire, want] of HOSTILE_CORPUS) {
      const c = await RawClient.connect(server.port);
      if (typeof wire === "string") c.send(wire);
      else {
        for (const piece of wire) {
          if (c.ended) break;
          c.send(piece);
          await sleep(60);
        }
      }
      const r = await c.response();
      assert.equal(r.status, want, `${name}: got ${r.status} ${r.body.trim()}`);
      assert.equal(r.headers["connection"], "close", `${name}: connection: close`);
      assert.ok(r.headers["l5d-proxy-error"], `${name}: says why`);
      assert.ok(await c.serverClosed(), `${name}: connection closed by the server`);
      c.destroy();
    }
    assert.ok(!seen.includes("/smuggled"), "no smuggled request reached the service");
  } finally {
    stop = true;
    await goodLoop;
    good.destroy();
    await server.close();
  }
  assert.equal(goodFail, "");
  assert.ok(goodOk >= HOSTILE_CORPUS.length, `the keep-alive client got ${goodOk} answers`);
});

Deno.test("server: pipelined requests are answered in order on one connection", async () => {
  const server = await startServer(async (req) => {
    const body = await readText(req);
    if (req.path === "/slow") await sleep(50);
    return textResponse(200, `${req.path}:${body}`);
  });
  const c = await RawClient.connect(server.port);
  try {
    c.send(
      `GET /slow HTTP/1.1\r\n${H}\r\nPOST /b HTTP/1.1\r\n${H}Content-Length: 3\r\n\r\nabc` +
        `POST /c HTTP/1.1\r\n${H}Transfer-Encoding: chunked\r\n\r\n2\r\nxy\r\n0\r\n\r\nGET /d HTTP/1.1\r\n${H}\r\n`,
    );
    const bodies = [];
    for (let i = 0; i < 4; i++) bodies.push((await c.response()).body);
    assert.deepEqual(bodies, ["/slow:", "/b:abc", "/c:xy", "/d:"]);
    assert.equal(server.accepted(), 1);
  } finally {
    c.destroy();
    await server.close();
  }
});

Deno.test("server: Connection: close, HTTP/1.0 with and without keep-alive", async () => {
  const server = await startServer(echoService());
  try {
    const a = await RawClient.connect(server.port);
    a.send(`GET /a HTTP/1.1\r\n${H}Connection: close\r\n\r\n`);
    const ra = await a.response();
    assert.equal(ra.headers["connection"], "close");
    assert.ok(await a.serverClosed());
    a.destroy();

    const b = await RawClient.connect(server.port);
    b.send(`GET /b HTTP/1.0\r\n\r\n`);
    const rb = await b.response();
    assert.deepEqual([rb.status, rb.body, rb.headers["connection"]], [200, "GET  /b 0", "close"]);
    assert.ok(await b.serverClosed());
    b.destroy();

    const k = await RawClient.connect(server.port);
    k.send(`GET /k1 HTTP/1.0\r\nConnection: keep-alive\r\n\r\n`);
    const rk = await k.response();
    assert.equal(rk.headers["connection"], "keep-alive");
    k.send(`GET /k2 HTTP/1.0\r\n\r\n`);
    assert.equal((await k.response()).body, "GET  /k2 0");
    assert.ok(await k.serverClosed());
    k.destroy();
  } finally {
    await server.close();
  }
});

Deno.test("server: HTTP/1.0 client gets a body of unknown length delimited by close", async () => {
  const server = await startServer(() => {
    const chunks = [new TextEncoder().encode("part1 "), new TextEncoder().encode("part2")];
    return Promise.resolve({
      status: 200,
      headers: new HeaderList(),
      body: { ...bytesBody(chunks), length: undefined },
    });
  });
  try {
    const c = await RawClient.connect(server.port);
    c.send(`GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n`);
    const r = await c.response();
    assert.equal(r.headers["transfer-encoding"], undefined);
    assert.equal(r.headers["connection"], "close");
    assert.equal(r.body, "part1 part2");
    c.destroy();

    const d = await RawClient.connect(server.port);
    d.send(`GET / HTTP/1.1\r\n${H}\r\n`);
    const rd = await d.response();
    assert.deepEqual([rd.headers["transfer-encoding"], rd.body], ["chunked", "part1 part2"]);
    d.destroy();
  } finally {
    await server.close();
  }
});

Deno.test("server: HEAD, 204 and 304 carry no body and the connection stays in sync", async () => {
  const server = await startServer((req) => {
    if (req.path === "/204") return Promise.resolve(textResponse(204, "ignored"));
    if (req.path === "/304") {
      return Promise.resolve({ status: 304, headers: new HeaderList(["etag", '"x"']), body: bytesBody([]) });
    }
    return Promise.resolve(textResponse(200, "0123456789"));
  });
  const c = await RawClient.connect(server.port);
  try {
    c.send(`HEAD /h HTTP/1.1\r\n${H}\r\n`);
    const h = await c.response({ head: true });
    assert.equal(h.headers["content-length"], "10", "HEAD keeps the length of the GET");
    c.send(`GET /204 HTTP/1.1\r\n${H}\r\n`);
    const n = await c.response();
    assert.equal(n.status, 204);
    assert.equal(n.headers["content-length"], undefined);
    c.send(`GET /304 HTTP/1.1\r\n${H}\r\n`);
    const m = await c.response();
    assert.deepEqual([m.status, m.headers["etag"]], [304, '"x"']);
    c.send(`GET /g HTTP/1.1\r\n${H}\r\n`);
    const g = await c.response();
    assert.equal(g.body, "0123456789");
    assert.equal(c.pending, "", "no stray body bytes after HEAD/204/304");
  } finally {
    c.destroy();
    await server.close();
  }
});

Deno.test("server: 100-continue is sent when the service reads; an early answer closes", async () => {
  const server = await startServer(async (req) => {
    if (req.path === "/reject") return textResponse(413, "too big");
    return textResponse(200, `got ${(await readText(req)).length}`);
  });
  try {
    const c = await RawClient.connect(server.port);
    c.send(`POST /up HTTP/1.1\r\n${H}Expect: 100-continue\r\nContent-Length: 5\r\n\r\n`);
    assert.ok(await c.waitFor((s) => s.startsWith("HTTP/1.1 100 Continue\r\n\r\n")), "100 Continue first");
    const interim = await c.response();
    assert.equal(interim.status, 100);
    c.send("hello");
    const r = await c.response();
    assert.deepEqual([r.status, r.body], [200, "got 5"]);
    c.destroy();

    const d = await RawClient.connect(server.port);
    d.send(`POST /reject HTTP/1.1\r\n${H}Expect: 100-continue\r\nContent-Length: 5000000\r\n\r\n`);
    const rd = await d.response();
    assert.deepEqual([rd.status, rd.headers["connection"]], [413, "close"]);
    assert.ok(!rd.raw.includes("100 Continue"));
    assert.ok(await d.serverClosed());
    d.destroy();
  } finally {
    await server.close();
  }
});

Deno.test("server: an unread small body is drained to keep the connection; a large one closes it", async () => {
  const server = await startServer(() => Promise.resolve(textResponse(200, "ok")));
  try {
    const c = await RawClient.connect(server.port);
    c.send(`POST / HTTP/1.1\r\n${H}Content-Length: 10\r\n\r\n0123456789GET /next HTTP/1.1\r\n${H}\r\n`);
    assert.equal((await c.response()).headers["connection"], undefined);
    assert.equal((await c.response()).status, 200, "the request after the drained body is served");
    c.destroy();

    const d = await RawClient.connect(server.port);
    d.send(`POST / HTTP/1.1\r\n${H}Content-Length: 10000000\r\n\r\nabc`);
    assert.equal((await d.response()).status, 200);
    assert.ok(await d.serverClosed());
    d.destroy();
  } finally {
    await server.close();
  }
});

Deno.test("server: HttpError maps to its status, other failures to 502", async () => {
  const server = await startServer((req) => {
    if (req.path === "/503") throw new HttpError(503, "no endpoints for svc", "no_endpoints");
    return Promise.reject(new Error("boom\r\nInjected: yes"));
  });
  const c = await RawClient.connect(server.port);
  try {
    c.send(`GET /503 HTTP/1.1\r\n${H}\r\n`);
    const a = await c.response();
    assert.deepEqual([a.status, a.body, a.headers["l5d-proxy-error"]], [
      503,
      "no endpoints for svc\n",
      "no endpoints for svc",
    ]);
    c.send(`GET /x HTTP/1.1\r\n${H}\r\n`);
    const b = await c.response();
    assert.equal(b.status, 502);
    assert.equal(b.headers["injected"], undefined, "error text cannot inject fields");
    assert.equal(b.headers["connection"], undefined, "the connection is kept");
  } finally {
    c.destroy();
    await server.close();
  }
});

Deno.test("server: trailers go only to clients that sent TE: trailers", async () => {
  const server = await startServer(() => {
    const body = bytesBody([new TextEncoder().encode("data")], new HeaderList(["grpc-status", "0"]));
    return Promise.resolve({ status: 200, headers: new HeaderList(), body });
  });
  const c = await RawClient.connect(server.port);
  try {
    c.send(`GET / HTTP/1.1\r\n${H}TE: trailers\r\n\r\n`);
    const a = await c.response();
    assert.deepEqual([a.body, a.trailers["grpc-status"]], ["data", "0"]);
    c.send(`GET / HTTP/1.1\r\n${H}\r\n`);
    const b = await c.response();
    assert.deepEqual([b.body, b.trailers], ["data", {}]);
  } finally {
    c.destroy();
    await server.close();
  }
});

Deno.test("server: the client closing mid-request aborts the signal", async () => {
  let aborted: unknown;
  let started!: () => void;
  const inService = new Promise<void>((r) => started = r);
  const server = await startServer((_req, signal) => {
    started();
    return new Promise<HttpResponse>((_resolve, reject) => {
      signal.addEventListener("abort", () => {
        aborted = signal.reason;
        reject(signal.reason);
      });
    });
  });
  try {
    const c = await RawClient.connect(server.port);
    c.send(`GET /hang HTTP/1.1\r\n${H}\r\n`);
    await inService;
    c.destroy();
    for (let i = 0; i < 100 && aborted === undefined; i++) await sleep(10);
    assert.ok(aborted instanceof DOMException && aborted.name === "AbortError", `aborted with ${aborted}`);
  } finally {
    await server.close();
  }
});

Deno.test("server: idle keep-alive connections close silently; shutdown closes idle ones", async () => {
  const ctrl = new AbortController();
  const server = await startServer(echoService(), {
    idleTimeoutMs: 200,
    headerTimeoutMs: 1000,
    signal: ctrl.signal,
  });
  try {
    const c = await RawClient.connect(server.port);
    c.send(`GET / HTTP/1.1\r\n${H}\r\n`);
    await c.response();
    assert.ok(await c.serverClosed(2000), "closed after the idle timeout");
    assert.equal(c.pending, "", "no 408 to an idle connection");
    c.destroy();

    const d = await RawClient.connect(server.port);
    d.send(`GET / HTTP/1.1\r\n${H}\r\n`);
    await d.response();
    ctrl.abort();
    assert.ok(await d.serverClosed(150), "idle connection closed at shutdown");
    d.destroy();
  } finally {
    await server.close();
  }
});

Deno.test("server: takes over a socket after detection peeked and put back its first bytes", async () => {
  const done: Promise<void>[] = [];
  const l = await listenTcp({ ip: "127.0.0.1", port: 0 }, async (sock) => {
    const p = await peek(sock, (b) => b.length >= 14, 1024, 1000);
    assert.ok(p.bytes.length >= 14);
    done.push(serveHttp1(sock, echoService()));
  });
  const c = await RawClient.connect(l.addr.port);
  try {
    c.send(`POST /peeked HTTP/1.1\r\n${H}Content-Length: 4\r\n\r\nbody`);
    const r = await c.response();
    assert.deepEqual([r.status, r.body], [200, "POST t /peeked 4"]);
  } finally {
    c.destroy();
    await Promise.all(done);
    await l.close();
  }
});

Deno.test("server: a malformed request body is answered 400 even when the service fails with its own status", async () => {
  // As a proxy does: the upload breaks, the upstream resets, and the service rejects with 502.
  const server = await startServer(async (req) => {
    try {
      await readText(req);
    } catch {
      throw new HttpError(502, "upstream reset the stream", "i/o");
    }
    return textResponse(200, "read it all");
  });
  const c = await RawClient.connect(server.port);
  try {
    c.send(`POST / HTTP/1.1\r\n${H}Transfer-Encoding: chunked\r\n\r\nzz\r\n`);
    const r = await c.response();
    assert.equal(r.status, 400, r.body);
    assert.equal(r.headers["connection"], "close");
    assert.match(r.headers["l5d-proxy-error"], /chunk/);
    assert.ok(await c.serverClosed());
  } finally {
    c.destroy();
    await server.close();
  }
});

Deno.test("server: with halfClose, a client that half-closes right after its request gets the answer, then the close", async () => {
  let aborted = false;
  const server = await startServer(async (_req, signal) => {
    signal.addEventListener("abort", () => aborted = true);
    // Late enough that the FIN is read while the request is in flight.
    await sleep(100);
    return textResponse(200, "late");
  }, { halfClose: true });
  try {
    const c = await RawClient.connect(server.port);
    c.send(`GET /slow HTTP/1.1\r\n${H}\r\n`);
    c.sock.end();
    const r = await c.response();
    assert.equal(r.status, 200);
    assert.equal(r.body, "late");
    assert.ok(await c.serverClosed(2000), "the server closes once the half-closed client is answered");
    assert.ok(!aborted, "the request was not aborted by the FIN");
  } finally {
    await server.close();
  }
});
