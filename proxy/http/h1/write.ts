/**
 * Writing HTTP/1 messages: heads from the shared model, and bodies framed by Content-Length,
 * chunked encoding or connection close. Small pieces that are ready at once (the head and a
 * body chunk already received) go out in one socket write; the writer waits for 'drain' when the
 * socket's buffer is full, which stops it pulling from the body, which pauses the source socket.
 */
import { Buffer } from "node:buffer";
import type { Duplex } from "node:stream";
import type { Body, HeaderList, HttpRequest } from "../message.ts";
import { isToken } from "./head.ts";

export const FRAME_NONE = 0;
export const FRAME_LENGTH = 1;
export const FRAME_CHUNKED = 2;
/** HTTP/1.0 peers only: the body ends when the connection closes. */
export const FRAME_CLOSE = 3;

/** Pieces up to this size are copied into one buffer; larger ones are written as they are. */
const COALESCE_BYTES = 16 * 1024;

const REASON: Record<number, string> = {
  100: "Continue",
  101: "Switching Protocols",
  200: "OK",
  201: "Created",
  202: "Accepted",
  204: "No Content",
  206: "Partial Content",
  301: "Moved Permanently",
  302: "Found",
  303: "See Other",
  304: "Not Modified",
  307: "Temporary Redirect",
  308: "Permanent Redirect",
  400: "Bad Request",
  401: "Unauthorized",
  403: "Forbidden",
  404: "Not Found",
  405: "Method Not Allowed",
  408: "Request Timeout",
  409: "Conflict",
  411: "Length Required",
  413: "Content Too Large",
  415: "Unsupported Media Type",
  417: "Expectation Failed",
  429: "Too Many Requests",
  431: "Request Header Fields Too Large",
  500: "Internal Server Error",
  501: "Not Implemented",
  502: "Bad Gateway",
  503: "Service Unavailable",
  504: "Gateway Timeout",
  505: "HTTP Version Not Supported",
};

const STATUS_LINE: string[] = [];
function statusLine(status: number): string {
  let l = STATUS_LINE[status];
  if (l === undefined) {
    if (!Number.isInteger(status) || status < 100 || status > 999) {
      throw new Error(`invalid status ${status}`);
    }
    l = STATUS_LINE[status] = `HTTP/1.1 ${status} ${REASON[status] ?? "Unknown"}\r\n`;
  }
  return l;
}

/** A value that would end its line early or not survive latin1 (response splitting, smuggling). */
const BAD_VALUE = /[\0\r\n]|[^\0-\xff]/;

/** Throws for a field that cannot be written safely; the message names it. */
function checkField(name: string, value: string): void {
  if (!isToken(name)) throw new Error(`cannot write header with invalid name "${name.slice(0, 64)}"`);
  if (BAD_VALUE.test(value)) {
    throw new Error(`cannot write header "${name}": value has CR, LF, NUL or non-latin1`);
  }
}

/** Fields the codec writes itself or that never cross a hop. */
function skipAlways(n: string): boolean {
  switch (n) {
    case "connection":
    case "keep-alive":
    case "proxy-connection":
    case "transfer-encoding":
    case "upgrade":
    case "te":
    case "host":
      return true;
  }
  return false;
}

function fieldLines(headers: HeaderList, keepLength: boolean): string {
  let h = "";
  const r = headers.raw;
  for (let i = 0; i < r.length; i += 2) {
    const n = r[i];
    if (skipAlways(n) || (n === "content-length" && !keepLength)) continue;
    const v = r[i + 1];
    checkField(n, v);
    h += n + ": " + v + "\r\n";
  }
  return h;
}

function framingLines(frame: number, length: number): string {
  if (frame === FRAME_LENGTH) return "content-length: " + length + "\r\n";
  if (frame === FRAME_CHUNKED) return "transfer-encoding: chunked\r\n";
  return "";
}

/**
 * A response head. `frame` FRAME_NONE keeps a Content-Length field from `headers` (HEAD and 304
 * responses describe the representation); otherwise the framing comes from `frame`/`length`.
 * `upgrade` is the Upgrade value of a 101; `connection` is "close", "keep-alive" or undefined.
 */
export function responseHead(
  status: number,
  headers: HeaderList,
  frame: number,
  length: number,
  connection: string | undefined,
  upgrade?: string,
): string {
  let h = statusLine(status) + fieldLines(headers, frame === FRAME_NONE && status !== 204) +
    framingLines(frame, length);
  if (upgrade !== undefined) {
    checkField("upgrade", upgrade);
    h += "upgrade: " + upgrade + "\r\nconnection: upgrade\r\n";
  } else if (connection !== undefined) h += "connection: " + connection + "\r\n";
  return h + "\r\n";
}

/** A request head in origin form, Host from `authority`. */
export function requestHead(req: HttpRequest, frame: number, length: number): string {
  const path = req.path.length === 0 ? "/" : req.path;
  if (BAD_VALUE.test(path) || path.indexOf(" ") >= 0) throw new Error("cannot write request: invalid path");
  if (!isToken(req.method)) {
    throw new Error(`cannot write request: invalid method "${req.method.slice(0, 32)}"`);
  }
  const authority = req.authority;
  if (BAD_VALUE.test(authority)) throw new Error("cannot write request: invalid authority");
  let h = req.method + " " + path + " HTTP/1.1\r\nhost: " + authority + "\r\n" +
    fieldLines(req.headers, false) + framingLines(frame, length);
  const up = req.headers.get("upgrade");
  const te = req.headers.get("te") === "trailers";
  if (up !== undefined) {
    checkField("upgrade", up);
    h += "upgrade: " + up +
      (te ? "\r\nte: trailers\r\nconnection: upgrade, te\r\n" : "\r\nconnection: upgrade\r\n");
  } else if (te) h += "te: trailers\r\nconnection: te\r\n";
  return h + "\r\n";
}

const encoder = new TextEncoder();

/** The head as bytes with room for `extra` more bytes after it. */
function headBytes(head: string, extra: number): Uint8Array {
  const buf = Buffer.allocUnsafe(head.length + extra);
  const { read, written } = encoder.encodeInto(head, buf);
  if (read === head.length && written === head.length) return buf;
  // Non-ASCII (obs-text) values: one byte per char, as they were received.
  const lat = Buffer.from(head, "latin1");
  if (extra === 0) return lat;
  const out = Buffer.allocUnsafe(lat.length + extra);
  out.set(lat, 0);
  return out;
}

const CRLF = new Uint8Array([13, 10]);
const LAST_CHUNK = new Uint8Array([48, 13, 10, 13, 10]); // "0\r\n\r\n"

/** Resolves when `sock` can take more, or has closed (the next write then fails). */
export function drained(sock: Duplex): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      sock.off("drain", done);
      sock.off("close", done);
      resolve();
    };
    sock.on("drain", done);
    sock.on("close", done);
  });
}

/**
 * Pending output: a head string and chunks, flushed as one write when small. Reused per
 * connection so a request costs no extra allocations beyond the bytes themselves.
 */
export class Outbox {
  #head = "";
  #parts: Uint8Array[] = [];
  #bytes = 0;

  get pendingBytes(): number {
    return this.#head.length + this.#bytes;
  }

  setHead(head: string): void {
    this.#head = head;
  }

  push(c: Uint8Array): void {
    this.#parts.push(c);
    this.#bytes += c.length;
  }

  pushChunk(c: Uint8Array): void {
    this.push(Buffer.from(c.length.toString(16) + "\r\n", "latin1"));
    this.push(c);
    this.push(CRLF);
  }

  /** Writes everything pending; false when the socket asks to wait for 'drain'. */
  flush(sock: Duplex): boolean {
    const head = this.#head;
    const parts = this.#parts;
    const n = parts.length;
    const bytes = this.#bytes;
    if (head.length === 0 && n === 0) return true;
    if (sock.destroyed) throw new Error("connection closed while writing");
    let ok: boolean;
    if (head.length + bytes <= COALESCE_BYTES) {
      let buf: Uint8Array;
      let off: number;
      if (head.length > 0) {
        buf = headBytes(head, bytes);
        off = buf.length - bytes;
      } else if (n === 1) {
        buf = parts[0];
        off = buf.length;
      } else {
        buf = Buffer.allocUnsafe(bytes);
        off = 0;
      }
      if (off < buf.length) {
        for (let i = 0; i < n; i++) {
          buf.set(parts[i], off);
          off += parts[i].length;
        }
      }
      ok = sock.write(buf);
    } else {
      // Large pieces are not copied; cork so they still leave in one writev.
      sock.cork();
      ok = head.length > 0 ? sock.write(headBytes(head, 0)) : true;
      for (let i = 0; i < n; i++) ok = sock.write(parts[i]);
      sock.uncork();
    }
    this.#head = "";
    parts.length = 0;
    this.#bytes = 0;
    return ok;
  }

  clear(): void {
    this.#head = "";
    this.#parts.length = 0;
    this.#bytes = 0;
  }
}

/** Trailer lines for a chunked body's end, or "" when there are none or they may not be sent. */
function trailerSection(trailers: HeaderList | undefined): string {
  if (trailers === undefined || trailers.size === 0) return "";
  let t = "";
  const r = trailers.raw;
  for (let i = 0; i < r.length; i += 2) {
    checkField(r[i], r[i + 1]);
    t += r[i] + ": " + r[i + 1] + "\r\n";
  }
  return t;
}

/**
 * Writes a head and then the body, framed by `frame`. Resolves when all was handed to the socket;
 * rejects if the body fails, has the wrong length, or the socket closes (the caller then destroys
 * the connection: HTTP/1 can only signal a broken message by closing). FRAME_NONE writes no body
 * bytes and leaves the body alone.
 */
export async function writeMessage(
  sock: Duplex,
  out: Outbox,
  head: string,
  body: Body,
  frame: number,
  sendTrailers: boolean,
): Promise<void> {
  out.setHead(head);
  if (frame === FRAME_NONE || body.length === 0) {
    out.flush(sock);
    return;
  }
  const canReadNow = body.readNow !== undefined;
  const expected = frame === FRAME_LENGTH ? body.length! : -1;
  let sent = 0;
  // Bodies of unknown length may be streams that start later (gRPC, server-sent events): their
  // head goes out at once. In-memory bodies of known length join their head in one write.
  if (!canReadNow && frame !== FRAME_LENGTH) {
    if (!out.flush(sock)) await drained(sock);
  }
  for (;;) {
    let c: Uint8Array | null | undefined = canReadNow ? body.readNow!() : undefined;
    if (c === undefined) {
      if (out.pendingBytes > 0 && !out.flush(sock)) await drained(sock);
      c = await body.read();
    }
    if (c === null) break;
    if (c.length === 0) continue;
    sent += c.length;
    if (expected >= 0 && sent > expected) throw new Error(`body is longer than its length ${expected}`);
    if (frame === FRAME_CHUNKED) out.pushChunk(c);
    else out.push(c);
    if (out.pendingBytes >= COALESCE_BYTES && !out.flush(sock)) await drained(sock);
  }
  if (expected >= 0 && sent !== expected) throw new Error(`body ended after ${sent} of ${expected} bytes`);
  if (frame === FRAME_CHUNKED) {
    const t = sendTrailers ? trailerSection(body.trailers) : "";
    if (t.length === 0) out.push(LAST_CHUNK);
    else out.push(Buffer.from("0\r\n" + t + "\r\n", "latin1"));
  }
  // No wait for 'drain' after the last piece: the message is complete once the socket has it,
  // and callers bound what they queue next (the server waits before its next response).
  out.flush(sock);
}
