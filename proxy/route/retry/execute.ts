/**
 * Sends one request through `inner` with a route's retry policy and timeouts: the body is made
 * replayable (within the policy's limit), each attempt gets its timers, retryable answers within
 * the limits and budget are retried after a backoff (each retry goes through `inner` again, so it
 * may pick another backend and endpoint), and the response that is returned keeps the request's
 * timeouts on its body. With neither retries nor timeouts the request goes straight through.
 *
 * Per request this costs a few small objects only when the route has retries or timeouts.
 */
import type { Clock } from "../../../proto/support/clock.ts";
import { backoffDelay } from "../../core/backoff.ts";
import type { Rng } from "../../core/rng.ts";
import {
  type Body,
  type HttpRequest,
  type HttpResponse,
  type HttpService,
  isGrpc,
} from "../../http/message.ts";
import { type Layer, passThrough } from "../../http/layer.ts";
import { peekTrailers } from "./peek_trailers.ts";
import { isRetryableError, isRetryableResponse, needsTrailers, type RetryPolicy } from "./policy.ts";
import { ReplayBody } from "./replay_body.ts";
import { hasTimeouts, type RouteTimeouts, StreamTimer, TimeoutError, WatchedBody } from "./timeouts.ts";

/** What a route rule says about sending a request: its timeouts and retry policy. */
export interface RequestPlan {
  readonly timeouts: RouteTimeouts;
  readonly retry: RetryPolicy | undefined;
}

export interface ExecuteDeps {
  clock: Clock;
  rng: Rng;
  /**
   * A retryable response or error was seen; `retried` false when a limit stopped the retry
   * ("budget", "limit", "body"). For route_retryable_total-style metrics; must not throw.
   */
  onRetryable?: (retried: boolean, skipped: "budget" | "limit" | "body" | undefined) => void;
  /**
   * Linkerd's route retry counters, per request: a retry sent (`requests`), a retried request
   * answered by a response not to retry (`successes`), a retryable outcome with no retry left
   * (`limit_exceeded`), a retry the budget refused (`overflow`). Must not throw.
   */
  onRetryEvent?: (req: HttpRequest, event: RetryEvent) => void;
}

export type RetryEvent = "requests" | "successes" | "limit_exceeded" | "overflow";

export const DIRECT: RequestPlan = Object.freeze({ timeouts: {}, retry: undefined });

function sleep(clock: Clock, ms: number, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      cancel();
      reject(signal.reason);
    };
    const cancel = clock.after(ms, () => {
      signal.removeEventListener("abort", onAbort);
      resolve();
    });
    signal.addEventListener("abort", onAbort, { once: true });
  });
}

/** The timeout that caused an abort, when it was ours; else the error itself. */
function explain(e: unknown, ...signals: (AbortSignal | undefined)[]): unknown {
  if (e instanceof TimeoutError) return e;
  for (const s of signals) if (s?.aborted && s.reason instanceof TimeoutError) return s.reason;
  return e;
}

/** True when a plan has neither retries nor timeouts: `execute` would only call through. */
function isDirect(plan: RequestPlan): boolean {
  return !plan.retry && !hasTimeouts(plan.timeouts);
}

export function execute(
  req: HttpRequest,
  signal: AbortSignal,
  plan: RequestPlan,
  inner: HttpService,
  deps: ExecuteDeps,
): Promise<HttpResponse> {
  return retryLayer(plan, deps)(inner)(req, signal);
}

/** `execute` as a layer: composed once per route, it adds nothing when the plan has nothing to do. */
export function retryLayer(plan: RequestPlan, deps: ExecuteDeps): Layer {
  if (isDirect(plan)) return passThrough;
  return (inner) => (req, signal) => executePlan(req, signal, plan, inner, deps);
}

async function executePlan(
  req: HttpRequest,
  signal: AbortSignal,
  plan: RequestPlan,
  inner: HttpService,
  deps: ExecuteDeps,
): Promise<HttpResponse> {
  const t = plan.timeouts;
  const retry = plan.retry;

  const { clock } = deps;
  // Request-wide timers: total limit and idleness, over every attempt and the response body.
  let stream: StreamTimer | undefined;
  if (t.requestMs !== undefined || t.idleMs !== undefined) {
    stream = new StreamTimer(clock, signal);
    if (t.requestMs !== undefined) stream.arm("request", t.requestMs);
    if (t.idleMs !== undefined) stream.idle(t.idleMs);
  }
  const streamSignal = stream?.signal ?? signal;
  const touch = stream && t.idleMs !== undefined ? () => stream!.touch() : undefined;

  retry?.budget?.deposit();
  const replay = retry ? ReplayBody.wrap(req.body, retry.maxRequestBytes) : undefined;
  const grpc = retry ? isGrpc(req.headers) : false;

  for (let n = 0;; n++) {
    const retriesLeft = retry !== undefined && replay !== undefined && n < retry.maxRetries;
    // Per-attempt timers: response headers (per try, not on the last attempt) and response end.
    const headersMs = retriesLeft ? retry!.perTryTimeoutMs : undefined;
    let attempt: StreamTimer | undefined;
    if (headersMs !== undefined || t.responseMs !== undefined) attempt = new StreamTimer(clock, streamSignal);
    const flushed = attempt
      ? () => {
        if (headersMs !== undefined) attempt!.arm("response_headers", headersMs);
        if (t.responseMs !== undefined) attempt!.arm("response", t.responseMs);
      }
      : undefined;

    let body: Body = replay ? replay.cursor() : req.body;
    if (flushed && body.length === 0) flushed();
    if (touch || (flushed && body.length !== 0)) {
      const onEnd = flushed && body.length !== 0 ? flushed : undefined;
      body = new WatchedBody(body, undefined, touch, onEnd);
    }
    const attemptReq: HttpRequest = n === 0 && body === req.body
      ? req
      : { ...req, headers: n === 0 ? req.headers : req.headers.clone(), body };
    const attemptSignal = attempt?.signal ?? streamSignal;

    const fail = (e0: unknown): unknown => {
      attempt?.clear();
      const e = explain(e0, attempt?.signal, stream?.signal);
      replay?.dispose(e instanceof Error ? e : undefined);
      stream?.clear();
      return e;
    };

    let res: HttpResponse;
    try {
      res = await inner(attemptReq, attemptSignal);
    } catch (e0) {
      attempt?.clear();
      const e = explain(e0, attempt?.signal, stream?.signal);
      let again = false;
      if (retry && !streamSignal.aborted && isRetryableError(retry, e)) {
        try {
          again = await retryAllowed(req, retry, replay, retriesLeft, deps, n, streamSignal);
        } catch (e1) {
          throw fail(e1);
        }
      }
      if (again) continue;
      throw fail(e);
    }

    if (attempt) {
      attempt.disarm("response_headers");
      if (t.responseMs !== undefined) attempt.arm("response", t.responseMs);
    }

    if (retry) {
      let again = false;
      let retryable = false;
      try {
        let trailers = undefined;
        if (needsTrailers(retry, res.status, res.headers, grpc)) {
          const p = await peekTrailers(res.body);
          res = { ...res, body: p.body };
          trailers = p.trailers;
        }
        if (isRetryableResponse(retry, res.status, res.headers, trailers, grpc)) {
          retryable = true;
          const discard = res.body;
          again = await retryAllowed(req, retry, replay, retriesLeft, deps, n, streamSignal, () => {
            discard.cancel(new Error("response discarded for a retry"));
            attempt?.clear();
          });
        }
      } catch (e0) {
        res.body.cancel();
        throw fail(e0);
      }
      if (again) continue;
      // A retry answered by a response that is not itself retryable (Linkerd's `successes`).
      if (n > 0 && !retryable) deps.onRetryEvent?.(req, "successes");
    }

    replay?.seal();
    if (!stream && !attempt) return res;
    if (res.body.length === 0 && !res.upgrade) {
      // Nothing more will flow (codecs may not even read an empty body): stop the timers now.
      attempt?.clear();
      stream?.clear();
      return res;
    }
    const onEnd = () => {
      attempt?.clear();
      stream?.clear();
    };
    return { ...res, body: new WatchedBody(res.body, attempt?.signal ?? streamSignal, touch, onEnd) };
  }
}

/** Checks limits and budget, then waits the backoff; true when the next attempt should go. */
async function retryAllowed(
  req: HttpRequest,
  retry: RetryPolicy,
  replay: ReplayBody | undefined,
  retriesLeft: boolean,
  deps: ExecuteDeps,
  n: number,
  signal: AbortSignal,
  discard?: () => void,
): Promise<boolean> {
  if (!retriesLeft) {
    deps.onRetryable?.(false, replay ? "limit" : "body");
    if (replay) deps.onRetryEvent?.(req, "limit_exceeded");
    return false;
  }
  if (!replay!.canReplay) {
    deps.onRetryable?.(false, "body");
    return false;
  }
  if (retry.budget && !retry.budget.withdraw()) {
    deps.onRetryable?.(false, "budget");
    deps.onRetryEvent?.(req, "overflow");
    return false;
  }
  deps.onRetryable?.(true, undefined);
  deps.onRetryEvent?.(req, "requests");
  discard?.();
  if (retry.backoff) await sleep(deps.clock, backoffDelay(retry.backoff, n, deps.rng), signal);
  return true;
}
