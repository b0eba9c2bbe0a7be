/**
 * What makes a request retryable, compiled from the outbound policy's route `Retry` (HTTP status
 * ranges / gRPC codes, max retries, per-try timeout, backoff, body limit) or from a ServiceProfile
 * route (`isRetryable` + the route's failure classification + the profile's retry budget).
 *
 * Errors: policy routes retry a failfast 503 (another attempt may find a ready backend), a per-try
 * timeout and an HTTP/2 REFUSED_STREAM, but not a full queue (load shed) — as Linkerd. Profile
 * routes retry responses only.
 */
import type { GrpcRoute_Retry, HttpRoute_Retry } from "../../../proto/gen_messages/outbound.ts";
import type { Backoff } from "../../config/config.ts";
import { backoffConfig } from "../../balance/config.ts";
import type { HeaderList } from "../../http/message.ts";
import {
  grpcStatusOf,
  ResponseClassification,
  type ResponseClassifier,
} from "../../metrics/response_class.ts";
import { durationMs } from "../../core/duration.ts";
import { RouteConfigError } from "../meta.ts";
import type { RetryBudget } from "./budget.ts";
import { DEFAULT_MAX_REQUEST_BYTES } from "./replay_body.ts";
import { TimeoutError } from "./timeouts.ts";

export type RetryConditions =
  | { readonly kind: "http"; readonly ranges: readonly (readonly [number, number])[] }
  | { readonly kind: "grpc"; /** bit n set = gRPC code n */ readonly codes: number }
  | { readonly kind: "profile"; readonly classifier: ResponseClassifier | undefined };

export interface RetryPolicy {
  /** Retries after the first attempt (Infinity: only the budget limits, as for profiles). */
  readonly maxRetries: number;
  /** Bodies larger than this are not buffered and such requests are not retried. */
  readonly maxRequestBytes: number;
  /** Per-try response-headers timeout. */
  readonly perTryTimeoutMs: number | undefined;
  readonly backoff: Backoff | undefined;
  /** Shared by all routes of a profile; policy routes have none. */
  readonly budget: RetryBudget | undefined;
  readonly conditions: RetryConditions;
}

const DEFAULT_HTTP_RANGES: readonly (readonly [number, number])[] = [[500, 599]];

export function httpRetryPolicy(r: HttpRoute_Retry | undefined, what: string): RetryPolicy | undefined {
  if (!r || r.maxRetries === 0) return undefined;
  const ranges = (r.conditions?.statusRanges ?? []).map((x): [number, number] => {
    const end = x.end || x.start;
    if (!(x.start >= 100 && x.start <= 599 && end >= x.start && end <= 599)) {
      throw new RouteConfigError(`${what}: invalid retry status range ${x.start}-${x.end}`);
    }
    return [x.start, end];
  });
  return routeRetry(r, what, { kind: "http", ranges: ranges.length > 0 ? ranges : DEFAULT_HTTP_RANGES });
}

/** The limits HTTP and gRPC route retries share (count, body size, per-try timeout, backoff). */
function routeRetry(
  r: HttpRoute_Retry | GrpcRoute_Retry,
  what: string,
  conditions: RetryConditions,
): RetryPolicy {
  return {
    maxRetries: r.maxRetries,
    maxRequestBytes: r.maxRequestBytes || DEFAULT_MAX_REQUEST_BYTES,
    perTryTimeoutMs: durationMs(r.timeout, `${what} retry.timeout`) || undefined,
    backoff: r.backoff
      ? backoffConfig(r.backoff, { minMs: 25, maxMs: 250, jitter: 1 }, `${what} retry.backoff`)
      : undefined,
    budget: undefined,
    conditions,
  };
}

export function grpcRetryPolicy(r: GrpcRoute_Retry | undefined, what: string): RetryPolicy | undefined {
  if (!r || r.maxRetries === 0) return undefined;
  const c = r.conditions;
  let codes = 0;
  if (c?.cancelled) codes |= 1 << 1;
  if (c?.deadineExceeded) codes |= 1 << 4;
  if (c?.resourceExhausted) codes |= 1 << 8;
  if (c?.internal) codes |= 1 << 13;
  if (c?.unavailable) codes |= 1 << 14;
  return routeRetry(r, what, { kind: "grpc", codes });
}

/** A retryable ServiceProfile route: retried while its response is a failure and the budget allows. */
export function profileRetryPolicy(
  budget: RetryBudget,
  classifier: ResponseClassifier | undefined,
): RetryPolicy {
  return {
    maxRetries: Infinity,
    maxRequestBytes: DEFAULT_MAX_REQUEST_BYTES,
    perTryTimeoutMs: undefined,
    backoff: undefined,
    budget,
    conditions: { kind: "profile", classifier },
  };
}

/**
 * True when the decision may depend on trailers not yet seen: gRPC conditions (or a profile
 * route's classification of a gRPC call) and no `grpc-status` in the response head.
 */
export function needsTrailers(
  p: RetryPolicy,
  status: number,
  headers: HeaderList,
  grpcRequest: boolean,
): boolean {
  const c = p.conditions;
  if (c.kind === "http") return false;
  if (grpcStatusOf(headers) >= 0) return false;
  if (c.kind === "grpc") return true;
  if (c.classifier?.(status, headers) !== undefined) return false;
  return grpcRequest && !(status >= 500 && status <= 599);
}

/** Whether this response should be retried (trailers: from `peekTrailers`, when available). */
export function isRetryableResponse(
  p: RetryPolicy,
  status: number,
  headers: HeaderList,
  trailers: HeaderList | undefined,
  grpcRequest: boolean,
): boolean {
  const c = p.conditions;
  switch (c.kind) {
    case "http":
      for (const [lo, hi] of c.ranges) if (status >= lo && status <= hi) return true;
      return false;
    case "grpc": {
      let code = grpcStatusOf(headers);
      if (code < 0) code = grpcStatusOf(trailers);
      return code >= 0 && code < 31 && (c.codes & (1 << code)) !== 0;
    }
    case "profile": {
      const k = new ResponseClassification(grpcRequest, c.classifier);
      k.head(status, headers);
      k.end(trailers);
      return k.failure;
    }
  }
}

/** Whether a failed attempt (rejected promise) may be retried. */
export function isRetryableError(p: RetryPolicy, e: unknown): boolean {
  if (p.conditions.kind === "profile") return false;
  if (e instanceof TimeoutError) return e.kind === "response_headers";
  if (typeof e !== "object" || e === null) return false;
  const o = e as { reason?: unknown; h2Code?: unknown };
  if (o.reason === "failfast" || o.reason === "no_endpoints") return true;
  return o.h2Code === 7; // REFUSED_STREAM: the peer did not process the request
}
