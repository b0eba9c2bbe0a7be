/**
 * The message checks of RFC 9113 §8.1.1–§8.3 on decoded field blocks. A block that fails is a
 * malformed message: the stream is reset with PROTOCOL_ERROR and never reaches the service,
 * while the connection's other streams go on. Each check returns a message naming the problem,
 * or undefined when the block is well formed.
 */
import { isConnectionSpecific } from "./headers.ts";

/** Lower-case token characters (RFC 9110 §5.6.2): the only ones allowed in an HTTP/2 field name. */
const NAME_CHAR = new Uint8Array(256);
for (const c of "!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyz") NAME_CHAR[c.charCodeAt(0)] = 1;

function badName(name: string): boolean {
  if (name.length === 0) return true;
  for (let i = 0; i < name.length; i++) {
    const c = name.charCodeAt(i);
    if (c > 255 || NAME_CHAR[c] === 0) return true;
  }
  return false;
}

/** NUL, CR and LF anywhere, or whitespace at either end (§8.2.1). */
function badValue(v: string): boolean {
  const n = v.length;
  if (n === 0) return false;
  const first = v.charCodeAt(0);
  const last = v.charCodeAt(n - 1);
  if (first === 32 || first === 9 || last === 32 || last === 9) return true;
  for (let i = 0; i < n; i++) {
    const c = v.charCodeAt(i);
    if (c === 0 || c === 10 || c === 13) return true;
  }
  return false;
}

/** The regular (non-pseudo) fields of a block, from index `from`. */
function checkFields(raw: string[], from: number): string | undefined {
  for (let i = from; i < raw.length; i += 2) {
    const name = raw[i];
    const value = raw[i + 1];
    if (name.charCodeAt(0) === 58) return `pseudo-header ${name} after regular fields`;
    if (badName(name)) return `invalid field name ${JSON.stringify(name)}`;
    if (badValue(value)) return `invalid value for field ${name}`;
    if (isConnectionSpecific(name, value)) return `connection-specific field ${name}`;
  }
  return undefined;
}

/** A request head: §8.3.1 pseudo-headers, each once, before the fields. */
export function checkRequest(raw: string[]): string | undefined {
  let method: string | undefined;
  let scheme = false;
  let path: string | undefined;
  let authority = false;
  let i = 0;
  for (; i < raw.length && raw[i].charCodeAt(0) === 58; i += 2) {
    const name = raw[i];
    const value = raw[i + 1];
    if (name === ":method") {
      if (method !== undefined) return "repeated :method";
      method = value;
    } else if (name === ":scheme") {
      if (scheme) return "repeated :scheme";
      scheme = true;
    } else if (name === ":path") {
      if (path !== undefined) return "repeated :path";
      path = value;
    } else if (name === ":authority") {
      if (authority) return "repeated :authority";
      authority = true;
    } else {
      return `unknown pseudo-header ${name}`;
    }
    if (badValue(value)) return `invalid value for ${name}`;
  }
  const fieldProblem = checkFields(raw, i);
  if (fieldProblem !== undefined) return fieldProblem;
  if (method === undefined || method === "") return "missing :method";
  if (method === "CONNECT") {
    if (scheme || path !== undefined) return "CONNECT with :scheme or :path";
    if (!authority) return "CONNECT without :authority";
  } else {
    if (!scheme) return "missing :scheme";
    if (path === undefined || path === "") return "missing :path";
  }
  return undefined;
}

/** A response head: exactly one three-digit :status (§8.3.2). */
export function checkResponse(raw: string[]): string | undefined {
  let status: string | undefined;
  let i = 0;
  for (; i < raw.length && raw[i].charCodeAt(0) === 58; i += 2) {
    if (raw[i] !== ":status") return `unknown pseudo-header ${raw[i]} in a response`;
    if (status !== undefined) return "repeated :status";
    status = raw[i + 1];
  }
  if (status === undefined) return "missing :status";
  if (!/^[1-9][0-9][0-9]$/.test(status)) return `invalid :status ${JSON.stringify(status)}`;
  return checkFields(raw, i);
}

/** Trailers carry no pseudo-headers (§8.1). */
export function checkTrailers(raw: string[]): string | undefined {
  return checkFields(raw, 0);
}
