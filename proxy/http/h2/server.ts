/**
 * HTTP/2 server side of the proxy on an already-accepted socket (plain, or mesh TLS from
 * proxy/transport/tls.ts, possibly with peeked bytes unshifted back). Each stream becomes an
 * `HttpRequest` for the `HttpService`; the response, its body and trailers are written back.
 *
 * node:http2 (nghttp2 inside Deno) does the framing, HPACK, flow control and the protocol checks
 * of RFC 9113 §8: a malformed request (connection-specific field, upper-case name, missing or
 * repeated pseudo-header) never reaches this code; nghttp2 answers it with GOAWAY PROTOCOL_ERROR.
 */
import * as http2 from "node:http2";
import type * as net from "node:net";
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
import type { Log } from "../../log.ts";
import { appendSendable, parseRequestHead } from "./headers.ts";
import { StreamBody } from "./stream_body.ts";
import { writeBody } from "./write_body.ts";
import { resetStream } from "./reset_stream.ts";
import { Http2StreamReset } from "./errors.ts";
import { clearStaleSecureConnecting } from "./socket_fix.ts";
import { guardGoaway } from "./goaway_guard.ts";
import { coalesceWrites } from "./write_coalesce.ts";

const {
  NGHTTP2_FLAG_END_STREAM,
  NGHTTP2_INTERNAL_ERROR,
} = http2.constants;

export interface Http2ServerOptions {
  /** SETTINGS_MAX_CONCURRENT_STREAMS; streams beyond it are refused by nghttp2. Default 250. */
  maxConcurrentStreams?: number;
  /** Largest request field list (RFC 9113 §6.5.2 size), advertised and enforced with 431. Default 16 KiB. */
  maxHeaderListSize?: number;
  /** Most fields in one request head; more is answered with RST_STREAM ENHANCE_YOUR_CALM. Default 200. */
  maxHeaderCount?: number;
  /** SETTINGS_INITIAL_WINDOW_SIZE: bytes a client may send per stream before we read them. Default 65535. */
  initialWindowSize?: number;
  /** Bound on what node:http2 buffers for the session (nghttp2 state + queued frames). Default 32 MiB. */
  maxSessionMemoryMiB?: number;
  log?: Log;
}

export interface Http2ServerConnection {
  /**
   * Sends GOAWAY (no new streams), lets open streams finish for up to `graceMs`, then closes the
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
  log: Log | undefined;
}

export function serveHttp2(
  socket: net.Socket,
  service: HttpService,
  opts: Http2ServerOptions = {},
): Http2ServerConnection {
  const maxHeaderListSize = opts.maxHeaderListSize ?? 16 * 1024;
  const limits: Limits = { maxHeaderListSize, log: opts.log };
  clearStaleSecureConnecting(socket);
  coalesceWrites(socket);
  // The client's GOAWAY never reaches nghttp2 (it can abort the process, see goaway_guard.ts);
  // it means "no more streams from me", so we close gracefully from our side instead.
  guardGoaway(socket, true, (g) => {
    opts.log?.("debug", `h2 server: client sent GOAWAY (code ${g.code})`);
    if (g.code !== 0) socket.destroy();
    else if (!session.closed && !session.destroyed) session.close();
  });
  const session = http2.performServerHandshake(socket, {
    settings: {
      maxConcurrentStreams: opts.maxConcurrentStreams ?? 250,
      maxHeaderListSize,
      initialWindowSize: opts.initialWindowSize ?? 65535,
      enablePush: false,
    },
    maxHeaderListPairs: (opts.maxHeaderCount ?? 200) + 4,
    maxSessionMemory: opts.maxSessionMemoryMiB ?? 32,
  });
  let active = 0;
  let resolveClosed!: () => void;
  const closed = new Promise<void>((r) => (resolveClosed = r));
  session.once("close", () => resolveClosed());
  session.on("error", (e: Error) => opts.log?.("debug", `h2 server connection error: ${e.message}`));
  session.on("stream", (stream: http2.ServerHttp2Stream, _h: unknown, flags: number, raw: string[]) => {
    active++;
    stream.once("close", () => active--);
    handleStream(stream, flags, raw, service, limits);
  });

  return {
    closed,
    get activeStreams() {
      return active;
    },
    async close(graceMs: number): Promise<void> {
      if (!session.closed && !session.destroyed) session.close();
      const timer = setTimeout(() => {
        if (!session.destroyed) session.destroy();
        socket.destroy();
      }, graceMs);
      await closed;
      clearTimeout(timer);
    },
  };
}

function ignore(): void {}

function handleStream(
  stream: http2.ServerHttp2Stream,
  flags: number,
  raw: string[],
  service: HttpService,
  limits: Limits,
): void {
  // Failures surface as 'close' with an rstCode; without a listener 'error' would throw.
  stream.on("error", ignore);
  const head = parseRequestHead(raw);
  const requestEnded = (flags & NGHTTP2_FLAG_END_STREAM) !== 0;
  if (head.listSize > limits.maxHeaderListSize) {
    refuse(stream, 431, `request header list is ${head.listSize} bytes, limit ${limits.maxHeaderListSize}`);
    return;
  }
  if (head.method === "CONNECT") {
    refuse(stream, 405, "CONNECT is not supported");
    return;
  }
  const body = requestEnded
    ? new StreamBody(stream, 0, "request body", { ended: true })
    : new StreamBody(stream, head.contentLength, "request body", { discardOnCancel: true });
  const req: HttpRequest = {
    method: head.method,
    scheme: head.scheme,
    authority: head.authority,
    path: head.path,
    version: "HTTP/2",
    headers: head.headers,
    body,
  };
  const ac = new AbortController();
  // Set once the whole response is handed to node:http2; a stream that closes before (a client
  // RST_STREAM, the connection dropping) aborts the service and whatever it started upstream.
  let completed = false;
  const abort = () => {
    if (completed || ac.signal.aborted) return;
    const code = stream.rstCode ?? NGHTTP2_INTERNAL_ERROR;
    ac.abort(new Http2StreamReset(`client reset the stream (code ${code})`, code));
  };
  stream.once("close", abort);
  let pending: Promise<HttpResponse>;
  try {
    pending = service(req, ac.signal);
  } catch (e) {
    pending = Promise.reject(e);
  }
  pending.then(
    (res) => respond(stream, req, res),
    (e) => {
      if (stream.closed || stream.destroyed) return false;
      return respond(stream, req, errorResponse(e, req, limits.log));
    },
  ).then(
    (ok) => {
      if (ok) completed = true;
      else abort();
    },
    (e) => {
      limits.log?.("warn", `h2 server: writing response failed: ${(e as Error).message}`);
      resetStream(stream, NGHTTP2_INTERNAL_ERROR);
      abort();
    },
  );
}

/** Answers without looking at the request body; whatever the client still sends is discarded. */
function refuse(stream: http2.ServerHttp2Stream, status: number, message: string): void {
  const out = [":status", String(status), "content-type", "text/plain; charset=utf-8"];
  stream.respond(out as unknown as http2.OutgoingHttpHeaders);
  stream.end(message);
  stream.resume();
}

/** Resolves true when the whole response was handed to node:http2. */
async function respond(
  stream: http2.ServerHttp2Stream,
  req: HttpRequest,
  res: HttpResponse,
): Promise<boolean> {
  if (stream.closed || stream.destroyed) {
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
  const headers = out as unknown as http2.OutgoingHttpHeaders;
  const body = res.body;
  const bodyForbidden = req.method === "HEAD" || res.status === 204 || res.status === 304;
  if (bodyForbidden || (body.length === 0 && body.trailers === undefined)) {
    // Headers with END_STREAM: also how a gRPC trailers-only response must look on the wire.
    stream.respond(headers, { endStream: true });
    if (bodyForbidden && body !== EMPTY_BODY) body.cancel();
    return true;
  }
  stream.respond(headers, { waitForTrailers: true });
  return await writeBody(stream, body);
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
