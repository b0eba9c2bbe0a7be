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
/** Bodies up to this length get room after their head (`responseHead`'s `room`). */
export const BODY_ROOM_BYTES = 8 * 1024;

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

/** Bytes of the field lines `putFields` writes, after checking each field. */
function fieldBytes(headers: HeaderList, keepLength: boolean): number {
  let n = 0;
  const r = headers.raw;
  for (let i = 0; i < r.length; i += 2) {
    const name = r[i];
    if (skipAlways(name) || (name === "content-length" && !keepLength)) continue;
    const v = r[i + 1];
    checkField(name, v);
    n += name.length + v.length + 4;
  }
  return n;
}

// Heads are written straight into their buffer: building them as strings first left a rope of
// concatenations and a flattened copy behind per message. Every char was checked to be latin1
// (or is a constant), so one byte per char is what a latin1 encoding would give.

/** Writes `s` at `off`; returns the offset after it. */
function put(buf: Uint8Array, off: number, s: string): number {
  for (let i = 0; i < s.length; i++) buf[off++] = s.charCodeAt(i);
  return off;
}

function putFields(buf: Uint8Array, off: number, headers: HeaderList, keepLength: boolean): number {
  const r = headers.raw;
  for (let i = 0; i < r.length; i += 2) {
    const name = r[i];
    if (skipAlways(name) || (name === "content-length" && !keepLength)) continue;
    off = put(buf, off, name);
    buf[off++] = 58; // ":"
    buf[off++] = 32;
    off = put(buf, off, r[i + 1]);
    buf[off++] = 13;
    buf[off++] = 10;
  }
  return off;
}

function decimalDigits(n: number): number {
  let d = 1;
  while (n >= 10) {
    n = Math.floor(n / 10);
    d++;
  }
  return d;
}

/** Writes the non-negative integer `n` in decimal at `off`; returns the offset after it. */
function putDecimal(buf: Uint8Array, off: number, n: number): number {
  const end = off + decimalDigits(n);
  let p = end;
  do {
    buf[--p] = 48 + (n % 10);
    n = Math.floor(n / 10);
  } while (n > 0);
  return end;
}

const CONTENT_LENGTH = "content-length: ";
const CHUNKED = "transfer-encoding: chunked\r\n";

function framingBytes(frame: number, length: number): number {
  if (frame === FRAME_LENGTH) return CONTENT_LENGTH.length + decimalDigits(length) + 2;
  if (frame === FRAME_CHUNKED) return CHUNKED.length;
  return 0;
}

function putFraming(buf: Uint8Array, off: number, frame: number, length: number): number {
  if (frame === FRAME_LENGTH) {
    off = putDecimal(buf, put(buf, off, CONTENT_LENGTH), length);
    buf[off++] = 13;
    buf[off++] = 10;
  } else if (frame === FRAME_CHUNKED) off = put(buf, off, CHUNKED);
  return off;
}

const UPGRADE = "upgrade: ";
const CONNECTION_UPGRADE = "\r\nconnection: upgrade\r\n";
const CONNECTION = "connection: ";
const HTTP11_HOST = " HTTP/1.1\r\nhost: ";
const TE_UPGRADE = "\r\nte: trailers\r\nconnection: upgrade, te\r\n";
const TE = "te: trailers\r\nconnection: te\r\n";

/** The head, after checking its computed length against what was written (a bug guard). */
function checkWritten(buf: Uint8Array, off: number): Uint8Array {
  if (off !== buf.length) throw new Error(`head writer: wrote ${off} of ${buf.length} bytes`);
  return buf;
}

/**
 * A response head. `frame` FRAME_NONE keeps a Content-Length field from `headers` (HEAD and 304
 * responses describe the representation); otherwise the framing comes from `frame`/`length`.
 * `upgrade` is the Upgrade value of a 101; `connection` is "close", "keep-alive" or undefined.
 * `room` bytes are left free after the head, for a small body to join it without another buffer
 * (pass the head's own length, `length - room`, to `writeMessage`).
 */
export function responseHead(
  status: number,
  headers: HeaderList,
  frame: number,
  length: number,
  connection: string | undefined,
  upgrade?: string,
  room = 0,
): Uint8Array {
  const line = statusLine(status);
  const keepLength = frame === FRAME_NONE && status !== 204;
  let n = line.length + fieldBytes(headers, keepLength) + framingBytes(frame, length) + 2;
  if (upgrade !== undefined) {
    checkField("upgrade", upgrade);
    n += UPGRADE.length + upgrade.length + CONNECTION_UPGRADE.length;
  } else if (connection !== undefined) n += CONNECTION.length + connection.length + 2;
  const buf = Buffer.allocUnsafe(n + room);
  let off = putFraming(buf, putFields(buf, put(buf, 0, line), headers, keepLength), frame, length);
  if (upgrade !== undefined) {
    off = put(buf, put(buf, put(buf, off, UPGRADE), upgrade), CONNECTION_UPGRADE);
  } else if (connection !== undefined) {
    off = put(buf, put(buf, off, CONNECTION), connection);
    buf[off++] = 13;
    buf[off++] = 10;
  }
  buf[off++] = 13;
  buf[off++] = 10;
  return checkWritten(buf, off + room);
}

/** A request head in origin form, Host from `authority`. */
export function requestHead(req: HttpRequest, frame: number, length: number): Uint8Array {
  const path = req.path.length === 0 ? "/" : req.path;
  if (BAD_VALUE.test(path) || path.indexOf(" ") >= 0) throw new Error("cannot write request: invalid path");
  const method = req.method;
  if (!isToken(method)) {
    throw new Error(`cannot write request: invalid method "${method.slice(0, 32)}"`);
  }
  const authority = req.authority;
  if (BAD_VALUE.test(authority)) throw new Error("cannot write request: invalid authority");
  const headers = req.headers;
  let n = method.length + 1 + path.length + HTTP11_HOST.length + authority.length + 2 +
    fieldBytes(headers, false) + framingBytes(frame, length) + 2;
  const up = headers.get("upgrade");
  const te = headers.get("te") === "trailers";
  if (up !== undefined) {
    checkField("upgrade", up);
    n += UPGRADE.length + up.length + (te ? TE_UPGRADE.length : CONNECTION_UPGRADE.length);
  } else if (te) n += TE.length;
  const buf = Buffer.allocUnsafe(n);
  let off = put(buf, 0, method);
  buf[off++] = 32;
  off = put(buf, put(buf, put(buf, off, path), HTTP11_HOST), authority);
  buf[off++] = 13;
  buf[off++] = 10;
  off = putFraming(buf, putFields(buf, off, headers, false), frame, length);
  if (up !== undefined) {
    off = put(buf, put(buf, put(buf, off, UPGRADE), up), te ? TE_UPGRADE : CONNECTION_UPGRADE);
  } else if (te) off = put(buf, off, TE);
  buf[off++] = 13;
  buf[off++] = 10;
  return checkWritten(buf, off);
}

const CRLF = new Uint8Array([13, 10]);
const NO_BYTES = new Uint8Array(0);
/** A parts array longer than this is dropped after a flush rather than kept. */
const KEEP_PARTS = 16;
const LAST_CHUNK = new Uint8Array([48, 13, 10, 13, 10]); // "0\r\n\r\n"
const HEX = "0123456789abcdef";

/** The size line of a chunk of `n` (> 0) bytes: hex digits and CRLF. */
function chunkSizeLine(n: number): Uint8Array {
  let d = 1;
  for (let x = n; x >= 16; x = Math.floor(x / 16)) d++;
  const buf = Buffer.allocUnsafe(d + 2);
  buf[d] = 13;
  buf[d + 1] = 10;
  for (let p = d - 1; p >= 0; p--) {
    buf[p] = HEX.charCodeAt(n % 16);
    n = Math.floor(n / 16);
  }
  return buf;
}

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
 * Pending output: a head and chunks, flushed as one write when small. Reused per connection so a
 * request costs no extra allocations beyond the bytes themselves.
 */
export class Outbox {
  /** The head is `#head[0, #headLength)`; a body may fill the rest of `#head` exactly. */
  #head: Uint8Array | undefined = undefined;
  #headLength = 0;
  // Parts 0..#n-1 are pending; the array is kept between messages (slots cleared).
  #parts: Uint8Array[] = [];
  #n = 0;
  #bytes = 0;

  get pendingBytes(): number {
    return this.#headLength + this.#bytes;
  }

  setHead(head: Uint8Array, length = head.length): void {
    this.#head = head;
    this.#headLength = length;
  }

  /** The head alone (a view when it has unused room after it). */
  #headOnly(): Uint8Array {
    const head = this.#head!;
    return this.#headLength === head.length ? head : head.subarray(0, this.#headLength);
  }

  push(c: Uint8Array): void {
    this.#parts[this.#n++] = c;
    this.#bytes += c.length;
  }

  pushChunk(c: Uint8Array): void {
    this.push(chunkSizeLine(c.length));
    this.push(c);
    this.push(CRLF);
  }

  /** Writes everything pending; false when the socket asks to wait for 'drain'. */
  flush(sock: Duplex): boolean {
    const head = this.#head;
    const headLength = this.#headLength;
    const parts = this.#parts;
    const n = this.#n;
    const bytes = this.#bytes;
    if (headLength === 0 && n === 0) return true;
    if (sock.destroyed) throw new Error("connection closed while writing");
    let ok: boolean;
    if (headLength + bytes <= COALESCE_BYTES) {
      let buf: Uint8Array;
      if (n === 0) buf = this.#headOnly();
      else if (headLength === 0 && n === 1) buf = parts[0];
      else {
        let off = 0;
        if (headLength > 0 && headLength + bytes === head!.length) {
          buf = head!;
          off = headLength;
        } else {
          buf = Buffer.allocUnsafe(headLength + bytes);
          if (headLength > 0) {
            buf.set(this.#headOnly(), 0);
            off = headLength;
          }
        }
        for (let i = 0; i < n; i++) {
          buf.set(parts[i], off);
          off += parts[i].length;
        }
      }
      ok = sock.write(buf);
    } else {
      // Large pieces are not copied; cork so they still leave in one writev.
      sock.cork();
      ok = headLength > 0 ? sock.write(this.#headOnly()) : true;
      for (let i = 0; i < n; i++) ok = sock.write(parts[i]);
      sock.uncork();
    }
    this.clear();
    return ok;
  }

  clear(): void {
    this.#head = undefined;
    this.#headLength = 0;
    const parts = this.#parts;
    if (parts.length > KEEP_PARTS) this.#parts = [];
    else parts.fill(NO_BYTES, 0, this.#n);
    this.#n = 0;
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

/** How `writeRest` starts: after a full socket, after `readNow` found nothing, or neither. */
const AFTER_FULL = 0, AFTER_EMPTY = 1, AFTER_HEAD = 2;

/**
 * Writes a head and then the body, framed by `frame`. Returns undefined when all was handed to the
 * socket at once (the common case: a body already in memory or buffered), else a promise of that.
 * Throws or rejects if the body fails, has the wrong length, or the socket closes (the caller then
 * destroys the connection: HTTP/1 can only signal a broken message by closing). FRAME_NONE writes
 * no body bytes and leaves the body alone.
 */
export function writeMessage(
  sock: Duplex,
  out: Outbox,
  head: Uint8Array,
  body: Body,
  frame: number,
  sendTrailers: boolean,
  headLength = head.length,
): Promise<void> | undefined {
  out.setHead(head, headLength);
  if (frame === FRAME_NONE || body.length === 0) {
    out.flush(sock);
    return undefined;
  }
  const expected = frame === FRAME_LENGTH ? body.length! : -1;
  if (body.readNow === undefined) {
    // Bodies of unknown length may be streams that start later (gRPC, server-sent events): their
    // head goes out at once. In-memory bodies of known length join their head in one write.
    const after = frame !== FRAME_LENGTH && !out.flush(sock) ? AFTER_FULL : AFTER_HEAD;
    return writeRest(sock, out, body, frame, sendTrailers, expected, 0, after);
  }
  let sent = 0;
  for (;;) {
    const c = body.readNow();
    if (c === undefined) return writeRest(sock, out, body, frame, sendTrailers, expected, sent, AFTER_EMPTY);
    if (c === null) break;
    if (c.length === 0) continue;
    sent += c.length;
    if (expected >= 0 && sent > expected) throw new Error(`body is longer than its length ${expected}`);
    if (frame === FRAME_CHUNKED) out.pushChunk(c);
    else out.push(c);
    if (out.pendingBytes >= COALESCE_BYTES && !out.flush(sock)) {
      return writeRest(sock, out, body, frame, sendTrailers, expected, sent, AFTER_FULL);
    }
  }
  endBody(sock, out, body, frame, sendTrailers, expected, sent);
  return undefined;
}

/** `writeMessage` once it has to wait: for 'drain' (`AFTER_FULL`) or for body bytes. */
async function writeRest(
  sock: Duplex,
  out: Outbox,
  body: Body,
  frame: number,
  sendTrailers: boolean,
  expected: number,
  sent: number,
  after: number,
): Promise<void> {
  if (after === AFTER_FULL) await drained(sock);
  const canReadNow = body.readNow !== undefined;
  let skipReadNow = after === AFTER_EMPTY;
  for (;;) {
    let c: Uint8Array | null | undefined = canReadNow && !skipReadNow ? body.readNow!() : undefined;
    skipReadNow = false;
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
  endBody(sock, out, body, frame, sendTrailers, expected, sent);
}

function endBody(
  sock: Duplex,
  out: Outbox,
  body: Body,
  frame: number,
  sendTrailers: boolean,
  expected: number,
  sent: number,
): void {
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
