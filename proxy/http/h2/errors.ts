/** Errors of the HTTP/2 layer, carrying the HTTP/2 error code so a reset can be passed on as such. */
import { HttpError } from "../message.ts";

/** A stream ended by RST_STREAM (or by its connection closing) instead of END_STREAM. */
export class Http2StreamReset extends Error {
  override name = "Http2StreamReset";
  constructor(
    message: string,
    readonly code: number,
    /** The connection closed or failed, rather than a RST_STREAM for this stream. */
    readonly connectionLost = false,
  ) {
    super(message);
  }
}

/**
 * A request on an HTTP/2 client connection failed before a response arrived. `safeToRetry` is
 * true when the server cannot have acted on it: the connection never came up, or the server
 * refused the stream (REFUSED_STREAM, or a GOAWAY that excludes it).
 */
export class Http2ClientError extends HttpError {
  constructor(
    message: string,
    reason: string,
    readonly safeToRetry: boolean,
    /** HTTP/2 error code when the stream was reset. */
    readonly code?: number,
  ) {
    super(502, message, reason, 14 /* UNAVAILABLE */);
    this.name = "Http2ClientError";
  }
}
