/**
 * Helpers for the HTTP/2 tests and the benchmark: a real node:http2 backend, a proxy hop made of
 * serveHttp2 → Http2Connection on loopback, and a raw frame writer for inputs that a
 * well-behaved client library refuses to produce. Not a test file itself.
 */
import * as http2 from "node:http2";
import * as net from "node:net";
import type { HttpService } from "../message.ts";
import { type Http2ServerConnection, type Http2ServerOptions, serveHttp2 } from "./server.ts";
import { Http2Connection } from "./client.ts";

export interface Listening {
  port: number;
  close(): Promise<void>;
}

export type BackendHandler = (
  stream: http2.ServerHttp2Stream,
  headers: http2.IncomingHttpHeaders,
  session: http2.ServerHttp2Session,
) => void;

/** A plain node:http2 server (h2c) on 127.0.0.1; its sessions are exposed for GOAWAY tests. */
export async function startBackend(
  handler: BackendHandler,
  settings: http2.Settings = {},
): Promise<Listening & { sessions: Set<http2.ServerHttp2Session> }> {
  const server = http2.createServer({ settings });
  const sessions = new Set<http2.ServerHttp2Session>();
  server.on("session", (s: http2.ServerHttp2Session) => {
    sessions.add(s);
    s.on("error", () => {});
    s.once("close", () => sessions.delete(s));
  });
  server.on("stream", (stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders) => {
    stream.on("error", () => {});
    handler(stream, headers, stream.session as http2.ServerHttp2Session);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  const port = (server.address() as net.AddressInfo).port;
  return {
    port,
    sessions,
    close: () =>
      new Promise<void>((r) => {
        for (const s of sessions) s.destroy();
        server.close(() => r());
      }),
  };
}

/** TCP connect to 127.0.0.1:port, as the proxy's connect function. */
export function tcpConnect(port: number): (signal: AbortSignal) => Promise<net.Socket> {
  return (signal) =>
    new Promise((resolve, reject) => {
      const s = net.connect({ host: "127.0.0.1", port, noDelay: true });
      const onAbort = () => {
        s.destroy();
        reject(signal.reason);
      };
      signal.addEventListener("abort", onAbort, { once: true });
      s.once("connect", () => {
        signal.removeEventListener("abort", onAbort);
        s.removeAllListeners("error");
        resolve(s);
      });
      s.once("error", (e) => {
        signal.removeEventListener("abort", onAbort);
        reject(e);
      });
    });
}

/** A listener whose connections are served by serveHttp2 with `service`. */
export async function startH2Proxy(
  service: HttpService,
  opts: Http2ServerOptions = {},
  prepare?: (sock: net.Socket) => Promise<net.Socket>,
): Promise<Listening & { conns: Set<Http2ServerConnection> }> {
  const conns = new Set<Http2ServerConnection>();
  const server = net.createServer({ noDelay: true }, async (sock) => {
    sock.on("error", () => {});
    const s = prepare ? await prepare(sock) : sock;
    const c = serveHttp2(s, service, opts);
    conns.add(c);
    c.closed.then(() => conns.delete(c));
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  const port = (server.address() as net.AddressInfo).port;
  return {
    port,
    conns,
    close: async () => {
      await Promise.all([...conns].map((c) => c.close(0)));
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

/** serveHttp2 → Http2Connection → backend port: one proxy hop. */
export async function startHop(
  backendPort: number,
  opts: Http2ServerOptions = {},
): Promise<Listening & { upstream: Http2Connection; conns: Set<Http2ServerConnection> }> {
  const upstream = new Http2Connection({
    connect: tcpConnect(backendPort),
    name: `127.0.0.1:${backendPort}`,
  });
  const proxy = await startH2Proxy((req, signal) => upstream.request(req, signal), opts);
  return {
    port: proxy.port,
    upstream,
    conns: proxy.conns,
    close: async () => {
      await proxy.close();
      await upstream.close(0);
    },
  };
}

// --- raw frames -------------------------------------------------------------------------

export const FRAME = {
  DATA: 0,
  HEADERS: 1,
  RST_STREAM: 3,
  SETTINGS: 4,
  PING: 6,
  GOAWAY: 7,
  WINDOW_UPDATE: 8,
};
export const FLAG = { END_STREAM: 1, ACK: 1, END_HEADERS: 4 };
export const PREFACE = new TextEncoder().encode("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");

function hpackInt(v: number, prefixBits: number, first: number, out: number[]): void {
  const max = (1 << prefixBits) - 1;
  if (v < max) {
    out.push(first | v);
    return;
  }
  out.push(first | max);
  v -= max;
  while (v >= 128) {
    out.push((v & 127) | 128);
    v = Math.floor(v / 128);
  }
  out.push(v);
}

/** HPACK block of literal fields without indexing and without Huffman: any bytes go through. */
export function hpackLiteral(fields: [string, string][]): Uint8Array {
  const out: number[] = [];
  const enc = new TextEncoder();
  for (const [n, v] of fields) {
    const nb = enc.encode(n);
    const vb = enc.encode(v);
    out.push(0);
    hpackInt(nb.length, 7, 0, out);
    for (const b of nb) out.push(b);
    hpackInt(vb.length, 7, 0, out);
    for (const b of vb) out.push(b);
  }
  return new Uint8Array(out);
}

export function frame(
  type: number,
  flags: number,
  streamId: number,
  payload: Uint8Array = new Uint8Array(0),
): Uint8Array {
  const b = new Uint8Array(9 + payload.length);
  b[0] = payload.length >>> 16;
  b[1] = (payload.length >>> 8) & 255;
  b[2] = payload.length & 255;
  b[3] = type;
  b[4] = flags;
  new DataView(b.buffer).setUint32(5, streamId);
  b.set(payload, 9);
  return b;
}

export interface RawFrame {
  type: number;
  flags: number;
  streamId: number;
  payload: Uint8Array;
}

/** A raw HTTP/2 client connection: writes frames, collects the frames the server sends. */
export class RawH2Client {
  readonly frames: RawFrame[] = [];
  #sock: net.Socket;
  #buf = new Uint8Array(0);
  #waiters: (() => void)[] = [];
  closed = false;

  /** Bytes still to skip before frames start (the client preface, when serving). */
  #skip: number;

  private constructor(sock: net.Socket, skip = 0) {
    this.#sock = sock;
    this.#skip = skip;
    sock.on("data", (c: Uint8Array) => this.#onData(c));
    sock.on("error", () => {});
    sock.on("close", () => {
      this.closed = true;
      this.#wake();
    });
  }

  static async open(port: number, handshake = true): Promise<RawH2Client> {
    const sock = net.connect({ host: "127.0.0.1", port });
    await new Promise<void>((resolve, reject) => {
      sock.once("connect", () => resolve());
      sock.once("error", reject);
    });
    return RawH2Client.over(sock, handshake);
  }

  /** A raw client on an already-connected socket (e.g. mesh TLS); `handshake` sends preface + SETTINGS. */
  static over(sock: net.Socket, handshake = true): RawH2Client {
    const c = new RawH2Client(sock);
    if (handshake) {
      sock.write(PREFACE);
      sock.write(frame(FRAME.SETTINGS, 0, 0));
    }
    return c;
  }

  /** A raw *server* on an accepted socket: skips the client's preface, sends its SETTINGS. */
  static serving(sock: net.Socket): RawH2Client {
    const c = new RawH2Client(sock, PREFACE.length);
    sock.write(frame(FRAME.SETTINGS, 0, 0));
    return c;
  }

  write(...frames: Uint8Array[]): void {
    for (const f of frames) this.#sock.write(f);
  }

  /** Stops reading the socket (a peer that never reads what the server sends). */
  pauseReading(): void {
    this.#sock.pause();
  }

  resumeReading(): void {
    this.#sock.resume();
  }

  /** Bytes this client wrote that the server has not taken yet (grows once the server stops reading). */
  get writableLength(): number {
    return this.#sock.writableLength;
  }

  #onData(c: Uint8Array): void {
    if (this.#skip > 0) {
      const n = Math.min(this.#skip, c.length);
      this.#skip -= n;
      c = c.subarray(n);
    }
    const b = new Uint8Array(this.#buf.length + c.length);
    b.set(this.#buf);
    b.set(c, this.#buf.length);
    let o = 0;
    while (o + 9 <= b.length) {
      const len = (b[o] << 16) | (b[o + 1] << 8) | b[o + 2];
      if (o + 9 + len > b.length) break;
      const streamId = new DataView(b.buffer, b.byteOffset + o + 5, 4).getUint32(0) & 0x7fffffff;
      this.frames.push({ type: b[o + 3], flags: b[o + 4], streamId, payload: b.slice(o + 9, o + 9 + len) });
      if (b[o + 3] === FRAME.SETTINGS && (b[o + 4] & FLAG.ACK) === 0) {
        this.#sock.write(frame(FRAME.SETTINGS, FLAG.ACK, 0));
      }
      o += 9 + len;
    }
    this.#buf = b.slice(o);
    this.#wake();
  }

  #wake(): void {
    const w = this.#waiters;
    this.#waiters = [];
    for (const f of w) f();
  }

  /** Waits until a frame matches (or the connection closes / the time passes): the match or undefined. */
  async waitFor(pred: (f: RawFrame) => boolean, timeoutMs = 5000): Promise<RawFrame | undefined> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const f = this.frames.find(pred);
      if (f || this.closed || Date.now() >= deadline) return f;
      await new Promise<void>((r) => {
        const t = setTimeout(r, Math.max(1, deadline - Date.now()));
        this.#waiters.push(() => {
          clearTimeout(t);
          r();
        });
      });
    }
  }

  destroy(): void {
    this.#sock.destroy();
  }
}

/** The error code of a RST_STREAM or GOAWAY frame. */
export function errorCode(f: RawFrame): number {
  const off = f.type === FRAME.GOAWAY ? 4 : 0;
  return new DataView(f.payload.buffer, f.payload.byteOffset + off, 4).getUint32(0);
}

// --- a node:http2 client that collects everything ------------------------------------------

export interface Collected {
  status: number;
  headers: http2.IncomingHttpHeaders;
  /** END_STREAM was on the response HEADERS (a trailers-only / empty response). */
  endOnHeaders: boolean;
  body: Uint8Array;
  trailers: http2.IncomingHttpHeaders | undefined;
  rstCode: number | undefined;
}

/** Sends one request on `session` and collects the whole response. */
export function call(
  session: http2.ClientHttp2Session,
  headers: http2.OutgoingHttpHeaders,
  body: Uint8Array[] = [],
  trailers?: Record<string, string>,
): Promise<Collected> {
  return new Promise((resolve, reject) => {
    const endStream = body.length === 0 && trailers === undefined;
    const req = session.request(headers, { endStream, waitForTrailers: trailers !== undefined });
    if (trailers) req.once("wantTrailers", () => req.sendTrailers(trailers));
    const chunks: Uint8Array[] = [];
    let res: Omit<Collected, "body" | "trailers" | "rstCode"> | undefined;
    let tr: http2.IncomingHttpHeaders | undefined;
    req.on("response", (h, flags) => {
      res = { status: Number(h[":status"]), headers: h, endOnHeaders: (flags & 1) === 1 };
    });
    req.on("trailers", (t) => (tr = t));
    req.on("data", (c: Uint8Array) => chunks.push(c));
    req.on("error", () => {});
    req.on("close", () => {
      if (!res) {
        reject(new Error(`stream closed without a response (rst ${req.rstCode})`));
        return;
      }
      resolve({ ...res, body: concat(chunks), trailers: tr, rstCode: req.rstCode || undefined });
    });
    if (!endStream) {
      for (const c of body) req.write(c);
      req.end();
    }
  });
}

export function concat(chunks: Uint8Array[]): Uint8Array {
  let n = 0;
  for (const c of chunks) n += c.length;
  const out = new Uint8Array(n);
  let o = 0;
  for (const c of chunks) {
    out.set(c, o);
    o += c.length;
  }
  return out;
}

/** Opens a node:http2 client session to 127.0.0.1:port and waits until it is connected. */
export async function connectClient(port: number): Promise<http2.ClientHttp2Session> {
  const s = http2.connect(`http://127.0.0.1:${port}`);
  s.on("error", () => {});
  await new Promise<void>((resolve, reject) => {
    s.once("connect", () => resolve());
    s.once("error", reject);
  });
  return s;
}

/** Deterministic bytes so a corrupted or reordered body is detected, not just a short one. */
export function pattern(n: number, seed = 1): Uint8Array {
  const b = new Uint8Array(n);
  let x = seed >>> 0 || 1;
  for (let i = 0; i < n; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    b[i] = x & 255;
  }
  return b;
}

export function closeSession(s: http2.Http2Session): Promise<void> {
  if (s.destroyed) return Promise.resolve();
  return new Promise((r) => {
    s.once("close", () => r());
    s.close();
  });
}

/**
 * Resets a node:http2 stream (the test clients' side) with `code`. Deno 2.9.6's `close(code)` on
 * a stream whose writable side is still open first ends that side, so the peer would see a
 * complete message and no reset; ending it just before `close` makes the RST_STREAM go out.
 */
export function resetStream(stream: http2.Http2Stream, code: number): void {
  if (stream.destroyed || stream.closed) return;
  if (!stream.writableEnded) stream.end();
  stream.close(code);
}
