import type * as http2 from "node:http2";

/**
 * Sends RST_STREAM with `code`. Deno 2.9.6's `close(code)` on a stream whose writable side is
 * still open first ends that side, so the peer sees END_STREAM (a complete message) and no
 * reset at all; ending the writable side ourselves just before `close` makes the RST go out
 * instead (checked with raw frames in the tests).
 */
export function resetStream(stream: http2.Http2Stream, code: number): void {
  if (stream.destroyed || stream.closed) return;
  if (!stream.writableEnded) stream.end();
  stream.close(code);
}
