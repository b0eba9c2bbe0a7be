/**
 * HTTP protocol detection on the first bytes of a connection: the HTTP/2 preface → HTTP/2, the
 * start of an HTTP/1 request (the grammar in `h1/request_line.ts`, which accepts whatever the
 * proxy's HTTP/1 server would read as a request) → HTTP/1, anything else → opaque TCP.
 *
 * Detection reads until the bytes decide (up to 1024 of them) or the detect timeout passes. Bytes
 * that could still be the start of a request when reading stops count as HTTP, so a client cannot
 * dribble a request line past the timeout (or past 1024 bytes) to be forwarded as opaque TCP,
 * which would skip route authorization. Only a client that sends nothing within the timeout is
 * opaque on timeout (server-speaks-first protocols), and then still authorized per connection;
 * so is an undecided start the client ended with EOF. EOF before any byte is an error. The bytes read are put back on the socket, so the next layer
 * sees the stream from its start.
 */
import type * as net from "node:net";
import { peek } from "../transport/peek.ts";
import { classifyRequestLine, NOT_REQUEST, REQUEST_LINE } from "./h1/request_line.ts";

export type DetectedProtocol = "http2" | "http1" | "opaque";
/** What the first bytes say so far; `undecided` needs more bytes. */
export type Classification = DetectedProtocol | "undecided";

/** What the detector reads at most; more may have arrived and is put back untouched. */
export const DETECT_READ_BYTES = 1024;

const PREFACE = new TextEncoder().encode("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");

/** Classifies the first bytes of a connection (only the first 1024 are looked at). */
export function detectHttp(bytes: Uint8Array): Classification {
  const b = bytes.length > DETECT_READ_BYTES ? bytes.subarray(0, DETECT_READ_BYTES) : bytes;
  if (isPrefacePrefix(b)) return b.length >= PREFACE.length ? "http2" : "undecided";
  const c = classifyRequestLine(b);
  return c === REQUEST_LINE ? "http1" : c === NOT_REQUEST ? "opaque" : "undecided";
}

/**
 * The protocol of bytes that stopped arriving (timeout, or the read limit) while still
 * undecided: HTTP, never opaque, unless nothing arrived at all. When the client ended its side
 * (`ended`) the start can never become a request (no server acts on an unterminated request
 * line), so it is opaque: a short message and a half-close (`hello`, EOF) still passes as TCP.
 */
export function settle(bytes: Uint8Array, ended = false): DetectedProtocol {
  const c = detectHttp(bytes);
  if (c !== "undecided") return c;
  if (bytes.length === 0 || ended) return "opaque";
  return isPrefacePrefix(bytes) ? "http2" : "http1";
}

function isPrefacePrefix(b: Uint8Array): boolean {
  const n = Math.min(b.length, PREFACE.length);
  for (let i = 0; i < n; i++) if (b[i] !== PREFACE[i]) return false;
  return true;
}

export interface Detection {
  protocol: DetectedProtocol;
  /** The read timed out (callers count these); with no byte read the protocol is "opaque". */
  timedOut: boolean;
  /** What was read (and put back on the socket). */
  bytes: Uint8Array;
}

export class DetectError extends Error {
  override name = "DetectError";
}

/**
 * Reads from `sock` until the bytes decide, 1024 are read, the client ends its side or
 * `timeoutMs` passes, and classifies them; the bytes are put back and the socket is left paused
 * for the next reader. Rejects with DetectError when the connection ends or fails before sending
 * anything.
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
    peek(sock, (b) => detectHttp(b) !== "undecided", DETECT_READ_BYTES, timeoutMs).then((p) => {
      sock.off("close", onGone);
      sock.off("error", onGone);
      if (settled) return;
      settled = true;
      if (p.bytes.length === 0 && p.ended) {
        reject(new DetectError("connection closed before protocol detection"));
        return;
      }
      resolve({
        protocol: settle(p.bytes, p.ended),
        timedOut: p.timedOut,
        bytes: p.bytes,
      });
    });
  });
}
