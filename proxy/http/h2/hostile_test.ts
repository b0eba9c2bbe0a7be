/**
 * Hostile HTTP/2 peers against weft's own session over real loopback sockets (and mesh TLS):
 * floods of cheap frames, provoked and peer resets, stalled handshakes and field blocks, and
 * peers that never read. Each attack must be stopped (GOAWAY ENHANCE_YOUR_CALM, a closed
 * connection, or a server that stops reading and producing), a well-behaved client on another
 * connection to the same server keeps getting answers, and the process RSS is printed
 * (before / peak / after) and held under RSS_BOUND.
 */
import assert from "node:assert/strict";
import * as http2 from "node:http2";
import * as net from "node:net";
import { CertStore } from "../../core/cert_store.ts";
import { createTestCa } from "../../testing/certs.ts";
import { MeshTls } from "../../transport/tls.ts";
import {
  type Body,
  bytesBody,
  HeaderList,
  type HttpRequest,
  type HttpService,
  textResponse,
} from "../message.ts";
import { ErrorCode } from "./frame.ts";
import { Http2Connection } from "./client.ts";
import type { Http2ServerOptions } from "./server.ts";
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
  type RawFrame,
  RawH2Client,
  startBackend,
  startH2Proxy,
  startHop,
  tcpConnect,
} from "./testing.ts";

const MiB = 1024 * 1024;
/**
 * How much the whole test process (server, attacker and good client together) may grow during
 * one attack. Generous on purpose: the point is "bounded", not a tight figure; an unbounded
 * buffer grows by hundreds of MiB within the few seconds each attack runs.
 */
const RSS_BOUND = 64 * MiB;
const CONTINUATION = 9;
const PRIORITY = 2;
const GET = (path: string): [string, string][] => [
  [":method", "GET"],
  [":scheme", "http"],
  [":path", path],
  [":authority", "x"],
];
const u32 = (v: number) => {
  const b = new Uint8Array(4);
  new DataView(b.buffer).setUint32(0, v);
  return b;
};
const setting = (id: number, v: number) => {
  const b = new Uint8Array(6);
  new DataView(b.buffer).setUint16(0, id);
  new DataView(b.buffer).setUint32(2, v);
  return b;
};
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A body of `total` bytes made as it is read, so only what the proxy buffers costs memory. */
function lazyBody(total: number, produced: { bytes: number }, signal?: AbortSignal): Body {
  const chunk = new Uint8Array(64 * 1024);
  let left = total;
  return {
    length: total,
    trailers: undefined,
    read() {
      if (signal?.aborted) return Promise.reject(signal.reason);
      if (left === 0) return Promise.resolve(null);
      const n = Math.min(left, chunk.length);
      left -= n;
      produced.bytes += n;
      return Promise.resolve(n === chunk.length ? chunk : chunk.subarray(0, n));
    },
    cancel() {
      left = 0;
    },
  };
}

interface Counters {
  /** Bytes of `/big` bodies produced so far. */
  produced: { bytes: number };
  /** `/hold` requests the service is running now, and the most at once. */
  holding: number;
  maxHolding: number;
}

/** `/hold` never answers (until aborted); `/big` is a 1 GiB body; anything else is "ok". */
function hostileService(c: Counters): HttpService {
  return async (req, signal) => {
    if (req.path === "/hold") {
      c.holding++;
      c.maxHolding = Math.max(c.maxHolding, c.holding);
      try {
        return await new Promise((_, reject) =>
          signal.addEventListener("abort", () => reject(signal.reason))
        );
      } finally {
        c.holding--;
      }
    }
    if (req.path === "/big") {
      return {
        status: 200,
        headers: new HeaderList(["content-type", "application/octet-stream"]),
        body: lazyBody(1024 * MiB, c.produced, signal),
      };
    }
    return textResponse(200, "ok");
  };
}

async function startServer(
  opts: Http2ServerOptions = {},
  prepare?: (sock: net.Socket) => Promise<net.Socket>,
) {
  const counters: Counters = { produced: { bytes: 0 }, holding: 0, maxHolding: 0 };
  const logs: string[] = [];
  const p = await startH2Proxy(hostileService(counters), { ...opts, log: (_l, m) => logs.push(m) }, prepare);
  return { ...p, counters, logs };
}

/** RSS sampled every 10 ms: before, the peak while running, and after. */
class MemWatch {
  readonly before = Deno.memoryUsage().rss;
  peak = this.before;
  #timer = setInterval(() => this.sample(), 10);

  sample(): void {
    this.peak = Math.max(this.peak, Deno.memoryUsage().rss);
  }

  /** Prints the figures and asserts the peak growth stays under RSS_BOUND. */
  check(name: string): void {
    this.sample();
    clearInterval(this.#timer);
    const after = Deno.memoryUsage().rss;
    const f = (n: number) => (n / MiB).toFixed(1);
    console.log(
      `  ${name}: rss before ${f(this.before)} MiB, peak ${f(this.peak)} MiB (+${
        f(this.peak - this.before)
      }), after ${f(after)} MiB; bound +${f(RSS_BOUND)} MiB`,
    );
    assert.ok(
      this.peak - this.before < RSS_BOUND,
      `${name}: RSS grew by ${f(this.peak - this.before)} MiB (bound ${f(RSS_BOUND)} MiB)`,
    );
  }

  stop(): void {
    clearInterval(this.#timer);
  }
}

/** A well-behaved node:http2 client on its own connection, asking "/" every 20 ms. */
class GoodClient {
  served = 0;
  failures: string[] = [];
  #stop = false;
  #loop: Promise<void>;

  private constructor(readonly session: http2.ClientHttp2Session) {
    this.#loop = this.#run();
  }

  static async start(port: number): Promise<GoodClient> {
    return new GoodClient(await connectClient(port));
  }

  async #run(): Promise<void> {
    while (!this.#stop) {
      try {
        const r = await call(this.session, { ":path": "/" });
        if (r.status === 200) this.served++;
        else this.failures.push(`status ${r.status}`);
      } catch (e) {
        this.failures.push((e as Error).message);
      }
      await sleep(20);
    }
  }

  /** Waits until it got an answer after `since` answers (fails the test after `ms`). */
  async servedAfter(since: number, what: string, ms = 5000): Promise<void> {
    const deadline = Date.now() + ms;
    while (this.served <= since && Date.now() < deadline) await sleep(10);
    assert.ok(this.served > since, `${what}: the well-behaved client got no answer`);
    assert.deepEqual(this.failures, [], `${what}: the well-behaved client saw failures`);
  }

  async stop(): Promise<void> {
    this.#stop = true;
    await this.#loop;
    await closeSession(this.session);
  }
}

const isGoaway = (f: RawFrame) => f.type === FRAME.GOAWAY;

/**
 * Writes `batch` copies of `make()` every 5 ms (at most `batches` times) until the server sends
 * GOAWAY or closes; returns the GOAWAY.
 */
async function flood(
  raw: RawH2Client,
  make: (i: number) => Uint8Array[],
  batch: number,
  batches = 400,
): Promise<RawFrame | undefined> {
  let i = 0;
  for (let b = 0; b < batches; b++) {
    if (raw.closed || raw.frames.some(isGoaway)) break;
    const parts: Uint8Array[] = [];
    for (let k = 0; k < batch; k++) parts.push(...make(i++));
    raw.write(concat(parts));
    await sleep(5);
  }
  return await raw.waitFor(isGoaway, 3000);
}

function assertCalm(g: RawFrame | undefined, what: string): void {
  assert.ok(g, `${what}: no GOAWAY`);
  assert.equal(errorCode(g), ErrorCode.ENHANCE_YOUR_CALM, `${what}: GOAWAY code`);
}

/** Runs `attack` against a fresh server with a good client beside it; checks memory and service. */
async function underAttack(
  name: string,
  opts: Http2ServerOptions,
  attack: (srv: Awaited<ReturnType<typeof startServer>>, good: GoodClient) => Promise<void>,
): Promise<void> {
  const srv = await startServer(opts);
  const good = await GoodClient.start(srv.port);
  await good.servedAfter(0, `${name} (before)`);
  const mem = new MemWatch();
  try {
    const start = good.served;
    await attack(srv, good);
    await good.servedAfter(start, name);
    mem.check(name);
  } finally {
    mem.stop();
    await good.stop();
    await srv.close();
  }
}

const headersFrame = (id: number, fields: [string, string][], end = true) =>
  frame(FRAME.HEADERS, FLAG.END_HEADERS | (end ? FLAG.END_STREAM : 0), id, hpackLiteral(fields));

// ---- floods of cheap frames ----------------------------------------------------------------------

Deno.test("hostile: h2 PING flood → GOAWAY ENHANCE_YOUR_CALM", async () => {
  await underAttack("PING flood", {}, async (srv) => {
    const raw = await RawH2Client.open(srv.port);
    const ping = frame(FRAME.PING, 0, 0, new Uint8Array(8));
    assertCalm(await flood(raw, () => [ping], 500), "PING flood");
    raw.destroy();
  });
});

Deno.test("hostile: h2 SETTINGS flood → GOAWAY ENHANCE_YOUR_CALM", async () => {
  await underAttack("SETTINGS flood", {}, async (srv) => {
    const raw = await RawH2Client.open(srv.port);
    // 100 entries a frame, the window setting flipping: the most work a SETTINGS frame can ask for.
    const entries: Uint8Array[] = [];
    for (let k = 0; k < 100; k++) entries.push(setting(4, k % 2 ? 70_000 : 65_535));
    const settings = frame(FRAME.SETTINGS, 0, 0, concat(entries));
    raw.write(headersFrame(1, GET("/hold"))); // one open stream for the window pass to touch
    assertCalm(await flood(raw, () => [settings], 200), "SETTINGS flood");
    raw.destroy();
  });
});

Deno.test("hostile: h2 empty DATA flood → GOAWAY ENHANCE_YOUR_CALM", async () => {
  await underAttack("empty DATA flood", {}, async (srv) => {
    const raw = await RawH2Client.open(srv.port);
    raw.write(headersFrame(1, [[":method", "POST"], ...GET("/hold").slice(1)], false));
    const empty = frame(FRAME.DATA, 0, 1);
    assertCalm(await flood(raw, () => [empty], 500), "empty DATA flood");
    raw.destroy();
  });
});

Deno.test("hostile: h2 PRIORITY flood → GOAWAY ENHANCE_YOUR_CALM", async () => {
  await underAttack("PRIORITY flood", {}, async (srv) => {
    const raw = await RawH2Client.open(srv.port);
    // PRIORITY may name idle streams: each one a new id, as an attacker would.
    assertCalm(
      await flood(raw, (i) => [frame(PRIORITY, 0, 2 * i + 1, new Uint8Array([0, 0, 0, 0, 16]))], 500),
      "PRIORITY flood",
    );
    raw.destroy();
  });
});

Deno.test("hostile: h2 WINDOW_UPDATE flood costs bounded work and memory", async () => {
  await underAttack("WINDOW_UPDATE flood", {}, async (srv) => {
    const raw = await RawH2Client.open(srv.port);
    raw.write(headersFrame(1, [[":method", "POST"], ...GET("/hold").slice(1)], false));
    // Legal frames (increments of 1 take ~2^31 frames to overflow): nothing to refuse, so the
    // defence is that each costs O(1) and nothing is kept. 200,000 of them, then still served.
    await flood(
      raw,
      () => [frame(FRAME.WINDOW_UPDATE, 0, 0, u32(1)), frame(FRAME.WINDOW_UPDATE, 0, 1, u32(1))],
      500,
    );
    raw.write(frame(FRAME.PING, 0, 0, new Uint8Array(8)));
    assert.ok(
      await raw.waitFor((f) => f.type === FRAME.PING && (f.flags & FLAG.ACK) !== 0),
      "still answered",
    );
    assert.equal(raw.frames.find(isGoaway), undefined, "a legal flood is not a connection error");
    raw.destroy();
  });
});

Deno.test("hostile: h2 zero-length CONTINUATION flood → GOAWAY ENHANCE_YOUR_CALM", async () => {
  await underAttack("CONTINUATION flood", {}, async (srv) => {
    const raw = await RawH2Client.open(srv.port);
    // Our SETTINGS ACK must be out before the block starts (it would be a frame inside the block).
    await raw.waitFor((f) => f.type === FRAME.SETTINGS);
    // A field block that never ends and never grows: the byte limit alone would not stop it.
    raw.write(frame(FRAME.HEADERS, 0, 1, new Uint8Array(0)));
    const empty = frame(CONTINUATION, 0, 1);
    assertCalm(await flood(raw, () => [empty], 50), "CONTINUATION flood");
    raw.destroy();
  });
});

// ---- resets ---------------------------------------------------------------------------------------

Deno.test("hostile: h2 rapid reset (CVE-2023-44487) → GOAWAY ENHANCE_YOUR_CALM", async () => {
  await underAttack("rapid reset", {}, async (srv) => {
    const raw = await RawH2Client.open(srv.port);
    const cancel = u32(ErrorCode.CANCEL);
    assertCalm(
      await flood(
        raw,
        (i) => [headersFrame(2 * i + 1, GET("/hold")), frame(FRAME.RST_STREAM, 0, 2 * i + 1, cancel)],
        100,
      ),
      "rapid reset",
    );
    raw.destroy();
    assert.ok(srv.counters.holding === 0 || srv.counters.holding <= 250, "streams were released");
  });
});

Deno.test("hostile: h2 MadeYouReset (CVE-2025-8671): resets we are made to send → GOAWAY ENHANCE_YOUR_CALM", async () => {
  await underAttack("MadeYouReset (WINDOW_UPDATE 0)", {}, async (srv) => {
    const raw = await RawH2Client.open(srv.port);
    // Each stream starts real work, then a WINDOW_UPDATE of 0 makes us reset it (PROTOCOL_ERROR).
    const g = await flood(
      raw,
      (i) => [headersFrame(2 * i + 1, GET("/hold")), frame(FRAME.WINDOW_UPDATE, 0, 2 * i + 1, u32(0))],
      100,
    );
    assertCalm(g, "MadeYouReset");
    const resets = raw.frames.filter((f) => f.type === FRAME.RST_STREAM).length;
    assert.ok(resets <= 1024, `at most 1024 provoked resets before GOAWAY (saw ${resets})`);
    raw.destroy();
  });
});

Deno.test("hostile: h2 malformed and zero-length HEADERS flood (reset by the server) → GOAWAY ENHANCE_YOUR_CALM", async () => {
  await underAttack("zero-length/malformed HEADERS flood", {}, async (srv) => {
    const raw = await RawH2Client.open(srv.port);
    const bad = hpackLiteral([...GET("/"), ["X-Upper", "1"]]);
    const g = await flood(
      raw,
      (i) => [
        frame(FRAME.HEADERS, FLAG.END_HEADERS | FLAG.END_STREAM, 4 * i + 1, new Uint8Array(0)),
        frame(FRAME.HEADERS, FLAG.END_HEADERS | FLAG.END_STREAM, 4 * i + 3, bad),
      ],
      100,
    );
    assertCalm(g, "malformed HEADERS flood");
    raw.destroy();
  });
});

Deno.test("hostile: h2 more streams than advertised are refused; the service never sees more than 250", async () => {
  await underAttack("stream limit", {}, async (srv) => {
    const raw = await RawH2Client.open(srv.port);
    const s = await raw.waitFor((f) => f.type === FRAME.SETTINGS && (f.flags & FLAG.ACK) === 0);
    assert.ok(s);
    let advertised: number | undefined;
    for (let at = 0; at + 6 <= s.payload.length; at += 6) {
      const d = new DataView(s.payload.buffer, s.payload.byteOffset + at, 6);
      if (d.getUint16(0) === 3) advertised = d.getUint32(2);
    }
    assert.equal(advertised, 250, "SETTINGS_MAX_CONCURRENT_STREAMS advertised");
    const heads: Uint8Array[] = [];
    for (let i = 0; i < 400; i++) heads.push(headersFrame(2 * i + 1, GET("/hold")));
    raw.write(concat(heads));
    await raw.waitFor(() => raw.frames.filter((f) => f.type === FRAME.RST_STREAM).length >= 150, 3000);
    const refused = raw.frames.filter((f) =>
      f.type === FRAME.RST_STREAM && errorCode(f) === ErrorCode.REFUSED_STREAM
    );
    assert.equal(refused.length, 150, "streams over the limit refused");
    assert.equal(srv.counters.maxHolding, 250, "the service saw at most 250 at once");
    raw.destroy();
  });
});

// ---- stalls ------------------------------------------------------------------------------------

Deno.test("hostile: h2 client that connects and never sends the preface or SETTINGS is closed", async () => {
  await underAttack("preface timeout", { prefaceTimeoutMs: 300 }, async (srv) => {
    // Nothing at all, and the preface without SETTINGS.
    const silent = await RawH2Client.open(srv.port, false);
    const half = await RawH2Client.open(srv.port, false);
    half.write(new TextEncoder().encode("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"));
    for (const c of [silent, half]) {
      const g = await c.waitFor(isGoaway, 5000);
      assert.ok(g, "GOAWAY after the preface timeout");
      assert.equal(errorCode(g), ErrorCode.PROTOCOL_ERROR);
      await c.waitFor(() => false, 5000); // until closed
      assert.ok(c.closed, "connection closed");
    }
  });
});

Deno.test("hostile: h2 field block left open (HEADERS without END_HEADERS) → GOAWAY ENHANCE_YOUR_CALM", async () => {
  await underAttack("header timeout", { headerTimeoutMs: 300 }, async (srv) => {
    const raw = await RawH2Client.open(srv.port);
    await raw.waitFor((f) => f.type === FRAME.SETTINGS); // our SETTINGS ACK goes out first
    raw.write(frame(FRAME.HEADERS, 0, 1, hpackLiteral(GET("/"))));
    assertCalm(await raw.waitFor(isGoaway, 5000), "header timeout");
    raw.destroy();
  });
});

Deno.test("hostile: h2 idle connection is closed; one with an open stream is not", async () => {
  await underAttack("idle timeout", { idleTimeoutMs: 300 }, async (srv) => {
    const idle = await RawH2Client.open(srv.port);
    const busy = await RawH2Client.open(srv.port);
    busy.write(headersFrame(1, GET("/hold")));
    await idle.waitFor(() => false, 5000); // until closed
    assert.ok(idle.closed, "idle connection closed");
    assert.equal(idle.frames.find(isGoaway), undefined, "closed with a FIN, no GOAWAY");
    assert.ok(!busy.closed, "a connection with an open stream stays");
    busy.destroy();
    idle.destroy();
  });
});

// ---- peers that do not read ------------------------------------------------------------------------

/** Opens both windows to 1 GiB and asks for /big: flow control no longer holds the server back. */
function greedyGet(path: string): Uint8Array {
  return concat([
    frame(FRAME.SETTINGS, 0, 0, setting(4, 2 ** 30)),
    frame(FRAME.WINDOW_UPDATE, 0, 0, u32(2 ** 30 - 65_535)),
    headersFrame(1, GET(path)),
  ]);
}

Deno.test("hostile: h2 peer that never reads the socket while asking for 1 GiB: server stops reading and producing", async () => {
  await underAttack("slow reader (socket), 1 GiB response", {}, async (srv, good) => {
    const raw = await RawH2Client.open(srv.port);
    raw.pauseReading();
    raw.write(greedyGet("/big"));
    // Then requests, PINGs and (legal, 1-byte) WINDOW_UPDATEs whose answers it never reads, for as
    // long as the server takes them: ~64 KiB every 10 ms, well under the chaff limit.
    const ping = frame(FRAME.PING, 0, 0, new Uint8Array(8));
    const credit = frame(FRAME.WINDOW_UPDATE, 0, 0, u32(1));
    const filler = concat(Array.from({ length: 5000 }, () => credit));
    let id = 3;
    const start = good.served;
    for (let i = 0; i < 400 && raw.writableLength < 4 * MiB; i++) {
      raw.write(concat([headersFrame(id, GET("/")), ...Array.from({ length: 20 }, () => ping), filler]));
      id += 2;
      await sleep(10);
    }
    await sleep(500);
    const produced = srv.counters.produced.bytes;
    console.log(
      `  slow reader (socket): produced ${
        (produced / MiB).toFixed(1)
      } MiB of 1024; attacker's bytes the server ` +
        `did not take: ${(raw.writableLength / MiB).toFixed(1)} MiB`,
    );
    assert.ok(produced < 64 * MiB, `the server kept producing: ${produced} bytes`);
    // Once the kernel buffers are full, the attacker's own writes queue up: the server stopped reading.
    assert.ok(raw.writableLength > 1 * MiB, "the server kept reading from a peer that does not read");
    assert.ok(good.served > start, "served while the attacker holds its connection");
    raw.destroy();
  });
});

Deno.test("hostile: h2 peer that never sends WINDOW_UPDATE for 1 GiB from an upstream: the hop holds only the windows", async () => {
  let sent = 0;
  const backend = await startBackend((stream, headers) => {
    if (headers[":path"] !== "/big") {
      stream.respond({ ":status": 200 });
      stream.end("ok");
      return;
    }
    const chunk = new Uint8Array(64 * 1024);
    stream.respond({ ":status": 200 });
    const pump = () => {
      while (sent < 1024 * MiB && !stream.destroyed) {
        sent += chunk.length;
        if (!stream.write(chunk)) return;
      }
    };
    stream.on("drain", pump);
    pump();
  });
  const hop = await startHop(backend.port);
  const good = await GoodClient.start(hop.port);
  const mem = new MemWatch();
  try {
    const raw = await RawH2Client.open(hop.port);
    raw.write(headersFrame(1, GET("/big")));
    await raw.waitFor((f) => f.type === FRAME.DATA, 3000);
    const start = good.served;
    await sleep(2000);
    const got = raw.frames.filter((f) => f.type === FRAME.DATA).reduce((n, f) => n + f.payload.length, 0);
    console.log(
      `  slow reader (window): client got ${got} bytes; upstream sent ${(sent / MiB).toFixed(1)} MiB of 1024`,
    );
    assert.ok(got <= 65_535, "no more than the client's window");
    assert.ok(sent < 16 * MiB, `the upstream kept sending: ${sent} bytes`);
    await good.servedAfter(start, "slow reader (window)");
    mem.check("slow reader (window), 1 GiB upstream response");
    raw.destroy();
  } finally {
    mem.stop();
    await good.stop();
    await hop.close();
    await backend.close();
  }
});

// ---- the same over mesh TLS --------------------------------------------------------------------------

const ca = await createTestCa("h2-hostile");
const SERVER_ID = "server.ns.serviceaccount.identity.linkerd.cluster.local";
const CLIENT_ID = "client.ns.serviceaccount.identity.linkerd.cluster.local";

async function mesh(name: string): Promise<MeshTls> {
  const s = new CertStore();
  s.set(await ca.issue(name));
  return new MeshTls(s);
}

/**
 * The hostile service behind mesh TLS, as the inbound proxy terminates it (MeshTls.accept), and a
 * well-behaved mesh client beside it. Every TLS socket here, the attacker's too, is MeshTls's
 * gated one (proxy/transport/tls_flow.ts): an ungated node:tls socket that is paused keeps
 * reading the network and buffers without bound in this same process, which would measure Deno's
 * read-side bug instead of the server. `ignorePause` makes the server's sockets keep delivering
 * while paused, to reach the second line of defence.
 */
async function startMeshServer(ignorePause = false) {
  const serverMesh = await mesh(SERVER_ID);
  const srv = await startServer({}, async (sock) => {
    const t = (await serverMesh.accept(sock, [], 2000)).socket;
    if (ignorePause) t.pause = () => t;
    return t;
  });
  const clientMesh = await mesh(CLIENT_ID);
  const connect = async () =>
    (await clientMesh.connect({
      host: "127.0.0.1",
      port: srv.port,
      serverName: SERVER_ID,
      expectedIdentity: SERVER_ID,
      timeoutMs: 2000,
    })).socket;
  const good = new Http2Connection({ name: "good", connect });
  const state = { served: 0 };
  const ask = async (what: string) => {
    const r = await good.request({
      method: "GET",
      scheme: "http",
      authority: "x",
      path: "/",
      version: "HTTP/2",
      headers: new HeaderList(),
      body: bytesBody([]),
    }, AbortSignal.timeout(5000));
    for (let c = await r.body.read(); c !== null; c = await r.body.read()) { /* drain */ }
    assert.equal(r.status, 200, `${what}: the well-behaved mesh client's answer`);
    state.served++;
  };
  return {
    ...srv,
    connect,
    ask,
    state,
    close: async () => {
      await good.close(0);
      await srv.close();
    },
  };
}

Deno.test("hostile: h2 over mesh TLS, peer that never reads the socket while asking for 1 GiB: server stops reading and producing", async () => {
  const srv = await startMeshServer();
  await srv.ask("before");
  const mem = new MemWatch();
  try {
    const raw = RawH2Client.over(await srv.connect());
    raw.pauseReading();
    raw.write(greedyGet("/big"));
    // As over plain TCP: requests, PINGs and 1-byte WINDOW_UPDATEs whose answers it never reads.
    const ping = frame(FRAME.PING, 0, 0, new Uint8Array(8));
    const credit = frame(FRAME.WINDOW_UPDATE, 0, 0, u32(1));
    const filler = concat(Array.from({ length: 5000 }, () => credit));
    let id = 3;
    for (let i = 0; i < 400 && raw.writableLength < 4 * MiB && !raw.closed; i++) {
      raw.write(concat([headersFrame(id, GET("/")), ...Array.from({ length: 20 }, () => ping), filler]));
      id += 2;
      await sleep(10);
    }
    await sleep(500);
    const produced = srv.counters.produced.bytes;
    console.log(
      `  slow reader (TLS): produced ${(produced / MiB).toFixed(1)} MiB of 1024; attacker's bytes the ` +
        `server did not take: ${(raw.writableLength / MiB).toFixed(1)} MiB`,
    );
    assert.ok(produced < 64 * MiB, `the server kept producing over TLS: ${produced} bytes`);
    // The first line held: the server stopped reading (the attacker's own writes queue up), so the
    // attacker never got to make it owe 1,000 control frames.
    assert.ok(!raw.closed, "the server closed the connection instead of pausing it");
    assert.ok(
      raw.writableLength > 1 * MiB,
      "the server kept reading over TLS from a peer that does not read",
    );
    assert.ok(!srv.logs.some((l) => l.includes("control frames owed")), srv.logs.join("\n"));
    const before = srv.state.served;
    await srv.ask("during");
    assert.ok(srv.state.served > before, "another mesh client is served meanwhile");
    mem.check("slow reader (TLS), 1 GiB response");
    raw.destroy();
  } finally {
    mem.stop();
    await srv.close();
  }
});

Deno.test("hostile: h2 over mesh TLS, peer that never reads floods PINGs into a server that cannot stop reading → GOAWAY ENHANCE_YOUR_CALM", async () => {
  // The read pause is the first line; this server's sockets ignore pause() (as a transport that
  // cannot hold its reader would), so the cap on owed control frames is all that is left.
  const srv = await startMeshServer(true);
  await srv.ask("before");
  const mem = new MemWatch();
  try {
    const raw = RawH2Client.over(await srv.connect());
    raw.pauseReading();
    raw.write(greedyGet("/big"));
    // The write side backs up with the /big response before the PINGs come.
    await sleep(1000);
    const produced = srv.counters.produced.bytes;
    assert.ok(produced < 64 * MiB, `the server kept producing over TLS: ${produced} bytes`);
    const attacked = [...srv.conns].find((c) => c.activeStreams === 1);
    assert.ok(attacked, "the attacking connection with its /big stream");
    // 2,000 PINGs in a second: under the chaff budget (10,000/s), over the owed cap (1,000).
    for (let i = 0; i < 10 && !raw.closed; i++) {
      raw.write(concat(Array.from({ length: 200 }, () => frame(FRAME.PING, 0, 0, new Uint8Array(8)))));
      await sleep(50);
    }
    const closed = await Promise.race([attacked.closed.then(() => true), sleep(7000).then(() => false)]);
    console.log(
      `  owed PING ACKs (TLS): produced ${
        (produced / MiB).toFixed(1)
      } MiB of 1024; connection closed: ${closed}`,
    );
    assert.ok(closed, "the attacking connection was closed");
    assert.ok(
      srv.logs.some((l) => l.includes("ENHANCE_YOUR_CALM") && l.includes("control frames owed")),
      srv.logs.join("\n"),
    );
    await srv.ask("after");
    mem.check("owed PING ACKs (TLS)");
    raw.destroy();
  } finally {
    mem.stop();
    await srv.close();
  }
});

// ---- the client role: hostile upstreams ---------------------------------------------------------------

/** A listener whose every connection is answered by a raw HTTP/2 server handed to `onConn`. */
async function hostileUpstream(onConn: (raw: RawH2Client) => void) {
  const socks = new Set<net.Socket>();
  const raws: RawH2Client[] = [];
  const server = net.createServer((sock) => {
    sock.on("error", () => {});
    socks.add(sock);
    const raw = RawH2Client.serving(sock);
    raws.push(raw);
    onConn(raw);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  return {
    port: (server.address() as net.AddressInfo).port,
    raws,
    close: () =>
      new Promise<void>((r) => {
        for (const s of socks) s.destroy();
        server.close(() => r());
      }),
  };
}

const upstreamRequest = (path: string, body?: Body): HttpRequest => ({
  method: body ? "POST" : "GET",
  scheme: "http",
  authority: "x",
  path,
  version: "HTTP/2",
  headers: new HeaderList(),
  body: body ?? bytesBody([]),
});

/**
 * The proxy's other upstream traffic: an Http2Connection to a well-behaved node:http2 backend,
 * asked "/" every 20 ms while a hostile upstream attacks another connection of the same process.
 */
async function goodUpstream() {
  const backend = await startBackend((stream) => {
    stream.respond({ ":status": 200 });
    stream.end("ok");
  });
  const conn = new Http2Connection({ connect: tcpConnect(backend.port), name: "good upstream" });
  const state = { served: 0, failures: [] as string[], stop: false };
  const loop = (async () => {
    while (!state.stop) {
      try {
        const r = await conn.request(upstreamRequest("/"), AbortSignal.timeout(5000));
        for (let c = await r.body.read(); c !== null; c = await r.body.read()) { /* drain */ }
        if (r.status === 200) state.served++;
        else state.failures.push(`status ${r.status}`);
      } catch (e) {
        state.failures.push((e as Error).message);
      }
      await sleep(20);
    }
  })();
  return {
    state,
    async servedAfter(since: number, what: string) {
      const deadline = Date.now() + 5000;
      while (state.served <= since && Date.now() < deadline) await sleep(10);
      assert.ok(state.served > since, `${what}: the proxy's other upstream connection got no answer`);
      assert.deepEqual(state.failures, [], `${what}: the other upstream connection saw failures`);
    },
    async close() {
      state.stop = true;
      await loop;
      await conn.close(0);
      await backend.close();
    },
  };
}

async function upstreamAttack(
  name: string,
  onConn: (raw: RawH2Client) => void,
  attack: (conn: Http2Connection, raws: RawH2Client[]) => Promise<void>,
): Promise<void> {
  const up = await hostileUpstream(onConn);
  const good = await goodUpstream();
  await good.servedAfter(0, `${name} (before)`);
  const conn = new Http2Connection({ connect: tcpConnect(up.port), name: "hostile upstream" });
  const mem = new MemWatch();
  try {
    const start = good.state.served;
    await attack(conn, up.raws);
    await good.servedAfter(start, name);
    mem.check(name);
  } finally {
    mem.stop();
    await conn.close(0);
    await good.close();
    await up.close();
  }
}

Deno.test("hostile: h2 upstream floods PINGs at the proxy's client session → GOAWAY ENHANCE_YOUR_CALM", async () => {
  const ping = frame(FRAME.PING, 0, 0, new Uint8Array(8));
  await upstreamAttack("upstream PING flood", (raw) => {
    raw.waitFor((f) => f.type === FRAME.HEADERS).then(() => flood(raw, () => [ping], 500));
  }, async (conn, raws) => {
    const outcome = await conn.request(upstreamRequest("/"), AbortSignal.timeout(10_000)).then(
      () => "answered",
      (e: Error) => e.message,
    );
    assert.notEqual(outcome, "answered");
    const g = await raws[0].waitFor(isGoaway, 3000);
    assertCalm(g, "upstream PING flood");
  });
});

Deno.test("hostile: h2 upstream that never reads a 1 GiB request body: the client session stops sending", async () => {
  const produced = { bytes: 0 };
  await upstreamAttack("upstream slow reader (1 GiB upload)", (raw) => {
    // Both windows wide open, then the socket is never read again.
    raw.write(
      frame(FRAME.SETTINGS, 0, 0, setting(4, 2 ** 30)),
      frame(FRAME.WINDOW_UPDATE, 0, 0, u32(2 ** 30 - 65_535)),
    );
    raw.waitFor((f) => f.type === FRAME.HEADERS).then(() => raw.pauseReading());
  }, async (conn) => {
    const ac = new AbortController();
    const pending = conn.request(upstreamRequest("/upload", lazyBody(1024 * MiB, produced)), ac.signal)
      .catch(() => undefined);
    await sleep(1500);
    console.log(`  upstream slow reader: produced ${(produced.bytes / MiB).toFixed(1)} MiB of 1024`);
    assert.ok(produced.bytes < 64 * MiB, `the client session kept sending: ${produced.bytes} bytes`);
    ac.abort(new Error("test over"));
    await pending;
  });
});

Deno.test("hostile: h2 upstream MadeYouReset (WINDOW_UPDATE 0 on each request) → GOAWAY ENHANCE_YOUR_CALM", async () => {
  await upstreamAttack("upstream MadeYouReset", (raw) => {
    // Answers every request head with a WINDOW_UPDATE of 0, which the client must reset.
    let seen = 0;
    (async () => {
      while (!raw.closed) {
        const heads = raw.frames.filter((f) => f.type === FRAME.HEADERS);
        for (; seen < heads.length; seen++) {
          raw.write(frame(FRAME.WINDOW_UPDATE, 0, heads[seen].streamId, u32(0)));
        }
        if (raw.frames.some(isGoaway)) return;
        await sleep(2);
      }
    })();
  }, async (conn, raws) => {
    for (let batch = 0; batch < 12 && !raws[0]?.frames.some(isGoaway); batch++) {
      await Promise.all(
        Array.from(
          { length: 100 },
          () => conn.request(upstreamRequest("/"), AbortSignal.timeout(5000)).catch(() => undefined),
        ),
      );
    }
    assertCalm(await raws[0].waitFor(isGoaway, 3000), "upstream MadeYouReset");
  });
});
