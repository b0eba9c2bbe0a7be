/**
 * Translation between node:http2 raw header arrays (`[name, value, ...]`, pseudo-headers first)
 * and the shared `HeaderList`. Raw arrays go straight in and out of node:http2, so no header
 * object is built per message.
 */
import { HeaderList } from "../message.ts";

/**
 * Fields that describe one connection (RFC 9113 §8.2.2); they never go into an HTTP/2 message.
 * `te` is allowed with the value "trailers" only, `host` becomes `:authority`.
 */
const CONNECTION_SPECIFIC = new Set([
  "connection",
  "keep-alive",
  "proxy-connection",
  "transfer-encoding",
  "upgrade",
  "http2-settings",
]);

/** Per RFC 9113 §6.5.2: the size of a field is its name and value length plus 32 octets. */
export function fieldSize(name: string, value: string): number {
  return name.length + value.length + 32;
}

export interface ParsedRequestHead {
  method: string;
  scheme: string | undefined;
  authority: string;
  path: string;
  headers: HeaderList;
  /** Content-Length when present and well-formed. */
  contentLength: number | undefined;
  /** Size of the whole field list as counted against SETTINGS_MAX_HEADER_LIST_SIZE. */
  listSize: number;
}

/**
 * Request pseudo-headers into fields, the rest into a HeaderList. The block was validated
 * (validate.ts: pseudo-headers known, once each, first), so this only moves fields. Multiple
 * `cookie` fields are joined with "; " (RFC 9113 §8.2.3) so the request can cross into HTTP/1
 * unchanged. `raw` becomes the HeaderList's array: the regular fields are moved down over the
 * pseudo-headers in place (the decoder's array is not copied into another).
 */
export function parseRequestHead(raw: string[]): ParsedRequestHead {
  let method = "";
  let scheme: string | undefined;
  let authority: string | undefined;
  let host: string | undefined;
  let path = "";
  let listSize = 0;
  let cookieAt = -1;
  let contentLength: number | undefined;
  let w = 0; // next slot for a kept field; never ahead of the read position
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i];
    const value = raw[i + 1];
    listSize += fieldSize(name, value);
    if (name.charCodeAt(0) === 58 /* : */) {
      if (name === ":method") method = value;
      else if (name === ":path") path = value;
      else if (name === ":scheme") scheme = value;
      else if (name === ":authority") authority = value;
      continue;
    }
    if (name === "host") {
      host ??= value;
      continue;
    }
    if (name === "te") continue; // hop-by-hop; the HTTP/2 client adds it back for gRPC
    if (name === "cookie") {
      if (cookieAt >= 0) {
        raw[cookieAt] += "; " + value;
        continue;
      }
      cookieAt = w + 1;
    } else if (name === "content-length") {
      contentLength = parseLength(value);
    }
    raw[w++] = name;
    raw[w++] = value;
  }
  raw.length = w;
  return {
    method,
    scheme,
    authority: authority ?? host ?? "",
    path,
    headers: new HeaderList(raw),
    contentLength,
    listSize,
  };
}

export interface ParsedResponseHead {
  status: number;
  headers: HeaderList;
  contentLength: number | undefined;
}

/** As `parseRequestHead`: `raw` (validated) becomes the HeaderList's array, :status moved out. */
export function parseResponseHead(raw: string[]): ParsedResponseHead {
  let status = 0;
  let contentLength: number | undefined;
  let w = 0;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i];
    const value = raw[i + 1];
    if (name.charCodeAt(0) === 58) {
      if (name === ":status") status = Number(value);
      continue;
    }
    if (name === "content-length") contentLength = parseLength(value);
    raw[w++] = name;
    raw[w++] = value;
  }
  raw.length = w;
  return { status, headers: new HeaderList(raw), contentLength };
}

/** Trailers as a HeaderList; pseudo-headers (never valid in trailers) are dropped. */
export function trailersFromRaw(raw: string[] | undefined, obj: Record<string, unknown>): HeaderList {
  if (raw !== undefined) {
    const out: string[] = [];
    for (let i = 0; i < raw.length; i += 2) {
      if (raw[i].charCodeAt(0) !== 58) out.push(raw[i], raw[i + 1]);
    }
    return new HeaderList(out);
  }
  const out: string[] = [];
  for (const name of Object.keys(obj)) {
    if (name.charCodeAt(0) === 58) continue;
    const v = obj[name];
    if (Array.isArray(v)) { for (const x of v) out.push(name, String(x)); }
    else if (v !== undefined) out.push(name, String(v));
  }
  return new HeaderList(out);
}

function parseLength(v: string): number | undefined {
  if (v.length === 0 || v.length > 15) return undefined;
  for (let i = 0; i < v.length; i++) {
    const c = v.charCodeAt(i);
    if (c < 48 || c > 57) return undefined;
  }
  return Number(v);
}

/** True when `name` must not be sent in an HTTP/2 message. */
export function isConnectionSpecific(name: string, value: string): boolean {
  return CONNECTION_SPECIFIC.has(name) || (name === "te" && value.trim().toLowerCase() !== "trailers");
}

/**
 * Appends the end-to-end fields of `headers` to `out` (which already holds pseudo-headers),
 * leaving out connection-specific fields and `host` (carried as `:authority`). Reports whether
 * a `te` field was copied.
 */
export function appendSendable(out: string[], headers: HeaderList): boolean {
  const r = headers.raw;
  let te = false;
  for (let i = 0; i < r.length; i += 2) {
    const name = r[i];
    const value = r[i + 1];
    if (name.charCodeAt(0) === 58 || name === "host" || isConnectionSpecific(name, value)) continue;
    if (name === "te") te = true;
    out.push(name, value);
  }
  return te;
}

/**
 * Trailers to send, end-to-end fields only. node:http2 takes raw arrays for request and response
 * heads but only an object for `sendTrailers`; repeated names become arrays.
 */
export function sendableTrailers(trailers: HeaderList): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  const r = trailers.raw;
  for (let i = 0; i < r.length; i += 2) {
    const name = r[i];
    const value = r[i + 1];
    if (name.charCodeAt(0) === 58 || name === "host" || isConnectionSpecific(name, value)) continue;
    const prev = out[name];
    if (prev === undefined) out[name] = value;
    else if (Array.isArray(prev)) prev.push(value);
    else out[name] = [prev, value];
  }
  return out;
}
