/**
 * One request/response model for HTTP/1 and HTTP/2, so routing, balancing, retries, authorization
 * and metrics are written once. Codecs (`h1/`, `h2/`) translate their wire form into these types
 * and back; everything between them sees only `HttpRequest` → `HttpResponse`.
 *
 * Headers are a flat array of lower-case names and values (no per-request Map or Headers object);
 * connection-level (hop-by-hop) headers and HTTP/2 pseudo-headers are never in it: the codecs
 * consume them into the typed fields below.
 */
import type { Duplex } from "node:stream";

export type HttpVersion = "HTTP/1.0" | "HTTP/1.1" | "HTTP/2";

/** Ordered header fields; names are lower-case. Values are kept as received (no folding). */
export class HeaderList {
  /** [name0, value0, name1, value1, ...] */
  readonly raw: string[];

  constructor(raw: string[] = []) {
    this.raw = raw;
  }

  get size(): number {
    return this.raw.length >> 1;
  }

  /** First value for `name` (lower-case), or undefined. */
  get(name: string): string | undefined {
    const r = this.raw;
    for (let i = 0; i < r.length; i += 2) if (r[i] === name) return r[i + 1];
    return undefined;
  }

  getAll(name: string): string[] {
    const out: string[] = [];
    const r = this.raw;
    for (let i = 0; i < r.length; i += 2) if (r[i] === name) out.push(r[i + 1]);
    return out;
  }

  has(name: string): boolean {
    return this.get(name) !== undefined;
  }

  append(name: string, value: string): void {
    this.raw.push(name, value);
  }

  /** Replaces every value of `name` with one. */
  set(name: string, value: string): void {
    this.delete(name);
    this.raw.push(name, value);
  }

  delete(name: string): boolean {
    const r = this.raw;
    let w = 0;
    for (let i = 0; i < r.length; i += 2) {
      if (r[i] === name) continue;
      r[w++] = r[i];
      r[w++] = r[i + 1];
    }
    const removed = w !== r.length;
    r.length = w;
    return removed;
  }

  clone(): HeaderList {
    return new HeaderList(this.raw.slice());
  }

  *entries(): IterableIterator<[string, string]> {
    const r = this.raw;
    for (let i = 0; i < r.length; i += 2) yield [r[i], r[i + 1]];
  }
}

/**
 * A message body, read once by pulling chunks. Codecs implement it over their stream; `null`
 * from `read()` is the end, after which `trailers` holds trailing headers if any arrived (gRPC
 * status lives there). A reader that stops early calls `cancel`, which resets the underlying
 * stream (HTTP/2 RST_STREAM, HTTP/1 connection close) so the peer stops sending.
 */
export interface Body {
  /** Exact length when the sender declared one (Content-Length), else undefined. */
  readonly length: number | undefined;
  /** Next chunk, or null at the end of the body. Rejects if the stream failed. */
  read(): Promise<Uint8Array | null>;
  /**
   * Optional fast path: the next chunk when one is already buffered (null at the end), or
   * undefined when `read()` would have to wait. Throws where `read()` would reject. Lets writers
   * put a head and its body into one write, and wrappers skip a promise per chunk.
   */
  readNow?(): Uint8Array | null | undefined;
  /** Trailing headers; meaningful only after `read()` has returned null. */
  readonly trailers: HeaderList | undefined;
  cancel(reason?: Error): void;
}

export interface HttpRequest {
  method: string;
  /** From the HTTP/2 `:scheme` or the absolute-form request target; undefined for origin-form HTTP/1. */
  scheme: string | undefined;
  /** Host header or `:authority` (HTTP/1 requests without either get ""). */
  authority: string;
  /** Path and query, as received (`*` for `OPTIONS *`). */
  path: string;
  version: HttpVersion;
  headers: HeaderList;
  body: Body;
  /**
   * Outbound only, and only while a tap is running (proxy/tap): the application's address, which
   * the endpoint layer reports as the tap event's source. Copies of the request (retries) keep it.
   */
  tapSource?: { ip: string; port: number };
}

export interface HttpResponse {
  status: number;
  headers: HeaderList;
  body: Body;
  /**
   * For 101 Switching Protocols from an HTTP/1 upstream: the upstream connection, positioned
   * after the response head. The server side writes the head and then copies bytes both ways
   * between the client connection and this one.
   */
  upgrade?: Duplex;
}

/**
 * The one interface every layer implements. Implementations reject only for failures of the
 * request itself (the caller maps them with `HttpError.status`); the signal aborts when the
 * client goes away or a timeout fires, and must cancel any upstream work.
 */
export type HttpService = (req: HttpRequest, signal: AbortSignal) => Promise<HttpResponse>;

/** A failure that has an HTTP status of its own (e.g. 503 no endpoints, 504 timeout). */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    /** Metric label for why (e.g. "no_endpoints", "timeout", "unauthorized"). */
    readonly reason: string,
    /** gRPC status to use when the request was gRPC (e.g. 14 UNAVAILABLE, 4 DEADLINE_EXCEEDED). */
    readonly grpcStatus?: number,
  ) {
    super(message);
    this.name = "HttpError";
  }
}

/** A body with no bytes. */
export const EMPTY_BODY: Body = {
  length: 0,
  read: () => Promise.resolve(null),
  readNow: () => null,
  trailers: undefined,
  cancel: () => {},
};

/** A body from bytes already in memory (synthesized responses, replays). */
export function bytesBody(chunks: Uint8Array[], trailers?: HeaderList): Body {
  let i = 0;
  let length = 0;
  for (const c of chunks) length += c.length;
  return {
    length: trailers ? undefined : length,
    read: () => Promise.resolve(i < chunks.length ? chunks[i++] : null),
    readNow: () => (i < chunks.length ? chunks[i++] : null),
    trailers,
    cancel: () => {
      i = chunks.length;
    },
  };
}

const encoder = new TextEncoder();

/** A small synthesized response (errors, redirects, failure injection). */
export function textResponse(status: number, text: string, headers = new HeaderList()): HttpResponse {
  const bytes = encoder.encode(text);
  if (!headers.has("content-type")) headers.append("content-type", "text/plain; charset=utf-8");
  headers.set("content-length", String(bytes.length));
  return { status, headers, body: bytesBody(bytes.length ? [bytes] : []) };
}

/** True when the request is gRPC (content-type application/grpc, with or without a subtype). */
export function isGrpc(headers: HeaderList): boolean {
  const ct = headers.get("content-type");
  return ct !== undefined && ct.startsWith("application/grpc") &&
    (ct.length === 16 || ct[16] === "+" || ct[16] === ";");
}

/**
 * A trailers-only gRPC error (HTTP 200, `grpc-status` in the headers), what gRPC clients expect
 * instead of an HTTP error status.
 */
export function grpcErrorResponse(code: number, message: string): HttpResponse {
  const headers = new HeaderList([
    "content-type",
    "application/grpc",
    "grpc-status",
    String(code),
    "grpc-message",
    encodeURIComponent(message),
  ]);
  return { status: 200, headers, body: EMPTY_BODY };
}
