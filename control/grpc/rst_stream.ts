/**
 * Resets a server call at the HTTP/2 level (RST_STREAM with `code`, CANCEL by default). A gRPC
 * status written behind data the client does not read would never arrive, and the server would keep
 * the stream and its buffered bytes; a reset frees both at once. grpc-js keeps the HTTP/2 stream on
 * the innermost call of its interceptor chain; when the shape is not as expected this returns false
 * and the caller falls back to ending the call with a status.
 */
import * as http2 from "node:http2";

export function rstStream(call: unknown, code: number = http2.constants.NGHTTP2_CANCEL): boolean {
  try {
    // deno-lint-ignore no-explicit-any
    let c: any = (call as any).call;
    for (let i = 0; c && i < 10 && !c.stream; i++) c = c.nextCall;
    const stream = c?.stream as http2.ServerHttp2Stream | undefined;
    if (!stream || typeof stream.close !== "function") return false;
    if (!stream.closed) stream.close(code);
    return true;
  } catch {
    return false;
  }
}
