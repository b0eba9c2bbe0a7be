/**
 * HTTP/2 client for one endpoint: one session multiplexes every request; the socket comes from a
 * connect function passed in (plain TCP, or mesh TLS from proxy/transport/tls.ts). When the
 * server sends GOAWAY or the connection fails, the next request opens a new session while
 * streams already admitted on the old one finish there.
 *
 * Streams beyond the server's SETTINGS_MAX_CONCURRENT_STREAMS wait inside nghttp2 until a slot
 * frees, so a burst does not fail; flow control is node:http2's, driven by how fast the response
 * body is read (see StreamBody).
 */
import * as http2 from "node:http2";
import type * as net from "node:net";
import { type HttpRequest, type HttpResponse, isGrpc } from "../message.ts";
import type { Log } from "../../log.ts";
import { appendSendable, parseResponseHead } from "./headers.ts";
import { codeName, StreamBody } from "./stream_body.ts";
import { writeBody } from "./write_body.ts";
import { resetStream } from "./reset_stream.ts";
import { Http2ClientError } from "./errors.ts";
import { clearStaleSecureConnecting } from "./socket_fix.ts";
import { coalesceWrites } from "./write_coalesce.ts";

const { NGHTTP2_FLAG_END_STREAM, NGHTTP2_CANCEL, NGHTTP2_REFUSED_STREAM } = http2.constants;

/** Opens the transport to the endpoint; must reject (not hang) when `signal` aborts. */
export type Connect = (signal: AbortSignal) => Promise<net.Socket>;

export interface Http2ConnectionOptions {
  connect: Connect;
  /** Name for errors and logs (e.g. "10.0.0.7:8080"). */
  name: string;
  /** `:authority` for requests that have none. */
  defaultAuthority?: string;
  /** Bound on connecting the transport. Default 10 s. */
  connectTimeoutMs?: number;
  /** SETTINGS_INITIAL_WINDOW_SIZE for response bodies. Default 65535. */
  initialWindowSize?: number;
  /** Largest response field list we accept (advertised). Default 64 KiB. */
  maxHeaderListSize?: number;
  /** Most fields in one response head. Default 200. */
  maxHeaderCount?: number;
  /** Bound on what node:http2 buffers for one session. Default 32 MiB. */
  maxSessionMemoryMiB?: number;
  log?: Log;
}

interface Session {
  h2: http2.ClientHttp2Session;
  socket: net.Socket;
  /** Called when `active` drops to 0 (set while closing). */
  onIdle: (() => void) | undefined;
  /** Highest stream id the server said it may process (GOAWAY), or Infinity. */
  lastStreamId: number;
  active: number;
}

function ignore(): void {}

export class Http2Connection {
  #opts: Http2ConnectionOptions;
  #current: Session | undefined;
  #connecting: Promise<Session> | undefined;
  /** Sessions that got GOAWAY or an error but may still carry streams. */
  #draining = new Set<Session>();
  #closed = false;
  #connectAbort = new AbortController();

  constructor(opts: Http2ConnectionOptions) {
    this.#opts = opts;
  }

  /** Requests in flight over all sessions. */
  get activeStreams(): number {
    let n = this.#current?.active ?? 0;
    for (const s of this.#draining) n += s.active;
    return n;
  }

  /** True while a session is up and accepting new streams. */
  get connected(): boolean {
    return this.#current !== undefined;
  }

  /** The `HttpService` of this endpoint. */
  request = async (req: HttpRequest, signal: AbortSignal): Promise<HttpResponse> => {
    signal.throwIfAborted();
    const session = await this.#session(signal);
    signal.throwIfAborted();
    return this.#send(session, req, signal);
  };

  /** Stops new requests, lets open streams finish for up to `graceMs`, then closes everything. */
  async close(graceMs: number): Promise<void> {
    this.#closed = true;
    this.#connectAbort.abort(new Error("connection closed"));
    const all = [...this.#draining];
    if (this.#current) all.push(this.#current);
    this.#current = undefined;
    await Promise.all(all.map((s) => closeQuietly(s, graceMs)));
  }

  #session(signal: AbortSignal): Promise<Session> {
    if (this.#closed) {
      return Promise.reject(new Http2ClientError(`${this.#opts.name}: connection closed`, "closed", true));
    }
    const cur = this.#current;
    if (cur !== undefined) return Promise.resolve(cur);
    this.#connecting ??= this.#open().finally(() => (this.#connecting = undefined));
    const c = this.#connecting;
    if (signal.aborted) return Promise.reject(signal.reason);
    // A caller that gives up stops waiting; the connect itself goes on for the others.
    return new Promise((resolve, reject) => {
      const onAbort = () => reject(signal.reason);
      signal.addEventListener("abort", onAbort, { once: true });
      c.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
    });
  }

  async #open(): Promise<Session> {
    const o = this.#opts;
    const timeoutMs = o.connectTimeoutMs ?? 10_000;
    const signal = AbortSignal.any([this.#connectAbort.signal, AbortSignal.timeout(timeoutMs)]);
    let socket: net.Socket;
    try {
      socket = await o.connect(signal);
    } catch (e) {
      const why = signal.aborted && !this.#closed ? `timed out after ${timeoutMs}ms` : (e as Error).message;
      throw new Http2ClientError(`${o.name}: connect failed: ${why}`, "connect_failed", true);
    }
    if (this.#closed) {
      socket.destroy();
      throw new Http2ClientError(`${o.name}: connection closed`, "closed", true);
    }
    clearStaleSecureConnecting(socket);
    coalesceWrites(socket);
    const h2 = http2.connect(`http://${o.defaultAuthority ?? "localhost"}`, {
      createConnection: () => socket,
      settings: {
        enablePush: false,
        initialWindowSize: o.initialWindowSize ?? 65535,
        maxHeaderListSize: o.maxHeaderListSize ?? 64 * 1024,
      },
      maxHeaderListPairs: (o.maxHeaderCount ?? 200) + 4,
      maxSessionMemory: o.maxSessionMemoryMiB ?? 32,
    });
    const s: Session = { h2, socket, onIdle: undefined, lastStreamId: Infinity, active: 0 };
    const retire = () => {
      if (this.#current === s) this.#current = undefined;
      if (h2.destroyed) return;
      this.#draining.add(s);
      // Streams the server admitted finish; then the socket is dropped (no GOAWAY: see closeQuietly).
      if (s.active === 0) socket.destroy();
      else s.onIdle = () => socket.destroy();
    };
    h2.on("error", (e: Error) => o.log?.("debug", `h2 client ${o.name}: connection error: ${e.message}`));
    h2.on("goaway", (code: number, lastStreamId: number) => {
      s.lastStreamId = lastStreamId;
      o.log?.("debug", `h2 client ${o.name}: GOAWAY ${codeName(code)} last stream ${lastStreamId}`);
      retire();
    });
    h2.once("close", () => {
      if (this.#current === s) this.#current = undefined;
      this.#draining.delete(s);
    });
    // Until the server's SETTINGS arrive nghttp2 assumes 100 concurrent streams; a burst above
    // the real limit would be refused, so new streams wait for them (one round trip, once).
    await new Promise<void>((resolve, reject) => {
      const fail = (why: string) => {
        cleanup();
        socket.destroy(); // not h2.destroy(): that sends GOAWAY (see closeQuietly)
        reject(new Http2ClientError(`${o.name}: HTTP/2 handshake failed: ${why}`, "connect_failed", true));
      };
      const onSettings = () => {
        cleanup();
        resolve();
      };
      const onClose = () => fail("connection closed");
      const onError = (e: Error) => fail(e.message);
      const timer = setTimeout(() => fail(`no SETTINGS within ${timeoutMs}ms`), timeoutMs);
      const cleanup = () => {
        clearTimeout(timer);
        h2.off("remoteSettings", onSettings);
        h2.off("close", onClose);
        h2.off("error", onError);
      };
      h2.once("remoteSettings", onSettings);
      h2.once("close", onClose);
      h2.once("error", onError);
    });
    if (this.#closed) {
      socket.destroy();
      throw new Http2ClientError(`${o.name}: connection closed`, "closed", true);
    }
    this.#current = s;
    return s;
  }

  #send(s: Session, req: HttpRequest, signal: AbortSignal): Promise<HttpResponse> {
    const name = this.#opts.name;
    const out = [":method", req.method, ":scheme", req.scheme ?? "http", ":path", req.path];
    const authority = req.authority || this.#opts.defaultAuthority;
    if (authority) out.push(":authority", authority);
    const hasTe = appendSendable(out, req.headers);
    // gRPC servers may insist on it; it is hop-by-hop, so the server side dropped it.
    if (!hasTe && isGrpc(req.headers)) out.push("te", "trailers");
    const body = req.body;
    const empty = body.length === 0 && body.trailers === undefined;
    let stream: http2.ClientHttp2Stream;
    try {
      stream = s.h2.request(out as unknown as http2.OutgoingHttpHeaders, {
        endStream: empty,
        waitForTrailers: !empty,
      });
    } catch (e) {
      // The session went away between picking it and using it: nothing was sent.
      if (this.#current === s) this.#current = undefined;
      body.cancel();
      return Promise.reject(
        new Http2ClientError(
          `${name}: connection unusable: ${(e as Error).message}`,
          "connection_lost",
          true,
        ),
      );
    }
    s.active++;
    stream.on("error", ignore);
    if (!empty) writeBody(stream, body).catch(ignore);
    return new Promise<HttpResponse>((resolve, reject) => {
      let answered = false;
      const onAbort = () => {
        resetStream(stream, NGHTTP2_CANCEL);
        if (!answered) {
          answered = true;
          reject(signal.reason);
        }
      };
      signal.addEventListener("abort", onAbort, { once: true });
      stream.once("response", (_h: unknown, flags: number, raw: string[]) => {
        if (answered) return;
        answered = true;
        const head = parseResponseHead(raw);
        const ended = (flags & NGHTTP2_FLAG_END_STREAM) !== 0;
        const rb = ended
          ? new StreamBody(stream, 0, "response body", { ended: true })
          : new StreamBody(stream, head.contentLength, `response body from ${name}`);
        resolve({ status: head.status, headers: head.headers, body: rb });
      });
      stream.once("close", () => {
        if (--s.active === 0) s.onIdle?.();
        signal.removeEventListener("abort", onAbort);
        if (answered) return;
        answered = true;
        reject(streamFailure(name, s, stream));
      });
    });
  }
}

function streamFailure(name: string, s: Session, stream: http2.ClientHttp2Stream): Http2ClientError {
  const code = stream.rstCode ?? 0;
  const id = stream.id;
  if (code === NGHTTP2_REFUSED_STREAM) {
    return new Http2ClientError(`${name}: stream refused`, "refused", true, code);
  }
  if (id === undefined || id > s.lastStreamId) {
    return new Http2ClientError(`${name}: GOAWAY before the stream was processed`, "refused", true, code);
  }
  if (s.h2.destroyed && code === 0) {
    return new Http2ClientError(`${name}: connection lost before a response`, "connection_lost", false);
  }
  return new Http2ClientError(
    `${name}: stream reset before a response (${codeName(code)})`,
    "reset",
    false,
    code,
  );
}

/**
 * Lets the session's streams finish (up to `graceMs`), then drops the socket without sending
 * GOAWAY: a Deno 2.9.6 node:http2 server (grpc-js included) that receives GOAWAY on a
 * connection which carried more than about a hundred streams aborts its process (see
 * goaway_guard.ts). Closing TCP without GOAWAY is allowed (RFC 9113 §5.4.1 says SHOULD).
 */
function closeQuietly(s: Session, graceMs: number): Promise<void> {
  if (s.h2.destroyed || s.socket.destroyed) return Promise.resolve();
  return new Promise((resolve) => {
    const drop = () => {
      clearTimeout(timer);
      s.socket.destroy();
      resolve();
    };
    const timer = setTimeout(drop, graceMs);
    if (s.active === 0) drop();
    else s.onIdle = drop;
  });
}
