/**
 * The HTTP/1 request-line grammar (RFC 9112 §2.2, §3) as one byte-level contract for protocol
 * detection, checked against the proxy's HTTP/1 parser (`head.ts`) by tests: any start of a
 * connection that the proxy's server, or a lenient application server behind it, would read as
 * a request must be classified as HTTP/1. Otherwise a client could reach the application as
 * opaque TCP and skip route authorization, 404s, rate limits and `l5d-client-id`.
 *
 * Detection may call more things HTTP than the proxy's server accepts (the server then answers
 * 400 or 505 itself), but never fewer. RFC 9112 lets a recipient parse leniently, so:
 * - empty lines and whitespace before the request line are skipped (§2.2);
 * - words are split on any whitespace: SP, HTAB, VT, FF or a bare CR (§3);
 * - method: any token (RFC 9110 tchar), any case, any length;
 * - request-target: any bytes but controls, whitespace and DEL (obs-text included);
 * - version: any later word of the line that starts with `HTTP/` (ASCII case-insensitive), so
 *   servers that split at the last space are covered too;
 * - `GET /path` alone on its line (HTTP/0.9, which some servers still take).
 * Everything else that breaks the grammar is not a request line.
 */

/** tchar (RFC 9110 §5.6.2), by byte. */
export const TCHAR: Uint8Array = (() => {
  const t = new Uint8Array(256);
  for (const ch of "!#$%&'*+-.^_`|~") t[ch.charCodeAt(0)] = 1;
  for (let c = 48; c <= 57; c++) t[c] = 1;
  for (let c = 65; c <= 90; c++) t[c] = 1;
  for (let c = 97; c <= 122; c++) t[c] = 1;
  return t;
})();

/** The bytes are (the start of) an HTTP/1 request. */
export const REQUEST_LINE = 0;
/** Every byte so far fits a request line; more are needed to tell. */
export const PREFIX = 1;
/** Not an HTTP/1 request line. */
export const NOT_REQUEST = 2;
export type RequestLineClass = typeof REQUEST_LINE | typeof PREFIX | typeof NOT_REQUEST;

const LF = 10;
const HTTP_SLASH = [0x48, 0x54, 0x54, 0x50, 0x2f]; // "HTTP/"
const GET = [0x47, 0x45, 0x54]; // "GET"

/** Whitespace a lenient recipient splits on: SP, HTAB, VT, FF, CR. */
function isWs(c: number): boolean {
  return c === 32 || c === 9 || c === 11 || c === 12 || c === 13;
}

/** A byte of a word (target or version): not a control, not whitespace, not DEL. */
function isWordByte(c: number): boolean {
  return c > 32 && c !== 127;
}

function isHttp09Get(b: Uint8Array, methodStart: number, methodEnd: number, targetStart: number): boolean {
  if (methodEnd - methodStart !== 3 || b[targetStart] !== 0x2f) return false;
  for (let k = 0; k < 3; k++) if (b[methodStart + k] !== GET[k]) return false;
  return true;
}

/** Whether the bytes at `i` are `HTTP/` (case-insensitive letters), or could still become it. */
function startsWithHttpSlash(b: Uint8Array, i: number): RequestLineClass {
  for (let k = 0; k < HTTP_SLASH.length; k++, i++) {
    if (i === b.length) return PREFIX;
    const c = k < 4 ? b[i] & 0xdf : b[i];
    if (c !== HTTP_SLASH[k]) return NOT_REQUEST;
  }
  return REQUEST_LINE;
}

/** Classifies the first bytes of a connection against the request-line grammar above. */
export function classifyRequestLine(b: Uint8Array): RequestLineClass {
  const n = b.length;
  let i = 0;
  while (i < n && (isWs(b[i]) || b[i] === LF)) i++;
  if (i === n) return PREFIX;
  const methodStart = i;
  while (i < n && TCHAR[b[i]] === 1) i++;
  if (i === n) return PREFIX;
  if (i === methodStart || !isWs(b[i])) return NOT_REQUEST;
  const methodEnd = i;
  while (i < n && isWs(b[i])) i++;
  if (i === n) return PREFIX;
  const targetStart = i;
  while (i < n && isWordByte(b[i])) i++;
  if (i === n) return PREFIX;
  if (i === targetStart) return NOT_REQUEST;
  let words = 1;
  while (i < n) {
    const c = b[i];
    if (c === LF) {
      return words === 1 && isHttp09Get(b, methodStart, methodEnd, targetStart) ? REQUEST_LINE : NOT_REQUEST;
    }
    if (isWs(c)) {
      i++;
      continue;
    }
    if (!isWordByte(c)) return NOT_REQUEST;
    const version = startsWithHttpSlash(b, i);
    if (version !== NOT_REQUEST) return version;
    words++;
    while (i < n && isWordByte(b[i])) i++;
  }
  return PREFIX;
}
