/**
 * HTTP/1 message heads: finding where a head ends in a byte stream, and parsing request and
 * response heads strictly (RFC 9112), with the checks that keep the proxy from being used to
 * smuggle requests: one unambiguous body framing, no obs-fold, CRLF line endings only, clean
 * field names and values. Hop-by-hop fields are consumed into typed fields, not passed on.
 *
 * A complete head is decoded to one latin1 string and then parsed with string operations; that
 * costs one decode per message instead of one string per field.
 */
import { Buffer } from "node:buffer";
import { HeaderList, type HttpVersion } from "../message.ts";
import { H1ParseError } from "./errors.ts";

export interface H1Limits {
  /** Bytes of a head (start line and header fields), and of a trailer section. */
  maxHeadBytes: number;
  /** Header fields in a head, and trailer fields in a trailer section. */
  maxHeaders: number;
  /** One chunk-size line, extensions included. */
  maxChunkLineBytes: number;
  /** All chunk extensions of one body together (tiny chunks with big extensions cost CPU, not data). */
  maxChunkExtBytes: number;
}

export const DEFAULT_LIMITS: Readonly<H1Limits> = Object.freeze({
  maxHeadBytes: 64 * 1024,
  maxHeaders: 100,
  maxChunkLineBytes: 4096,
  maxChunkExtBytes: 16 * 1024,
});

export function resolveLimits(l: Partial<H1Limits> | undefined): H1Limits {
  return { ...DEFAULT_LIMITS, ...l };
}

/** How a message's body is delimited. */
export const BODY_NONE = 0;
export const BODY_LENGTH = 1;
export const BODY_CHUNKED = 2;
/** Responses only: the body runs until the connection closes. */
export const BODY_CLOSE = 3;

export interface RequestHead {
  method: string;
  /** From an absolute-form target (lower-case); undefined for origin-form. */
  scheme: string | undefined;
  /** The absolute-form target's authority, else the Host field ("" when absent in HTTP/1.0). */
  authority: string;
  path: string;
  version: HttpVersion;
  /** End-to-end fields, plus `upgrade`/`connection: upgrade` when `upgrade` is true. */
  headers: HeaderList;
  bodyKind: number;
  contentLength: number;
  /** The client allows another request on this connection after this one. */
  keepAlive: boolean;
  /** The client asks to switch protocols (Upgrade + Connection: upgrade, HTTP/1.1, not h2c). */
  upgrade: boolean;
  /** `Expect: 100-continue` on an HTTP/1.1 request with a body. */
  expectContinue: boolean;
  /** The client accepts trailers (`TE: trailers`); kept in `headers` as `te: trailers`. */
  teTrailers: boolean;
}

export interface ResponseHead {
  status: number;
  version: HttpVersion;
  headers: HeaderList;
  bodyKind: number;
  contentLength: number;
  keepAlive: boolean;
}

const CR = 13;
const LF = 10;

const typedIndexOf = Uint8Array.prototype.indexOf;

/**
 * The index of byte `b` in `c` from `from`, or -1. The typed-array method, not `Buffer`'s
 * (node's `indexOf` goes through a helper that allocates on every call).
 */
export function indexOfByte(c: Uint8Array, b: number, from: number): number {
  return typedIndexOf.call(c, b, from);
}

/**
 * Finds the empty line that ends a head, across chunks. Any LF [CR] LF sequence counts, so a head
 * with bare LF line endings is found too and then rejected by the parser, instead of waiting for a
 * CRLFCRLF that never comes.
 */
export class HeadScanner {
  #state = 0; // 0: in a line; 1: just after LF; 2: after LF CR

  reset(): void {
    this.#state = 0;
  }

  /** Index just past the head's final LF in `c` (searching from `from`), or -1 if not there yet. */
  scan(c: Uint8Array, from: number): number {
    let st = this.#state;
    let i = from;
    const n = c.length;
    while (i < n) {
      if (st === 0) {
        const j = indexOfByte(c, LF, i);
        if (j < 0) break;
        st = 1;
        i = j + 1;
        continue;
      }
      const b = c[i];
      if (b === LF) {
        this.#state = 0;
        return i + 1;
      }
      if (b === CR && st === 1) {
        st = 2;
        i++;
        continue;
      }
      st = 0;
    }
    this.#state = st;
    return -1;
  }
}

const latin1Slice = (Buffer.prototype as unknown as { latin1Slice(s: number, e: number): string })
  .latin1Slice;

/** The bytes as a string with one char per byte (obs-text kept, so values re-encode unchanged). */
export function latin1(b: Uint8Array, start = 0, end = b.length): string {
  return latin1Slice.call(b, start, end);
}

/** tchar (RFC 9110 §5.6.2) by code point, ASCII only. */
const TCHAR = new Uint8Array(128);
for (const ch of "!#$%&'*+-.^_`|~") TCHAR[ch.charCodeAt(0)] = 1;
for (let c = 48; c <= 57; c++) TCHAR[c] = 1;
for (let c = 65; c <= 90; c++) TCHAR[c] = 1;
for (let c = 97; c <= 122; c++) TCHAR[c] = 1;

/** Characters allowed in a Host value or an absolute-form authority (uri-host [":" port]). */
const HOSTCHAR = new Uint8Array(128);
for (const ch of "-._~!$&'()*+,;=:[]%") HOSTCHAR[ch.charCodeAt(0)] = 1;
for (let c = 48; c <= 57; c++) HOSTCHAR[c] = 1;
for (let c = 65; c <= 90; c++) HOSTCHAR[c] = 1;
for (let c = 97; c <= 122; c++) HOSTCHAR[c] = 1;

export function isToken(s: string): boolean {
  if (s.length === 0) return false;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c > 127 || TCHAR[c] === 0) return false;
  }
  return true;
}

function validHost(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c > 127 || HOSTCHAR[c] === 0) return false;
  }
  return true;
}

function hex2(c: number): string {
  return "0x" + c.toString(16).padStart(2, "0");
}

/** What the field loop found, for the caller to turn into framing; reused between parses. */
interface Fields {
  headers: HeaderList;
  host: string | undefined;
  hostCount: number;
  contentLength: number; // -1: none
  te: string | undefined; // Transfer-Encoding values joined with ","
  connection: string | undefined; // Connection values joined with ","
  upgrade: string | undefined;
  expect: string | undefined;
  teTrailers: boolean;
}

/** One `Fields` for every parse: parsing is synchronous, and only `headers` leaves it. */
const scratch: Fields = {
  headers: new HeaderList(),
  host: undefined,
  hostCount: 0,
  contentLength: -1,
  te: undefined,
  connection: undefined,
  upgrade: undefined,
  expect: undefined,
  teTrailers: false,
};

function newFields(): Fields {
  const f = scratch;
  f.headers = new HeaderList();
  f.host =
    f.te =
    f.connection =
    f.upgrade =
    f.expect =
      undefined;
  f.hostCount = 0;
  f.contentLength = -1;
  f.teTrailers = false;
  return f;
}

/**
 * Field names most messages carry, so a parsed name is one of these strings instead of a new one
 * per field (they are compared by identity afterwards, too). Only [a-z0-9-], which `fieldName`'s
 * case folding relies on.
 */
const KNOWN_NAMES = [
  "accept",
  "accept-encoding",
  "accept-language",
  "accept-ranges",
  "access-control-allow-origin",
  "authorization",
  "cache-control",
  "connection",
  "content-encoding",
  "content-length",
  "content-type",
  "cookie",
  "date",
  "etag",
  "expect",
  "grpc-accept-encoding",
  "grpc-encoding",
  "grpc-message",
  "grpc-status",
  "grpc-timeout",
  "host",
  "if-modified-since",
  "if-none-match",
  "keep-alive",
  "l5d-client-id",
  "l5d-dst-canonical",
  "l5d-dst-override",
  "l5d-orig-proto",
  "l5d-proxy-error",
  "last-modified",
  "location",
  "origin",
  "pragma",
  "proxy-connection",
  "range",
  "referer",
  "server",
  "set-cookie",
  "te",
  "traceparent",
  "tracestate",
  "trailer",
  "transfer-encoding",
  "upgrade",
  "user-agent",
  "vary",
  "x-forwarded-for",
  "x-forwarded-proto",
  "x-request-id",
];
const NAMES_BY_LENGTH: string[][] = [];
for (const n of KNOWN_NAMES) {
  if (!/^[a-z0-9-]+$/.test(n)) throw new Error(`known header name ${n} is not [a-z0-9-]`);
  (NAMES_BY_LENGTH[n.length] ??= []).push(n);
}

/**
 * The lower-cased name in `s[start, end)`, whose chars are tchar (checked before). Compares with
 * `| 0x20`: for tchar input that folds exactly A-Z onto a-z and changes no char into a digit,
 * letter or "-" that it was not (the chars that would map there are controls or CR).
 */
function fieldName(s: string, start: number, end: number, upper: boolean): string {
  const known = NAMES_BY_LENGTH[end - start];
  if (known !== undefined) {
    next: for (let k = 0; k < known.length; k++) {
      const n = known[k];
      for (let i = 0; i < n.length; i++) {
        if ((s.charCodeAt(start + i) | 0x20) !== n.charCodeAt(i)) continue next;
      }
      return n;
    }
  }
  const name = s.slice(start, end);
  return upper ? name.toLowerCase() : name;
}

/** A Content-Length value that is its number's own decimal form (no list, blanks or leading 0). */
function plainDecimal(v: string): boolean {
  if (v.length > 1 && v.charCodeAt(0) === 48) return false;
  for (let i = 0; i < v.length; i++) {
    const c = v.charCodeAt(i);
    if (c < 48 || c > 57) return false;
  }
  return true;
}

function parseContentLength(v: string, status: number): number {
  let n = -1;
  let start = 0;
  // A list of identical values ("5, 5") is one length; RFC 9110 §8.6 lets a recipient accept it.
  for (;;) {
    let end = v.indexOf(",", start);
    if (end < 0) end = v.length;
    let s = start, e = end;
    while (s < e && (v.charCodeAt(s) === 32 || v.charCodeAt(s) === 9)) s++;
    while (e > s && (v.charCodeAt(e - 1) === 32 || v.charCodeAt(e - 1) === 9)) e--;
    if (e === s || e - s > 15) throw new H1ParseError(status, `invalid Content-Length "${v}"`);
    let x = 0;
    for (let i = s; i < e; i++) {
      const c = v.charCodeAt(i) - 48;
      if (c < 0 || c > 9) throw new H1ParseError(status, `invalid Content-Length "${v}"`);
      x = x * 10 + c;
    }
    if (n >= 0 && x !== n) throw new H1ParseError(status, `conflicting Content-Length values "${v}"`);
    n = x;
    if (end === v.length) return n;
    start = end + 1;
  }
}

/** Comma-separated list members, trimmed and lower-cased, empty members skipped. */
function listTokens(v: string): string[] {
  const out: string[] = [];
  for (const part of v.split(",")) {
    const t = part.trim().toLowerCase();
    if (t.length > 0) out.push(t);
  }
  return out;
}

/**
 * Parses header fields from `pos` up to and including the empty line that ends `s`. Returns the
 * offset after the empty line. `status` is the error status for malformed input.
 */
function parseFields(
  s: string,
  pos: number,
  limits: H1Limits,
  f: Fields,
  status: number,
  trailers: boolean,
): number {
  let count = 0;
  const list = f.headers;
  for (;;) {
    const lf = s.indexOf("\n", pos);
    if (lf < 0) throw new H1ParseError(status, "header section does not end with an empty line");
    if (lf === pos || s.charCodeAt(lf - 1) !== CR) {
      throw new H1ParseError(status, "header line ends with a bare LF (CRLF required)");
    }
    const end = lf - 1;
    if (end === pos) return lf + 1;
    if (++count > limits.maxHeaders) {
      throw new H1ParseError(
        trailers || status !== 400 ? status : 431,
        `more than ${limits.maxHeaders} header fields`,
      );
    }
    const c0 = s.charCodeAt(pos);
    if (c0 === 32 || c0 === 9) {
      throw new H1ParseError(status, "obsolete line folding (a header line starts with whitespace)");
    }
    const colon = s.indexOf(":", pos);
    if (colon < 0 || colon > end) throw new H1ParseError(status, "header line without a colon");
    if (colon === pos) throw new H1ParseError(status, "empty header name");
    let upper = false;
    for (let i = pos; i < colon; i++) {
      const c = s.charCodeAt(i);
      if (c > 127 || TCHAR[c] === 0) {
        throw new H1ParseError(
          status,
          c === 32 || c === 9
            ? `whitespace in or after header name "${s.slice(pos, i)}"`
            : `invalid character ${hex2(c)} in header name`,
        );
      }
      if (c >= 65 && c <= 90) upper = true;
    }
    const name = fieldName(s, pos, colon, upper);
    let vs = colon + 1, ve = end;
    while (vs < ve && (s.charCodeAt(vs) === 32 || s.charCodeAt(vs) === 9)) vs++;
    while (ve > vs && (s.charCodeAt(ve - 1) === 32 || s.charCodeAt(ve - 1) === 9)) ve--;
    for (let i = vs; i < ve; i++) {
      const c = s.charCodeAt(i);
      if ((c < 32 && c !== 9) || c === 127) {
        throw new H1ParseError(status, `control character ${hex2(c)} in the value of header "${name}"`);
      }
    }
    const value = s.slice(vs, ve);
    pos = lf + 1;
    switch (name) {
      case "host":
        f.hostCount++;
        f.host = value;
        break;
      case "content-length": {
        const n = parseContentLength(value, status);
        if (f.contentLength >= 0 && n !== f.contentLength) {
          throw new H1ParseError(status, `conflicting Content-Length values ${f.contentLength} and ${n}`);
        }
        if (f.contentLength < 0) list.raw.push(name, plainDecimal(value) ? value : String(n));
        f.contentLength = n;
        break;
      }
      case "transfer-encoding":
        f.te = f.te === undefined ? value : f.te + "," + value;
        break;
      case "connection":
        f.connection = f.connection === undefined ? value : f.connection + "," + value;
        break;
      case "keep-alive":
      case "proxy-connection":
        break;
      case "te":
        if (listTokens(value).some((t) => t === "trailers" || t.startsWith("trailers;"))) {
          if (!f.teTrailers) list.raw.push("te", "trailers");
          f.teTrailers = true;
        }
        break;
      case "upgrade":
        f.upgrade = f.upgrade === undefined ? value : f.upgrade + ", " + value;
        break;
      case "expect":
        f.expect = value;
        break;
      default:
        list.raw.push(name, value);
    }
  }
}

const FIELDS_KEPT_IN_CONNECTION = new Set(["close", "keep-alive", "upgrade", "te"]);

const NO_TOKENS: readonly string[] = [];

/** Removes fields the Connection header names as hop-by-hop; returns the tokens. */
function applyConnection(f: Fields): readonly string[] {
  if (f.connection === undefined) return NO_TOKENS;
  const tokens = listTokens(f.connection);
  for (const t of tokens) {
    if (!FIELDS_KEPT_IN_CONNECTION.has(t)) f.headers.delete(t);
  }
  return tokens;
}

/**
 * Checks Transfer-Encoding: true when the body is chunked. Chunked must be the last coding and
 * appear once; other codings are refused (`unsupported` status), because the model has nowhere to
 * carry them once Transfer-Encoding, a hop-by-hop field, is consumed.
 */
function chunkedFraming(te: string, status: number, unsupported: number): boolean {
  const codings = listTokens(te);
  if (codings.length === 0) throw new H1ParseError(status, "empty Transfer-Encoding");
  const last = codings[codings.length - 1];
  if (last !== "chunked") {
    throw new H1ParseError(status, `Transfer-Encoding "${te}" does not end with chunked`);
  }
  if (codings.length > 1) {
    const before = codings.slice(0, -1);
    if (before.includes("chunked")) throw new H1ParseError(status, "chunked applied more than once");
    throw new H1ParseError(unsupported, `transfer coding "${before[0]}" is not supported`);
  }
  return true;
}

/** The version in `s[start, end)`; the common two without slicing it out first. */
function parseVersionAt(s: string, start: number, end: number, status: number): HttpVersion {
  if (end - start === 8 && s.startsWith("HTTP/1.", start)) {
    const minor = s.charCodeAt(start + 7);
    if (minor === 49) return "HTTP/1.1";
    if (minor === 48) return "HTTP/1.0";
  }
  return parseVersion(s.slice(start, end), status);
}

/** The method in `s[0, end)`: the common ones as constants, others sliced out. */
function methodAt(s: string, end: number): string {
  switch (end) {
    case 3:
      if (s.startsWith("GET")) return "GET";
      if (s.startsWith("PUT")) return "PUT";
      break;
    case 4:
      if (s.startsWith("POST")) return "POST";
      if (s.startsWith("HEAD")) return "HEAD";
      break;
    case 5:
      if (s.startsWith("PATCH")) return "PATCH";
      break;
    case 6:
      if (s.startsWith("DELETE")) return "DELETE";
      break;
    case 7:
      if (s.startsWith("OPTIONS")) return "OPTIONS";
      break;
  }
  return s.slice(0, end);
}

function parseVersion(v: string, status: number): HttpVersion {
  if (v === "HTTP/1.1") return "HTTP/1.1";
  if (v === "HTTP/1.0") return "HTTP/1.0";
  if (/^HTTP\/[0-9](\.[0-9])?$/.test(v)) throw new H1ParseError(505, `HTTP version ${v} is not supported`);
  throw new H1ParseError(status, `malformed HTTP version "${v.slice(0, 32)}"`);
}

/** Parses a complete request head (`bytes[start, end)`, up to and including the empty line). */
export function parseRequestHead(
  bytes: Uint8Array,
  limits: H1Limits,
  start = 0,
  end = bytes.length,
): RequestHead {
  const s = latin1(bytes, start, end);
  const lf = s.indexOf("\n");
  if (lf < 1 || s.charCodeAt(lf - 1) !== CR) {
    throw new H1ParseError(400, "request line does not end with CRLF");
  }
  const le = lf - 1;
  const sp1 = s.indexOf(" ");
  if (sp1 <= 0 || sp1 > le) throw new H1ParseError(400, "malformed request line");
  for (let i = 0; i < sp1; i++) {
    const c = s.charCodeAt(i);
    if (c > 127 || TCHAR[c] === 0) throw new H1ParseError(400, `invalid character ${hex2(c)} in method`);
  }
  const sp2 = s.indexOf(" ", sp1 + 1);
  if (sp2 < 0 || sp2 > le) throw new H1ParseError(400, "malformed request line");
  if (sp2 === sp1 + 1) throw new H1ParseError(400, "malformed request line (empty target)");
  for (let i = sp1 + 1; i < sp2; i++) {
    const c = s.charCodeAt(i);
    if (c <= 32 || c === 127) throw new H1ParseError(400, `invalid character ${hex2(c)} in request target`);
  }
  const version = parseVersionAt(s, sp2 + 1, le, 400);
  const method = methodAt(s, sp1);
  const target = s.slice(sp1 + 1, sp2);

  const f = newFields();
  parseFields(s, lf + 1, limits, f, 400, false);

  let scheme: string | undefined;
  let authority: string | undefined;
  let path: string;
  const t0 = target.charCodeAt(0);
  if (t0 === 47 /* / */) {
    path = target;
  } else if (target === "*") {
    if (method !== "OPTIONS") throw new H1ParseError(400, `asterisk-form target with method ${method}`);
    path = "*";
  } else if (method === "CONNECT") {
    // authority-form; the server refuses CONNECT, but says so with the target parsed.
    if (!validHost(target)) throw new H1ParseError(400, "invalid CONNECT target");
    authority = target;
    path = "";
  } else {
    const sep = target.indexOf("://");
    if (sep <= 0) {
      throw new H1ParseError(400, `request target "${target.slice(0, 64)}" is not origin- or absolute-form`);
    }
    scheme = target.slice(0, sep).toLowerCase();
    if (!/^[a-z][a-z0-9+.-]*$/.test(scheme)) throw new H1ParseError(400, "invalid scheme in request target");
    let aEnd = sep + 3;
    while (aEnd < target.length) {
      const c = target.charCodeAt(aEnd);
      if (c === 47 || c === 63 || c === 35) break;
      aEnd++;
    }
    authority = target.slice(sep + 3, aEnd);
    if (authority.length === 0 || !validHost(authority)) {
      throw new H1ParseError(400, "invalid authority in absolute-form request target");
    }
    path = target.slice(aEnd);
    if (path.length === 0) path = method === "OPTIONS" ? "*" : "/";
    else if (path.charCodeAt(0) === 63) path = "/" + path;
  }
  if (path.indexOf("#") >= 0) throw new H1ParseError(400, "fragment in request target");

  if (f.hostCount > 1) throw new H1ParseError(400, "more than one Host header");
  if (f.hostCount === 0 && version === "HTTP/1.1") {
    throw new H1ParseError(400, "HTTP/1.1 request without Host");
  }
  if (f.host !== undefined && !validHost(f.host)) {
    throw new H1ParseError(400, `invalid Host "${f.host.slice(0, 64)}"`);
  }
  authority ??= f.host ?? "";

  let bodyKind = BODY_NONE;
  let contentLength = 0;
  if (f.te !== undefined) {
    if (version === "HTTP/1.0") throw new H1ParseError(400, "Transfer-Encoding in an HTTP/1.0 request");
    if (f.contentLength >= 0) throw new H1ParseError(400, "both Content-Length and Transfer-Encoding");
    chunkedFraming(f.te, 400, 501);
    bodyKind = BODY_CHUNKED;
  } else if (f.contentLength > 0) {
    bodyKind = BODY_LENGTH;
    contentLength = f.contentLength;
  }

  const tokens = applyConnection(f);
  let keepAlive = version === "HTTP/1.1";
  let upgradeToken = false;
  for (const t of tokens) {
    if (t === "keep-alive" && version === "HTTP/1.0") keepAlive = true;
    else if (t === "upgrade") upgradeToken = true;
  }
  if (tokens.includes("close")) keepAlive = false;

  let upgrade = false;
  if (f.upgrade !== undefined && upgradeToken && version === "HTTP/1.1") {
    // h2c would hand the connection to HTTP/2 behind the proxy's back; the request goes on as HTTP/1.
    if (listTokens(f.upgrade).some((p) => p === "h2c")) {
      f.headers.delete("http2-settings");
    } else {
      upgrade = true;
      f.headers.raw.push("upgrade", f.upgrade, "connection", "upgrade");
    }
  }

  let expectContinue = false;
  if (f.expect !== undefined && version === "HTTP/1.1") {
    if (f.expect.toLowerCase() !== "100-continue") {
      throw new H1ParseError(417, `unsupported expectation "${f.expect.slice(0, 64)}"`);
    }
    expectContinue = bodyKind !== BODY_NONE;
  }

  return {
    method,
    scheme,
    authority,
    path,
    version,
    headers: f.headers,
    bodyKind,
    contentLength,
    keepAlive,
    upgrade,
    expectContinue,
    teTrailers: f.teTrailers,
  };
}

/**
 * Parses a complete response head (`bytes[start, end)`). `requestMethod` decides bodies of HEAD
 * responses; errors carry status 502 (the upstream sent something the proxy cannot pass on safely).
 */
export function parseResponseHead(
  bytes: Uint8Array,
  limits: H1Limits,
  requestMethod: string,
  start = 0,
  end = bytes.length,
): ResponseHead {
  const s = latin1(bytes, start, end);
  const lf = s.indexOf("\n");
  if (lf < 1 || s.charCodeAt(lf - 1) !== CR) {
    throw new H1ParseError(502, "status line does not end with CRLF");
  }
  const le = lf - 1;
  const sp = s.indexOf(" ");
  if (sp < 0 || sp > le) throw new H1ParseError(502, "malformed status line");
  const version = parseVersionAt(s, 0, sp, 502);
  if (le < sp + 4) throw new H1ParseError(502, "malformed status line");
  let status = 0;
  for (let i = sp + 1; i < sp + 4; i++) {
    const c = s.charCodeAt(i) - 48;
    if (c < 0 || c > 9) throw new H1ParseError(502, "malformed status code");
    status = status * 10 + c;
  }
  if (status < 100) throw new H1ParseError(502, `invalid status code ${status}`);
  if (le > sp + 4) {
    if (s.charCodeAt(sp + 4) !== 32) throw new H1ParseError(502, "malformed status line");
    for (let i = sp + 5; i < le; i++) {
      const c = s.charCodeAt(i);
      if ((c < 32 && c !== 9) || c === 127) throw new H1ParseError(502, "control character in reason phrase");
    }
  }

  const f = newFields();
  parseFields(s, lf + 1, limits, f, 502, false);
  if (f.host !== undefined) f.headers.raw.push("host", f.host);
  if (f.expect !== undefined) f.headers.raw.push("expect", f.expect);
  f.headers.delete("te");

  const tokens = applyConnection(f);
  let keepAlive = version === "HTTP/1.1";
  for (const t of tokens) {
    if (t === "keep-alive" && version === "HTTP/1.0") keepAlive = true;
  }
  if (tokens.includes("close")) keepAlive = false;

  let bodyKind = BODY_NONE;
  let contentLength = 0;
  const noBody = requestMethod === "HEAD" || status < 200 || status === 204 || status === 304;
  if (f.te !== undefined && f.contentLength >= 0) {
    throw new H1ParseError(502, "response has both Content-Length and Transfer-Encoding");
  }
  if (status === 101) {
    if (f.upgrade !== undefined) f.headers.raw.push("upgrade", f.upgrade, "connection", "upgrade");
  } else if (noBody) {
    // Framing fields of a HEAD or 304 response describe the representation, not this message.
  } else if (f.te !== undefined) {
    const codings = listTokens(f.te);
    if (codings[codings.length - 1] === "chunked") {
      chunkedFraming(f.te, 502, 502);
      bodyKind = BODY_CHUNKED;
    } else {
      throw new H1ParseError(502, `response Transfer-Encoding "${f.te}" is not supported`);
    }
  } else if (f.contentLength >= 0) {
    if (f.contentLength > 0) bodyKind = BODY_LENGTH;
    contentLength = f.contentLength;
  } else {
    bodyKind = BODY_CLOSE;
    keepAlive = false;
  }
  if (status === 204) f.headers.delete("content-length");
  return { status, version, headers: f.headers, bodyKind, contentLength, keepAlive };
}

/** Trailer fields that must not come after a body: framing, routing and connection control. */
const FORBIDDEN_TRAILERS = new Set([
  "content-length",
  "transfer-encoding",
  "host",
  "connection",
  "keep-alive",
  "proxy-connection",
  "te",
  "trailer",
  "upgrade",
  "expect",
]);

/** Parses a trailer section (field lines then an empty line); forbidden fields are dropped. */
export function parseTrailers(section: string, limits: H1Limits, status: number): HeaderList {
  const f = newFields();
  parseFields(section, 0, limits, f, status, true);
  const out = new HeaderList();
  const r = f.headers.raw;
  for (let i = 0; i < r.length; i += 2) {
    if (!FORBIDDEN_TRAILERS.has(r[i])) out.raw.push(r[i], r[i + 1]);
  }
  return out;
}
