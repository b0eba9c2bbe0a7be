/**
 * Request timeouts as the outbound policy's `Timeouts` define them (Linkerd's stream timeouts):
 *
 * - `request`: limit on the whole stream — all attempts, backoffs and the response body;
 * - `response`: per attempt, from the end of the request body (or the response head, if that comes
 *   first) to the end of the response body;
 * - `idle`: the stream may not go this long without a body chunk in either direction;
 * - the retry policy's per-try `timeout`: per attempt, from the end of the request body to the
 *   response head. It is dropped on the last permitted attempt (nothing to retry then).
 *
 * `StreamTimer` holds these timers for one request or one attempt and exposes an AbortSignal that
 * aborts with a `TimeoutError` (HttpError 504, reason "timeout", gRPC DEADLINE_EXCEEDED) or with
 * the parent signal's reason. `WatchedBody` ties a body to a timer: chunks count as activity, the
 * end of the body clears the timers, an abort rejects the pending read and cancels the stream.
 */
import type { Duration } from "../../../proto/gen_messages/google/protobuf/duration.ts";
import type { Timeouts } from "../../../proto/gen_messages/http_route.ts";
import type { Clock } from "../../../proto/support/clock.ts";
import { type Body, type HeaderList, HttpError } from "../../http/message.ts";
import { durationMs } from "../../core/duration.ts";

export interface RouteTimeouts {
  readonly requestMs?: number;
  readonly responseMs?: number;
  readonly idleMs?: number;
}

export const NO_TIMEOUTS: RouteTimeouts = Object.freeze({});

/** From a route rule's `timeouts` (and the deprecated `requestTimeout`, used when `timeouts.request` is unset). */
export function routeTimeouts(
  t: Timeouts | undefined,
  legacyRequest: Duration | undefined,
  what: string,
): RouteTimeouts {
  const requestMs = durationMs(t?.request, `${what} timeouts.request`) ??
    durationMs(legacyRequest, `${what} requestTimeout`);
  const responseMs = durationMs(t?.response, `${what} timeouts.response`);
  const idleMs = durationMs(t?.idle, `${what} timeouts.idle`);
  const out: { requestMs?: number; responseMs?: number; idleMs?: number } = {};
  // A zero duration means "no timeout" (Gateway API), as in Linkerd.
  if (requestMs) out.requestMs = requestMs;
  if (responseMs) out.responseMs = responseMs;
  if (idleMs) out.idleMs = idleMs;
  return Object.keys(out).length === 0 ? NO_TIMEOUTS : out;
}

export function hasTimeouts(t: RouteTimeouts): boolean {
  return t.requestMs !== undefined || t.responseMs !== undefined || t.idleMs !== undefined;
}

export type TimeoutKind = "request" | "response_headers" | "response" | "idle";

const LABEL: Record<TimeoutKind, string> = {
  request: "request timeout",
  response_headers: "response headers timeout (per try)",
  response: "response timeout",
  idle: "idle timeout",
};

/** A route timeout fired: HTTP 504, gRPC 4 DEADLINE_EXCEEDED. */
export class TimeoutError extends HttpError {
  constructor(readonly kind: TimeoutKind, readonly ms: number) {
    super(504, `${LABEL[kind]} of ${ms} ms elapsed`, "timeout", 4);
    this.name = "TimeoutError";
  }
}

/** Timers of one request or attempt; `signal` aborts when one fires or the parent aborts. */
export class StreamTimer {
  readonly #controller = new AbortController();
  readonly #clock: Clock;
  readonly #parent: AbortSignal | undefined;
  #onParentAbort: (() => void) | undefined;
  #cancelRequest: (() => void) | undefined;
  #cancelHeaders: (() => void) | undefined;
  #cancelResponse: (() => void) | undefined;
  #cancelIdle: (() => void) | undefined;
  #idleMs = 0;
  #lastActivity = 0;
  #cleared = false;

  constructor(clock: Clock, parent: AbortSignal | undefined) {
    this.#clock = clock;
    this.#parent = parent;
    if (parent) {
      if (parent.aborted) this.#controller.abort(parent.reason);
      else {
        this.#onParentAbort = () => this.#controller.abort(parent.reason);
        parent.addEventListener("abort", this.#onParentAbort, { once: true });
      }
    }
  }

  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  /** Starts the timer of `kind` (no-op if it is already running or the stream is over). */
  arm(kind: Exclude<TimeoutKind, "idle">, ms: number): void {
    if (this.#cleared || this.signal.aborted) return;
    const fire = () => this.#fire(kind, ms);
    if (kind === "request") this.#cancelRequest ??= this.#clock.after(ms, fire);
    else if (kind === "response_headers") this.#cancelHeaders ??= this.#clock.after(ms, fire);
    else this.#cancelResponse ??= this.#clock.after(ms, fire);
  }

  isArmed(kind: Exclude<TimeoutKind, "idle">): boolean {
    return (kind === "request"
      ? this.#cancelRequest
      : kind === "response_headers"
      ? this.#cancelHeaders
      : this.#cancelResponse) !== undefined;
  }

  disarm(kind: Exclude<TimeoutKind, "idle">): void {
    if (kind === "request") {
      this.#cancelRequest?.();
      this.#cancelRequest = undefined;
    } else if (kind === "response_headers") {
      this.#cancelHeaders?.();
      this.#cancelHeaders = undefined;
    } else {
      this.#cancelResponse?.();
      this.#cancelResponse = undefined;
    }
  }

  /** Aborts when `ms` pass without `touch()`. Checked lazily: one timer, re-armed only on expiry. */
  idle(ms: number): void {
    if (this.#cleared || this.#cancelIdle) return;
    this.#idleMs = ms;
    this.#lastActivity = this.#clock.now();
    this.#armIdle(ms);
  }

  /** Body activity (resets the idle timeout). */
  touch(): void {
    if (this.#idleMs) this.#lastActivity = this.#clock.now();
  }

  /** Stops every timer and detaches from the parent; the signal stays as it is. */
  clear(): void {
    if (this.#cleared) return;
    this.#cleared = true;
    this.disarm("request");
    this.disarm("response_headers");
    this.disarm("response");
    this.#cancelIdle?.();
    this.#cancelIdle = undefined;
    if (this.#onParentAbort) this.#parent!.removeEventListener("abort", this.#onParentAbort);
    this.#onParentAbort = undefined;
  }

  #armIdle(ms: number): void {
    this.#cancelIdle = this.#clock.after(ms, () => {
      this.#cancelIdle = undefined;
      const due = this.#lastActivity + this.#idleMs - this.#clock.now();
      if (due > 0) this.#armIdle(due);
      else this.#fire("idle", this.#idleMs);
    });
  }

  #fire(kind: TimeoutKind, ms: number): void {
    if (this.#cleared || this.signal.aborted) return;
    this.#controller.abort(new TimeoutError(kind, ms));
    this.clear();
  }
}

/**
 * A body whose reads count as activity on `timers`, whose end (or cancel) runs `onEnd` once, and
 * which fails with the abort reason when `signal` aborts (cancelling the inner stream).
 */
export class WatchedBody implements Body {
  readonly #inner: Body;
  readonly #signal: AbortSignal | undefined;
  readonly #onChunk: (() => void) | undefined;
  #onEnd: (() => void) | undefined;
  #pendingReject: ((e: unknown) => void) | undefined;
  readonly #onAbort: (() => void) | undefined;

  constructor(
    inner: Body,
    signal: AbortSignal | undefined,
    onChunk: (() => void) | undefined,
    onEnd: (() => void) | undefined,
  ) {
    this.#inner = inner;
    this.#signal = signal;
    this.#onChunk = onChunk;
    this.#onEnd = onEnd;
    if (signal) {
      this.#onAbort = () => {
        const reason = signal.reason;
        this.#inner.cancel(reason instanceof Error ? reason : new Error(String(reason)));
        const r = this.#pendingReject;
        this.#pendingReject = undefined;
        this.#finish();
        r?.(reason);
      };
      signal.addEventListener("abort", this.#onAbort, { once: true });
    }
  }

  get length(): number | undefined {
    return this.#inner.length;
  }

  get trailers(): HeaderList | undefined {
    return this.#inner.trailers;
  }

  read(): Promise<Uint8Array | null> {
    const s = this.#signal;
    if (s?.aborted) return Promise.reject(s.reason);
    if (!s) return this.#inner.read().then((c) => this.#after(c));
    return new Promise((resolve, reject) => {
      this.#pendingReject = reject;
      this.#inner.read().then(
        (c) => {
          if (this.#pendingReject !== reject) return; // aborted meanwhile
          this.#pendingReject = undefined;
          resolve(this.#after(c));
        },
        (e) => {
          if (this.#pendingReject !== reject) return;
          this.#pendingReject = undefined;
          this.#finish();
          reject(e);
        },
      );
    });
  }

  readNow(): Uint8Array | null | undefined {
    const s = this.#signal;
    if (s?.aborted) throw s.reason;
    if (this.#pendingReject !== undefined) return undefined; // a read() is waiting: keep order
    let c: Uint8Array | null | undefined;
    try {
      c = this.#inner.readNow?.();
    } catch (e) {
      this.#finish();
      throw e;
    }
    return c === undefined ? undefined : this.#after(c);
  }

  cancel(reason?: Error): void {
    this.#inner.cancel(reason);
    this.#finish();
  }

  #after(c: Uint8Array | null): Uint8Array | null {
    if (c === null) this.#finish();
    else this.#onChunk?.();
    return c;
  }

  #finish(): void {
    if (this.#onAbort) this.#signal!.removeEventListener("abort", this.#onAbort);
    const f = this.#onEnd;
    this.#onEnd = undefined;
    f?.();
  }
}
