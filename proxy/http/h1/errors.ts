/** Errors of the HTTP/1 codec, as `HttpError`s so the status travels with them through any layer. */
import { HttpError } from "../message.ts";

const REASONS: Record<number, string> = {
  400: "bad_request",
  408: "header_timeout",
  417: "expectation_failed",
  431: "headers_too_large",
  501: "not_implemented",
  502: "bad_response",
  505: "version_not_supported",
};

/**
 * A message that cannot be parsed. The status is what a server answers (400, 431, 505, ...);
 * for malformed responses from an upstream it is 502.
 */
export class H1ParseError extends HttpError {
  constructor(status: number, message: string) {
    super(status, message, REASONS[status] ?? "bad_message");
    this.name = "H1ParseError";
  }
}

/**
 * An exchange on an HTTP/1 client connection failed. `safeToRetry` is true when the request can
 * be sent again on another connection without the server possibly having acted on it twice:
 * no response byte arrived and either nothing was written or the request is idempotent and its
 * body was never read.
 */
export class Http1ClientError extends HttpError {
  constructor(message: string, reason: string, readonly safeToRetry: boolean) {
    super(502, message, reason);
    this.name = "Http1ClientError";
  }
}
