/**
 * HTTP/2 server side of the proxy on an already-accepted socket (plain, or mesh TLS from
 * proxy/transport/tls.ts, possibly with peeked bytes unshifted back). Each stream becomes an
 * `HttpRequest` for the `HttpService`; the response, its body and trailers are written back.
 *
 * Framing, HPACK and flow control are weft's own (session.ts). Malformed requests (RFC 9113
 * §8.1.1: connection-specific or upper-case fields, missing or repeated pseudo-headers) are reset
 * with PROTOCOL_ERROR before they reach the service; the connection's other streams go on.
 */
import type { Duplex } from "node:stream";
import {
  EMPTY_BODY,
  grpcErrorResponse,
  HttpError,
  type HttpRequest,
  type HttpResponse,
  type HttpService,
  isGrpc,
  textResponse,
} from "../message.ts";
import type { Log } from "../../core/log.ts";
import { appendSendable, parseRequestHead } from "./headers.ts";
import { StreamBody } from "./stream_body.ts";
import { writeBodyNow } from "./write_body.ts";
import { Http2StreamReset } from "./errors.ts";
import { ErrorCode } from "./frame.ts";
import { H2Session } from "./session.ts";
import type { H2Stream, StreamFailure, StreamOwner } from "./stream.ts";
import { checkRequest } from "./validate.ts";
import type { HeaderListTooLarge } from "./hpack.ts";

export interface Http2ServerOptions {
  /** SETTINGS_MAX_CONCURRENT_STREAMS; streams beyond it are refused (REFUSED_STREAM). Default 250. */
  maxConcurrentStreams?: number;
  /** Largest request field list (RFC 9113 §6.5.2 size), advertised and enforced with 431. Default 16 KiB. */
  maxHeaderListSize?: number;
  /** Most fields in one request head; more is answered with RST_STREAM ENHANCE_YOUR_CALM. Default 200. */
  maxHeaderCount?: number;
  /** SETTINGS_INITIAL_WINDOW_SIZE: bytes a client may send per stream before we read them. Default 65535. */
  initialWindowSize?: number;
  /** Connection receive window. Default 1 MiB. */
  connectionWindow?: number;
  /** The client's preface and SETTINGS must arrive within this many ms, else GOAWAY. Default 10 s. */
  prefaceTimeoutMs?: number;
  /** A request's HEADERS + CONTINUATION must be complete within this many ms, else GOAWAY. Default 10 s. */
  headerTimeoutMs?: number;
  /** A connection with no open stream for this many ms is closed (FIN, no GOAWAY). Default 10 min. */
  idleTimeoutMs?: number;
  /** See SessionOptions: socket bytes queued above which reading pauses and DATA waits. Default 256 KiB. */
  writeHighWater?: number;
  /** Aborted when the proxy drains: the connection then closes as `close(DRAIN_GRACE_MS)` does. */
  drain?: AbortSignal;
  log?: Log;
}

/** How long open streams may run on after the proxy starts draining. */
export const DRAIN_GRACE_MS = 10_000;

export interface Http2ServerConnection {
  /**
   * Refuses new streams, lets open streams finish for up to `graceMs`, then closes the
   * connection. Resolves when it is closed.
   */
  close(graceMs: number): Promise<void>;
  /** Resolves when the connection has closed, for any reason. */
  readonly closed: Promise<void>;
  /** Streams currently open. */
  readonly activeStreams: number;
}

interface Limits {
  maxHeaderListSize: number;
  maxHeaderCount: number;
  log: Log | undefined;
}

export function serveHttp2(
  socket: Duplex,
  service: HttpService,
  opts: Http2ServerOptions = {},
): Http2ServerConnection {
  const limits: Limits = {
    maxHeaderListSize: opts.maxHeaderListSize ?? 16 * 1024,
    maxHeaderCount: opts.maxHeaderCount ?? 200,
    log: opts.log,
  };
  const session = new H2Session(socket, {
    role: "server",
    maxConcurrentStreams: opts.maxConcurrentStreams ?? 250,
    initialWindowSize: opts.initialWindowSize ?? 65535,
    connectionWindow: opts.connectionWindow ?? 1 << 20,
    maxHeaderListSize: limits.maxHeaderListSize,
    maxHeaderCount: limits.maxHeaderCount,
    prefaceTimeoutMs: opts.prefaceTimeoutMs,
    headerTimeoutMs: opts.headerTimeoutMs,
    idleTimeoutMs: opts.idleTimeoutMs,
    writeHighWater: opts.writeHighWater,
    log: opts.log,
    onStream: (stream, fields, endStream) => handleStream(stream, fields, endStream, service, limits),
    onStreamTooLarge: (stream, e) => tooLarge(stream, e, limits),
    onGoaway: (code) => {
      // "No more streams from me": finish what is open, then close.
      opts.log?.("debug", `h2 server: client sent GOAWAY (code ${code})`);
      session.closeWhenIdle();
    },
  });
  const conn: Http2ServerConnection = {
    closed: session.closed,
    get activeStreams() {
      return session.activeStreams;
    },
    async close(graceMs: number): Promise<void> {
      // No GOAWAY: Deno 2.9.6's node:http2 (nghttp2) aborts a process that gets one while it has
      // streams open, and our clients include such processes (Deno applications; the proxies' own
      // control-plane channels were grpc-js until proxy/grpc/). Seen as proxies crashing when a
      // control-plane pod drained.
      // New streams get REFUSED_STREAM (safe to retry elsewhere); the connection ends, with a FIN,
      // once the open ones finish.
      session.closeWhenIdle();
      const timer = setTimeout(() => session.destroy("closed after the grace period"), graceMs);
      await session.closed;
      clearTimeout(timer);
    },
  };
  const drain = opts.drain;
  if (drain) {
    const onDrain = () => void conn.close(DRAIN_GRACE_MS);
    if (drain.aborted) onDrain();
    else {
      drain.addEventListener("abort", onDrain, { once: true });
      void session.closed.then(() => drain.removeEventListener("abort", onDrain));
    }
  }
  return conn;
}

function tooLarge(stream: H2Stream, e: HeaderListTooLarge, limits: Limits): void {
  if (e.count > limits.maxHeaderCount) {
    stream.reset(ErrorCode.ENHANCE_YOUR_CALM);
    return;
  }
  refuse(stream, 431, `request header list is ${e.size} bytes, limit ${limits.maxHeaderListSize}`);
}

function handleStream(
  stream: H2Stream,
  fields: string[],
  requestEnded: boolean,
  service: HttpService,
  limits: Limits,
): void {
  const bad = checkRequest(fields);
  if (bad !== undefined) {
    limits.log?.("debug", `h2 server: malformed request on stream ${stream.id}: ${bad}`);
    stream.reset(ErrorCode.PROTOCOL_ERROR);
    return;
  }
  const head = parseRequestHead(fields);
  if (head.method === "CONNECT") {
    refuse(stream, 405, "CONNECT is not supported");
    return;
  }
  if (head.contentLength !== undefined) stream.expectedLength = head.contentLength;
  const body = requestEnded
    ? EMPTY_BODY
    : new StreamBody(stream, head.contentLength, { discardOnCancel: true });
  const req: HttpRequest = {
    method: head.method,
    scheme: head.scheme,
    authority: head.authority,
    path: head.path,
    version: "HTTP/2",
    headers: head.headers,
    body,
  };
  const ex = new ServedExchange();
  stream.owner = ex;
  void serve(ex, stream, req, service, limits.log);
}

/**
 * One request being served: the stream's owner. A stream that fails before the whole response is
 * queued (a client RST_STREAM, the connection dropping) aborts the service and whatever it
 * started upstream.
 */
class ServedExchange implements StreamOwner {
  readonly ac = new AbortController();
  /** Set once the whole response is queued. */
  completed = false;

  streamClosed(f: StreamFailure | undefined): void {
    // A clean finish (both sides ended) means the whole response went out: nothing to abort, and
    // no error to build (this runs for every stream, often before `completed` is set).
    if (f === undefined || this.completed || this.ac.signal.aborted) return;
    const code = f.kind === "reset" || f.kind === "refused" ? f.code : ErrorCode.INTERNAL_ERROR;
    this.ac.abort(new Http2StreamReset(`client reset the stream (code ${code})`, code));
  }
}

/** Calls the service and writes its response (one async function per stream, no promise chain). */
async function serve(
  ex: ServedExchange,
  stream: H2Stream,
  req: HttpRequest,
  service: HttpService,
  log: Log | undefined,
): Promise<void> {
  let res: HttpResponse | undefined;
  let failure: unknown;
  try {
    res = await service(req, ex.ac.signal);
  } catch (e) {
    if (stream.closed) return ex.streamClosed(stream.failure);
    failure = e;
  }
  let ok: boolean;
  try {
    const r = respond(stream, req, res ?? errorResponse(failure, req, log));
    ok = typeof r === "boolean" ? r : await r;
  } catch (e) {
    log?.("warn", `h2 server: writing response failed: ${(e as Error).message}`);
    stream.reset(ErrorCode.INTERNAL_ERROR);
    return ex.streamClosed(stream.failure);
  }
  if (!ok) return ex.streamClosed(stream.failure);
  ex.completed = true;
  // The response is complete: whatever the client still sends is not needed (§8.1).
  if (!stream.remoteEnded && !stream.closed) {
    stream.discard();
    stream.reset(ErrorCode.NO_ERROR);
  }
}

/** Answers without looking at the request body; whatever the client still sends is discarded. */
function refuse(stream: H2Stream, status: number, message: string): void {
  stream.discard();
  stream.sendHeaders([":status", String(status), "content-type", "text/plain; charset=utf-8"], false);
  stream.sendData(new TextEncoder().encode(message), true).then(() => {
    if (!stream.remoteEnded && !stream.closed) stream.reset(ErrorCode.NO_ERROR);
  }, () => {});
}

/** True (or a promise of it, when a body is written) when the whole response was queued. */
function respond(stream: H2Stream, req: HttpRequest, res: HttpResponse): boolean | Promise<boolean> {
  if (stream.closed) {
    res.body.cancel(new Error("client went away"));
    res.upgrade?.destroy();
    return false;
  }
  if (res.upgrade !== undefined || res.status < 200 || res.status > 599) {
    // An HTTP/2 stream cannot switch protocols; an upstream that tries is a bad gateway.
    res.upgrade?.destroy();
    res.body.cancel();
    res = textResponse(502, `upstream answered ${res.status}, which cannot be sent over HTTP/2`);
  }
  const out = [":status", String(res.status)];
  appendSendable(out, res.headers);
  const body = res.body;
  const bodyForbidden = req.method === "HEAD" || res.status === 204 || res.status === 304;
  if (bodyForbidden || (body.length === 0 && body.trailers === undefined)) {
    // Headers with END_STREAM: also how a gRPC trailers-only response must look on the wire.
    stream.sendHeaders(out, true);
    if (bodyForbidden && body !== EMPTY_BODY) body.cancel();
    return true;
  }
  stream.sendHeaders(out, false);
  return writeBodyNow(stream, body);
}

/** Per the gRPC spec's HTTP-to-gRPC status mapping. */
function grpcCodeForHttp(status: number): number {
  switch (status) {
    case 400:
      return 13; // INTERNAL
    case 401:
      return 16; // UNAUTHENTICATED
    case 403:
      return 7; // PERMISSION_DENIED
    case 404:
      return 12; // UNIMPLEMENTED
    case 429:
    case 502:
    case 503:
    case 504:
      return 14; // UNAVAILABLE
    default:
      return 2; // UNKNOWN
  }
}

function errorResponse(e: unknown, req: HttpRequest, log: Log | undefined): HttpResponse {
  let status = 502;
  let grpc: number | undefined;
  let message: string;
  if (e instanceof HttpError) {
    status = e.status;
    grpc = e.grpcStatus;
    message = e.message;
  } else {
    message = e instanceof Error ? e.message : String(e);
    log?.("warn", `h2 server: request ${req.method} ${req.authority}${req.path} failed: ${message}`);
  }
  if (isGrpc(req.headers)) return grpcErrorResponse(grpc ?? grpcCodeForHttp(status), message);
  return textResponse(status, message);
}
