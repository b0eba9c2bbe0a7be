/**
 * Reads the first bytes of a connection for protocol detection and puts them back, so the next
 * reader (a TLS layer, the forwarder, the HTTP server) sees the stream from its start, its EOF
 * included.
 */
import type * as net from "node:net";

export interface Peeked {
  bytes: Uint8Array;
  /** True when the deadline passed before `decide` was satisfied. */
  timedOut: boolean;
  /** The client ended its side (EOF), which is left for the next reader to see. */
  ended: boolean;
}

/**
 * Collects the first bytes of `sock` until `decide` holds, `max` bytes are read, the client's EOF
 * arrives or the timeout passes; then pauses the socket and puts the bytes back. The EOF is held
 * back while collecting (the socket's `push(null)` is intercepted) and delivered after the bytes
 * are put back: once a stream has emitted `end` nothing can be put back, and the next reader
 * (the forwarder, the HTTP server) would lose both the bytes and the half-close.
 */
export function peek(
  sock: net.Socket,
  decide: (bytes: Uint8Array) => boolean,
  max: number,
  timeoutMs: number,
): Promise<Peeked> {
  return new Promise((resolve) => {
    type Push = (chunk: unknown, encoding?: BufferEncoding) => boolean;
    const target = sock as unknown as { push: Push };
    const ownPush = Object.prototype.hasOwnProperty.call(sock, "push");
    const push = target.push;
    const chunks: Uint8Array[] = [];
    let total = 0;
    let done = false;
    let eof = false;
    const joined = () => {
      if (chunks.length === 1) return chunks[0];
      const out = new Uint8Array(total);
      let off = 0;
      for (const c of chunks) {
        out.set(c, off);
        off += c.length;
      }
      chunks.splice(0, chunks.length, out);
      return out;
    };
    const finish = (timedOut: boolean) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      sock.off("data", onData);
      if (ownPush) target.push = push;
      else delete (target as { push?: Push }).push;
      sock.pause();
      const bytes = total === 0 ? new Uint8Array(0) : joined();
      if (bytes.length > 0) sock.unshift(bytes);
      if (eof) push.call(sock, null);
      resolve({ bytes, timedOut, ended: eof });
    };
    target.push = function (this: unknown, chunk: unknown, encoding?: BufferEncoding): boolean {
      if (chunk === null && !done) {
        eof = true;
        finish(false);
        return false;
      }
      return push.call(this, chunk, encoding);
    };
    const onData = (chunk: Uint8Array) => {
      chunks.push(chunk);
      total += chunk.length;
      if (total >= max || decide(joined())) finish(false);
    };
    const timer = setTimeout(() => finish(true), timeoutMs);
    sock.on("data", onData);
    sock.resume();
  });
}
