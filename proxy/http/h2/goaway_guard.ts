/**
 * Keeps a peer's GOAWAY away from Deno 2.9.6's nghttp2 session on the server side.
 *
 * Deno 2.9.6 aborts the whole process (nghttp2 assertion `stream->closed_next == NULL` in
 * find_stream_on_goaway_func, or `free(): invalid pointer`) when a client that has used a
 * connection for more than about a hundred streams closes it with GOAWAY — which grpc-js,
 * node:http2 and most HTTP/2 clients do. Closing without GOAWAY, or the server sending GOAWAY
 * first, does not crash (see goaway_guard_test.ts for the evidence, re-checked per upgrade).
 *
 * So the frame type of every GOAWAY arriving from the peer is rewritten in place to an unknown
 * extension type, which HTTP/2 requires receivers to ignore (RFC 9113 §4.1, §5.5), and the
 * guard reports it; the owner then closes gracefully from its own side. Only frame headers are
 * looked at, in place, without copying: the cost is one listener call per socket chunk.
 */
import type * as net from "node:net";

const GOAWAY = 7;
/** An extension frame type no one defines; nghttp2 ignores it. */
const IGNORED_TYPE = 0xfa;
const PREFACE_LEN = 24;

export interface GoawaySeen {
  /** The GOAWAY's error code (0 when it could not be read from the same chunk). */
  code: number;
}

/**
 * Starts rewriting `socket`'s incoming GOAWAY frames. Must be installed before the HTTP/2
 * session attaches, so that its 'data' listener runs first and changes each chunk before
 * nghttp2 reads it. Bytes already buffered in the socket (unshifted by a peek) are scanned too.
 * `onGoaway` runs in a microtask after the chunk holding the frame has been handed on.
 */
export function guardGoaway(
  socket: net.Socket,
  skipPreface: boolean,
  onGoaway: (g: GoawaySeen) => void,
): void {
  // State across chunks: payload bytes still to skip, and how far into a frame header we are.
  let skip = skipPreface ? PREFACE_LEN : 0;
  let headAt = 0;
  let len = 0;
  let isGoaway = false;
  // Error code of the GOAWAY being skipped: payload bytes 4..7.
  let payloadAt = 0;
  let code = 0;
  let seen = false;

  const scan = (c: Uint8Array): void => {
    const n = c.length;
    let i = 0;
    while (i < n) {
      if (skip > 0) {
        if (isGoaway) {
          const end = Math.min(n, i + skip);
          for (let j = i; j < end; j++, payloadAt++) {
            if (payloadAt >= 4 && payloadAt < 8) code = ((code << 8) | c[j]) >>> 0;
          }
        }
        const k = Math.min(skip, n - i);
        skip -= k;
        i += k;
        if (skip === 0 && isGoaway) {
          isGoaway = false;
          seen = true;
        }
        continue;
      }
      // Frame header, byte by byte: 3 length bytes, type, flags, 4 stream id bytes.
      const b = c[i];
      if (headAt < 3) len = (len << 8) | b;
      else if (headAt === 3 && b === GOAWAY) {
        c[i] = IGNORED_TYPE;
        isGoaway = true;
        payloadAt = 0;
        code = 0;
      }
      headAt++;
      i++;
      if (headAt === 9) {
        headAt = 0;
        skip = len;
        len = 0;
        if (skip === 0 && isGoaway) {
          isGoaway = false;
          seen = true;
        }
      }
    }
  };
  const onChunk = (c: Uint8Array) => {
    scan(c);
    if (seen) {
      seen = false;
      const g = { code };
      queueMicrotask(() => onGoaway(g));
    }
  };

  if (socket.readableLength > 0) {
    const buffered: Uint8Array[] = [];
    for (let c = socket.read(); c !== null; c = socket.read()) buffered.push(c as Uint8Array);
    for (const c of buffered) onChunk(c);
    for (let k = buffered.length - 1; k >= 0; k--) socket.unshift(buffered[k]);
  }
  socket.prependListener("data", onChunk);
}
