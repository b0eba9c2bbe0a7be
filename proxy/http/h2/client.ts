/**
 * HTTP/2 client for one endpoint: one session multiplexes every request; the socket comes from a
 * connect function passed in (plain TCP, or mesh TLS from proxy/transport/tls.ts). When the
 * server sends GOAWAY or the connection fails, the next request opens a new session while
 * streams already admitted on the old one finish there.
 *
 * Streams beyond the server's SETTINGS_MAX_CONCURRENT_STREAMS wait for a free slot, so a burst
 * does not fail; flow control is the session's, driven by how fast the response body is read.
 */
import type * as net from "node:net";
import { EMPTY_BODY, type HttpRequest, type HttpResponse, isGrpc } from "../message.ts";
import type { Log } from "../../core/log.ts";
import { appendSendable, parseResponseHead } from "./headers.ts";
import { StreamBody } from "./stream_body.ts";
import { writeBodyNow } from "./write_body.ts";
import { Http2ClientError } from "./errors.ts";
import { ErrorCode, errorCodeName } from "./frame.ts";
import { H2Session } from "./session.ts";
import type { H2Stream, StreamFailure, StreamOwner } from "./stream.ts";
import { checkResponse } from "./validate.ts";

/** Opens the transport to the endpoint; must reject (not hang) when `signal` aborts. */
export type Connect = (signal: AbortSignal) => Promise<net.Socket>;

export interface Http2ConnectionOptions {
  connect: Connect;
  /** Name for errors and logs (e.g. "10.0.0.7:8080"). */
  name: string;
  /** `:authority` for requests that have none. */
  defaultAuthority?: string;
  /** Bound on connecting the transport and the SETTINGS exchange. Default 10 s. */
  connectTimeoutMs?: number;
  /** SETTINGS_INITIAL_WINDOW_SIZE for response bodies. Default 65535. */
  initialWindowSize?: number;
  /** Connection receive window. Default 1 MiB. */
  connectionWindow?: number;
  /** Largest response field list we accept (advertised). Default 64 KiB. */
  maxHeaderListSize?: number;
  /** Most fields in one response head. Default 200. */
  maxHeaderCount?: number;
  /**
   * PING a session that carries streams every `intervalMs`; no ACK within `timeoutMs` closes it and
   * fails its streams (a peer that vanished without a FIN). Off when absent (gRPC channels set it).
   */
  keepAlive?: { intervalMs: number; timeoutMs: number };
  /** Called when a keep-alive PING went unanswered (the connection is being closed). */
  onKeepAliveTimeout?: () => void;
  log?: Log;
}

export class Http2Connection {
  #opts: Http2ConnectionOptions;
  #current: H2Session | undefined;
  #connecting: Promise<H2Session> | undefined;
  /** Sessions that stopped taking new streams but may still carry some. */
  #draining = new Set<H2Session>();
  #closed = false;
  #connectAbort = new AbortController();

  constructor(opts: Http2ConnectionOptions) {
    this.#opts = opts;
  }

  /** Requests in flight over all sessions. */
  get activeStreams(): number {
    let n = this.#current?.activeStreams ?? 0;
    for (const s of this.#draining) n += s.activeStreams;
    return n;
  }

  /** True while a session is up and accepting new streams. */
  get connected(): boolean {
    return this.#current !== undefined && this.#current.acceptingStreams;
  }

  /** The `HttpService` of this endpoint. */
  request = async (req: HttpRequest, signal: AbortSignal): Promise<HttpResponse> => {
    for (;;) {
      signal.throwIfAborted();
      const session = await this.#session(signal);
      // Woken callers re-check: another one may have taken the slot first.
      while (!session.hasSlot && session.acceptingStreams) await session.waitForSlot(signal);
      signal.throwIfAborted();
      // The session may have gone away (GOAWAY, error) while we waited: take the next one.
      if (!session.acceptingStreams) {
        this.#retire(session);
        continue;
      }
      // Awaited, not returned: resolving an async function with a promise costs an extra job and then().
      return await this.#send(session, req, signal);
    }
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

  #retire(s: H2Session): void {
    if (this.#current === s) this.#current = undefined;
    if (s.destroyed) return;
    this.#draining.add(s);
    s.closeWhenIdle();
  }

  #session(signal: AbortSignal): Promise<H2Session> {
    if (this.#closed) {
      return Promise.reject(new Http2ClientError(`${this.#opts.name}: connection closed`, "closed", true));
    }
    const cur = this.#current;
    if (cur !== undefined) {
      if (cur.acceptingStreams) return Promise.resolve(cur);
      this.#retire(cur);
    }
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

  async #open(): Promise<H2Session> {
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
    const settings = Promise.withResolvers<void>();
    const s = new H2Session(socket, {
      role: "client",
      maxConcurrentStreams: 0,
      initialWindowSize: o.initialWindowSize ?? 65535,
      connectionWindow: o.connectionWindow ?? 1 << 20,
      maxHeaderListSize: o.maxHeaderListSize ?? 64 * 1024,
      maxHeaderCount: o.maxHeaderCount ?? 200,
      log: o.log,
      onRemoteSettings: () => settings.resolve(),
      onGoaway: (code, last) => {
        o.log?.("debug", `h2 client ${o.name}: GOAWAY ${errorCodeName(code)} last stream ${last}`);
        this.#retire(s);
      },
    });
    s.closed.then(() => {
      if (this.#current === s) this.#current = undefined;
      this.#draining.delete(s);
      settings.reject(new Error("connection closed"));
    });
    settings.promise.catch(() => {});
    // The server's SETTINGS (its stream limit) come before the first stream, once per connection.
    const timer = setTimeout(
      () => settings.reject(new Error(`no SETTINGS within ${timeoutMs}ms`)),
      timeoutMs,
    );
    try {
      await settings.promise;
    } catch (e) {
      s.destroy();
      throw new Http2ClientError(
        `${o.name}: HTTP/2 handshake failed: ${(e as Error).message}`,
        "connect_failed",
        true,
      );
    } finally {
      clearTimeout(timer);
    }
    if (this.#closed) {
      s.destroy();
      throw new Http2ClientError(`${o.name}: connection closed`, "closed", true);
    }
    this.#current = s;
    if (o.keepAlive) keepAlive(s, o.keepAlive, o.name, o.log, o.onKeepAliveTimeout);
    return s;
  }

  #send(s: H2Session, req: HttpRequest, signal: AbortSignal): Promise<HttpResponse> {
    const name = this.#opts.name;
    const out = [":method", req.method, ":scheme", req.scheme ?? "http", ":path", req.path];
    const authority = req.authority || this.#opts.defaultAuthority;
    if (authority) out.push(":authority", authority);
    const hasTe = appendSendable(out, req.headers);
    // gRPC servers may insist on it; it is hop-by-hop, so the server side dropped it.
    if (!hasTe && isGrpc(req.headers)) out.push("te", "trailers");
    const body = req.body;
    const empty = body.length === 0 && body.trailers === undefined;
    let stream: H2Stream;
    try {
      stream = s.request(out, empty);
    } catch (e) {
      // The session went away between picking it and using it: nothing was sent.
      this.#retire(s);
      body.cancel();
      return Promise.reject(
        new Http2ClientError(
          `${name}: connection unusable: ${(e as Error).message}`,
          "connection_lost",
          true,
        ),
      );
    }
    const ex = new ResponseExchange(stream, signal, name, req.method === "HEAD");
    signal.addEventListener("abort", ex, { once: true });
    stream.owner = ex;
    if (!empty) {
      const sent = writeBodyNow(stream, body);
      if (typeof sent !== "boolean") sent.catch(() => {});
    }
    return ex.response.promise;
  }
}

/**
 * One request's wait for its response: the stream's owner and the signal's abort listener in one
 * object (no closure per event per request).
 */
class ResponseExchange implements StreamOwner {
  readonly response = Promise.withResolvers<HttpResponse>();
  #answered = false;
  readonly #stream: H2Stream;
  readonly #signal: AbortSignal;
  readonly #name: string;
  readonly #noBody: boolean;

  constructor(stream: H2Stream, signal: AbortSignal, name: string, noBody: boolean) {
    this.#stream = stream;
    this.#signal = signal;
    this.#name = name;
    this.#noBody = noBody;
  }

  /** The caller's signal aborted. */
  handleEvent(): void {
    if (!this.#answered) {
      this.#answered = true;
      this.response.reject(this.#signal.reason);
    }
    this.#stream.reset(ErrorCode.CANCEL);
  }

  streamHead(fields: string[], endStream: boolean): void {
    if (this.#answered) return;
    const stream = this.#stream;
    const bad = checkResponse(fields);
    if (bad !== undefined) {
      this.#answered = true;
      stream.reset(ErrorCode.PROTOCOL_ERROR);
      this.response.reject(
        new Http2ClientError(`${this.#name}: malformed response: ${bad}`, "malformed_response", false),
      );
      return;
    }
    const head = parseResponseHead(fields);
    if (head.status < 200 && !endStream) return; // informational: the real head follows
    stream.headReceived = true;
    this.#answered = true;
    if (!this.#noBody && head.status !== 204 && head.status !== 304 && head.contentLength !== undefined) {
      stream.expectedLength = head.contentLength;
    }
    const rb = endStream ? EMPTY_BODY : new StreamBody(stream, head.contentLength);
    this.response.resolve({ status: head.status, headers: head.headers, body: rb });
  }

  streamClosed(f: StreamFailure | undefined): void {
    this.#signal.removeEventListener("abort", this);
    if (this.#answered) return;
    this.#answered = true;
    this.response.reject(streamFailure(this.#name, f));
  }
}

function streamFailure(name: string, f: StreamFailure | undefined): Http2ClientError {
  if (f === undefined) {
    return new Http2ClientError(`${name}: stream ended without a response`, "reset", false);
  }
  switch (f.kind) {
    case "refused":
      return new Http2ClientError(
        `${name}: stream refused (${errorCodeName(f.code)})`,
        "refused",
        true,
        f.code,
      );
    case "connection":
      return new Http2ClientError(
        `${name}: connection lost before a response: ${f.message}`,
        "connection_lost",
        false,
      );
    case "reset":
      return new Http2ClientError(
        `${name}: stream reset before a response (${errorCodeName(f.code)})`,
        "reset",
        false,
        f.code,
      );
  }
}

/** See `Http2ConnectionOptions.keepAlive`; stops when the session closes. */
function keepAlive(
  s: H2Session,
  k: { intervalMs: number; timeoutMs: number },
  name: string,
  log?: Log,
  onTimeout?: () => void,
): void {
  let deadline: ReturnType<typeof setTimeout> | undefined;
  const tick = setInterval(() => {
    // Only while streams are open, as gRPC clients do by default: an idle connection costs nothing.
    if (deadline !== undefined || s.activeStreams === 0) return;
    deadline = setTimeout(() => {
      log?.("debug", `h2 client ${name}: no PING ACK within ${k.timeoutMs}ms, closing the connection`);
      s.destroy(`no PING ACK within ${k.timeoutMs}ms`);
      onTimeout?.();
    }, k.timeoutMs);
    s.ping().then(() => {
      clearTimeout(deadline);
      deadline = undefined;
    });
  }, k.intervalMs);
  s.closed.then(() => {
    clearInterval(tick);
    clearTimeout(deadline);
  });
}

/**
 * Lets the session's streams finish (up to `graceMs`), then closes the socket without sending
 * GOAWAY: a Deno 2.9.6 node:http2 server (grpc-js included) that receives GOAWAY on a connection
 * which carried more than about a hundred streams aborts its process. Closing TCP without GOAWAY
 * is allowed (RFC 9113 §5.4.1 says SHOULD).
 */
async function closeQuietly(s: H2Session, graceMs: number): Promise<void> {
  if (s.destroyed) return;
  s.closeWhenIdle();
  const timer = setTimeout(() => s.destroy("connection closed"), graceMs);
  await s.closed;
  clearTimeout(timer);
}
