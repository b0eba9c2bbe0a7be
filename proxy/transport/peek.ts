/**
 * Reads the first bytes of a connection for protocol detection and puts them back, so the next
 * reader (a TLS layer or the forwarder) sees the stream from its start.
 */
import type * as net from "node:net";

export interface Peeked {
  bytes: Uint8Array;
  /** True when the deadline passed before `decide` was satisfied. */
  timedOut: boolean;
  ended: boolean;
}

/**
 * Accumulates data until `decide(bytes)` returns true, the socket ends, `max` bytes are read or
 * the timeout passes; then pauses the socket and unshifts what was read.
 */
export function peek(
  sock: net.Socket,
  decide: (bytes: Uint8Array) => boolean,
  max: number,
  timeoutMs: number,
): Promise<Peeked> {
  return new Promise((resolve) => {
    const chunks: Uint8Array[] = [];
    let total = 0;
    let done = false;
    const joined = () => {
      if (chunks.length === 1) return chunks[0];
      const out = new Uint8Array(total);
      let off = 0;
      for (const c of chunks) {
        out.set(c, off);
        off += c.length;
      }
      return out;
    };
    const finish = (timedOut: boolean, ended: boolean) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      sock.off("data", onData);
      sock.off("end", onEnd);
      sock.pause();
      const bytes = total === 0 ? new Uint8Array(0) : joined();
      if (bytes.length > 0) sock.unshift(bytes);
      resolve({ bytes, timedOut, ended });
    };
    const onData = (chunk: Uint8Array) => {
      chunks.push(chunk);
      total += chunk.length;
      if (total >= max || decide(joined())) finish(false, false);
    };
    const onEnd = () => finish(false, true);
    const timer = setTimeout(() => finish(true, false), timeoutMs);
    sock.on("data", onData);
    sock.once("end", onEnd);
    sock.resume();
  });
}
