/**
 * Sends a `Body` on an outgoing node:http2 stream (a request on the client side, a response on
 * the server side) with backpressure: the next chunk is pulled only after node:http2 has taken
 * the last one, so a peer with a closed flow-control window stops the reader upstream.
 */
import type * as http2 from "node:http2";
import { constants } from "node:http2";
import type { Body } from "../message.ts";
import { sendableTrailers } from "./headers.ts";
import { Http2StreamReset } from "./errors.ts";
import { resetStream } from "./reset_stream.ts";

/**
 * The stream must have been opened with `waitForTrailers: true`: after the last chunk the body's
 * trailers go out as a HEADERS frame, or (none) an empty DATA frame carries END_STREAM. If the
 * body fails, the stream is reset with the code the body's own stream was reset with (else
 * INTERNAL_ERROR); if the stream closes first, the body is cancelled. Resolves true when the
 * whole body was handed to node:http2, false when the exchange was cut short.
 */
export async function writeBody(stream: http2.Http2Stream, body: Body): Promise<boolean> {
  let done = false;
  const gone = () => stream.destroyed || stream.closed;
  // A stream that closes while we wait for the next chunk must not leave the source running.
  const onClose = () => {
    if (!done) body.cancel(new Error("stream closed by peer"));
  };
  stream.once("close", onClose);
  stream.once("wantTrailers", () => {
    const t = body.trailers;
    if (stream.destroyed) return;
    try {
      stream.sendTrailers(t !== undefined && t.size > 0 ? sendableTrailers(t) : {});
    } catch {
      resetStream(stream, constants.NGHTTP2_INTERNAL_ERROR);
    }
  });
  try {
    for (;;) {
      let chunk: Uint8Array | null;
      try {
        chunk = await body.read();
      } catch (e) {
        resetStream(stream, e instanceof Http2StreamReset ? e.code : constants.NGHTTP2_INTERNAL_ERROR);
        return false;
      }
      if (gone()) {
        // Closed (e.g. RST from the peer) before its 'close' event: the source must stop too.
        body.cancel(new Error("stream closed by peer"));
        return false;
      }
      if (chunk === null) break;
      if (!stream.write(chunk) && !(await drained(stream))) {
        body.cancel(new Error("stream closed by peer"));
        return false;
      }
    }
    stream.end();
    return true;
  } finally {
    done = true;
    stream.off("close", onClose);
  }
}

/** Resolves true on 'drain', false if the stream closes first. */
function drained(stream: http2.Http2Stream): Promise<boolean> {
  return new Promise((resolve) => {
    const onDrain = () => {
      stream.off("close", onClose);
      resolve(true);
    };
    const onClose = () => {
      stream.off("drain", onDrain);
      resolve(false);
    };
    stream.once("drain", onDrain);
    stream.once("close", onClose);
  });
}
