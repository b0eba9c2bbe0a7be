/**
 * HTTP protocol detection on the first bytes of a connection, as the reference proxy does it:
 * one read of up to 1024 bytes within the detect timeout; the HTTP/2 preface → HTTP/2, an HTTP/1
 * request line (or a prefix of one, at least 14 bytes) → HTTP/1, anything else → opaque TCP.
 * A read that times out counts as opaque; EOF before any byte is an error. The bytes read are
 * put back on the socket, so the next layer sees the stream from its start.
 *
 * The HTTP/1 check is stricter than a generic parser: upper-case method of at most 20
 * characters, a request target of visible ASCII starting with '/', '*' or a letter, version
 * HTTP/1.0 or HTTP/1.1. Opaque is the safe answer (the bytes are still forwarded), so anything
 * unusual goes there rather than into the HTTP codec.
 */
import type * as net from "node:net";
import { peek } from "../transport/peek.ts";

export type DetectedProtocol = "http2" | "http1" | "opaque";

/** What the detector reads at most; more may have arrived and is put back untouched. */
export const DETECT_READ_BYTES = 1024;
/** Both the abbreviated preface `PRI * HTTP/2.0` and the shortest request line `GET / HTTP/1.1`. */
export const DETECT_MIN_BYTES = 14;
const MAX_METHOD = 20;

const PREFACE = new TextEncoder().encode("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");
const VERSION = new TextEncoder().encode("HTTP/1.");

/** Classifies the first bytes of a connection (only the first 1024 are looked at). */
export function detectHttp(bytes: Uint8Array): DetectedProtocol {
  const b = bytes.length > DETECT_READ_BYTES ? bytes.subarray(0, DETECT_READ_BYTES) : bytes;
  if (b.length < DETECT_MIN_BYTES) return "opaque";
  if (isPrefacePrefix(b)) return "http2";
  return isRequestLinePrefix(b) ? "http1" : "opaque";
}

function isPrefacePrefix(b: Uint8Array): boolean {
  const n = Math.min(b.length, PREFACE.length);
  for (let i = 0; i < n; i++) if (b[i] !== PREFACE[i]) return false;
  return true;
}

/** True when `b` is a request line, or a prefix of one that the bytes so far do not contradict. */
function isRequestLinePrefix(b: Uint8Array): boolean {
  const n = b.length;
  let i = 0;
  // method
  while (i < n && isMethodChar(b[i])) i++;
  if (i === 0 || i > MAX_METHOD || i === n || b[i] !== 0x20) return false;
  i++;
  // request-target
  if (i === n) return true;
  const first = b[i];
  if (!(first === 0x2f || first === 0x2a || isAlpha(first))) return false;
  while (i < n && b[i] >= 0x21 && b[i] <= 0x7e) i++;
  if (i === n) return true;
  if (b[i] !== 0x20) return false;
  i++;
  // HTTP-version
  for (let v = 0; v < VERSION.length; v++, i++) {
    if (i === n) return true;
    if (b[i] !== VERSION[v]) return false;
  }
  if (i === n) return true;
  if (b[i] !== 0x30 && b[i] !== 0x31) return false;
  i++;
  // end of line: CRLF (a bare LF is left for the HTTP/1 codec to refuse)
  if (i === n) return true;
  if (b[i] === 0x0a) return true;
  if (b[i] !== 0x0d) return false;
  i++;
  return i === n || b[i] === 0x0a;
}

function isMethodChar(c: number): boolean {
  return (c >= 0x41 && c <= 0x5a) || c === 0x2d || c === 0x5f; // A-Z - _
}

function isAlpha(c: number): boolean {
  return (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a);
}

export interface Detection {
  protocol: DetectedProtocol;
  /** The read timed out (protocol is then "opaque"); callers count these. */
  timedOut: boolean;
  /** What was read (and put back on the socket). */
  bytes: Uint8Array;
}

export class DetectError extends Error {
  override name = "DetectError";
}

/**
 * One read from `sock` within `timeoutMs`, classified; the bytes are unshifted back and the
 * socket is left paused for the next reader. Rejects with DetectError when the connection ends
 * or fails before sending anything.
 */
export function detectProtocol(sock: net.Socket, timeoutMs: number): Promise<Detection> {
  return new Promise((resolve, reject) => {
    let settled = false;
    const onGone = () => {
      if (settled) return;
      settled = true;
      reject(new DetectError("connection closed before protocol detection"));
    };
    sock.once("close", onGone);
    sock.once("error", onGone);
    peek(sock, () => true, DETECT_READ_BYTES, timeoutMs).then((p) => {
      sock.off("close", onGone);
      sock.off("error", onGone);
      if (settled) return;
      settled = true;
      if (p.bytes.length === 0 && p.ended) {
        reject(new DetectError("connection closed before protocol detection"));
        return;
      }
      resolve({
        protocol: p.timedOut ? "opaque" : detectHttp(p.bytes),
        timedOut: p.timedOut,
        bytes: p.bytes,
      });
    });
  });
}
