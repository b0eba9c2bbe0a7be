/**
 * Response classification as Linkerd's proxy does it (linkerd2-proxy `app/core/src/classify.rs`):
 *
 * - a service profile's response classes, when one matches the response head, decide;
 * - else a `grpc-status` in the response headers (trailers-only response) decides;
 * - else HTTP 5xx is a failure;
 * - else a `grpc-status` trailer decides; a gRPC request without one is success with grpc_status 0,
 *   any other response without one is success.
 * - a stream error (reset, I/O, timeout) is always a failure with an `error` label.
 *
 * gRPC codes that count as failures are UNKNOWN, DEADLINE_EXCEEDED, INTERNAL, UNAVAILABLE and
 * DATA_LOSS only (linkerd2-proxy #395); NOT_FOUND, INVALID_ARGUMENT etc. are the application
 * answering and count as success.
 *
 * The state lives in plain fields of one object per request (the metrics recorder extends this
 * class), so classifying allocates nothing.
 */
import type { HeaderList } from "../http/message.ts";

/**
 * A service profile's response classes for one route: `true` when the response head matches a
 * class marked failure, `false` when it matches a success class, `undefined` when none matches
 * (then the default classification applies).
 */
export type ResponseClassifier = (status: number, headers: HeaderList) => boolean | undefined;

/** `error` label values for stream failures, as Linkerd writes them. */
export const STREAM_ERROR = {
  /** The route's response timeout fired. */
  timeout: "timeout",
  /** Any failure that is not an HTTP/2 reset (I/O, connection closed, protocol error). */
  unclassified: "unclassified",
} as const;

/** `h2(CANCEL)`, `h2(PROTOCOL_ERROR)`, …: a stream reset with an HTTP/2 error code. */
export function h2ErrorLabel(code: number): string {
  return `h2(${H2_ERROR_NAMES[code] ?? `Reason(${code})`})`;
}

const H2_ERROR_NAMES = [
  "NO_ERROR",
  "PROTOCOL_ERROR",
  "INTERNAL_ERROR",
  "FLOW_CONTROL_ERROR",
  "SETTINGS_TIMEOUT",
  "STREAM_CLOSED",
  "FRAME_SIZE_ERROR",
  "REFUSED_STREAM",
  "CANCEL",
  "COMPRESSION_ERROR",
  "CONNECT_ERROR",
  "ENHANCE_YOUR_CALM",
  "INADEQUATE_SECURITY",
  "HTTP_1_1_REQUIRED",
];

/** Failure codes per Linkerd: 2 UNKNOWN, 4 DEADLINE_EXCEEDED, 13 INTERNAL, 14 UNAVAILABLE, 15 DATA_LOSS. */
export function isGrpcFailure(code: number): boolean {
  return code === 2 || code === 4 || code === 13 || code === 14 || code === 15;
}

/** The `grpc-status` value as a number, or -1 when absent or not a decimal number. */
export function grpcStatusOf(headers: HeaderList | undefined): number {
  if (headers === undefined) return -1;
  const v = headers.get("grpc-status");
  if (v === undefined || v.length === 0 || v.length > 10) return -1;
  let n = 0;
  for (let i = 0; i < v.length; i++) {
    const c = v.charCodeAt(i) - 48;
    if (c < 0 || c > 9) return -1;
    n = n * 10 + c;
  }
  return n > 0xffffffff ? -1 : n;
}

// What the response head left to decide at the end of the stream.
const PENDING_HTTP = 0;
const PENDING_GRPC = 1;
const DECIDED = 2;

/**
 * One response's classification. Call `head` when the response head arrives, then exactly one of
 * `end` (stream finished, with its trailers) or `streamError`; or `streamError` alone when the
 * request failed before any response. Read `failure`, `grpcStatus` and `error` afterwards.
 */
export class ResponseClassification {
  /** The classification: true = "failure". */
  failure = false;
  /** The gRPC status that decided, or -1. */
  grpcStatus = -1;
  /** The stream error label, or "" when the stream did not fail. */
  error = "";
  /** HTTP status of the response head, 0 before (or without) one. */
  status = 0;
  #grpcRequest: boolean;
  #profile: ResponseClassifier | undefined;
  #pending = PENDING_HTTP;

  constructor(grpcRequest: boolean, profile?: ResponseClassifier) {
    this.#grpcRequest = grpcRequest;
    this.#profile = profile;
  }

  head(status: number, headers: HeaderList): void {
    this.status = status;
    if (this.#profile !== undefined) {
      const f = this.#profile(status, headers);
      if (f !== undefined) {
        this.failure = f;
        this.#pending = DECIDED;
        return;
      }
    }
    const g = grpcStatusOf(headers);
    if (g >= 0) {
      this.#grpc(g);
    } else {
      this.#pending = this.#grpcRequest ? PENDING_GRPC : PENDING_HTTP;
    }
  }

  end(trailers: HeaderList | undefined): void {
    if (this.#pending === DECIDED) return;
    if (this.status >= 500 && this.status <= 599) {
      this.failure = true;
      this.#pending = DECIDED;
      return;
    }
    const g = grpcStatusOf(trailers);
    if (g >= 0) this.#grpc(g);
    else if (this.#pending === PENDING_GRPC) this.#grpc(0);
    else {
      this.failure = false;
      this.#pending = DECIDED;
    }
  }

  /** The stream failed (before or after the head): a failure whatever the head said. */
  streamError(label: string): void {
    this.failure = true;
    this.grpcStatus = -1;
    this.error = label || STREAM_ERROR.unclassified;
    this.#pending = DECIDED;
  }

  #grpc(code: number): void {
    this.grpcStatus = code;
    this.failure = isGrpcFailure(code);
    this.#pending = DECIDED;
  }
}

/**
 * The `error` label for a rejected request or failed body: the `reason` of an HttpError-like value
 * that timed out is "timeout"; an HTTP/2 stream reset (an `h2Code` number on the error, or Node's
 * `NGHTTP2_*` code in the message) is `h2(NAME)`; anything else is "unclassified".
 */
export function streamErrorLabel(e: unknown): string {
  if (typeof e === "object" && e !== null) {
    const o = e as { reason?: unknown; h2Code?: unknown; message?: unknown; name?: unknown };
    if (o.reason === "timeout" || o.reason === "response_timeout" || o.name === "TimeoutError") {
      return STREAM_ERROR.timeout;
    }
    if (typeof o.h2Code === "number") return h2ErrorLabel(o.h2Code);
    if (typeof o.message === "string") {
      const m = /NGHTTP2_([A-Z_0-9]+)/.exec(o.message);
      if (m) {
        const i = H2_ERROR_NAMES.indexOf(m[1]);
        if (i >= 0) return h2ErrorLabel(i);
      }
    }
  }
  return STREAM_ERROR.unclassified;
}
