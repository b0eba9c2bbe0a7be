/**
 * One request's measurement (`RequestRecorder`), the response body wrapper that feeds it, and the
 * metrics layer (`recordRequests`) that starts one per request.
 */
import type { Body, HeaderList, HttpRequest, HttpResponse, HttpService } from "../http/message.ts";
import { isGrpc } from "../http/message.ts";
import { BodyTap } from "../http/body_tap.ts";
import { ResponseClassification, type ResponseClassifier, streamErrorLabel } from "./response_class.ts";
import type { RequestMetrics } from "./http_families.ts";

/**
 * One request's measurement: `head` when the response head arrives, `firstByte` at the first body
 * chunk (time to first byte: `response_latency_ms`), then `end(trailers)` or `streamError`/`fail`.
 * `end`/`streamError` record the latency too when `firstByte` was not called (empty bodies). A
 * failure before any response (`fail` without `head`) counts a response with `status_code=""`
 * and no latency, as Linkerd does. Calls after the end are ignored.
 */
export class RequestRecorder extends ResponseClassification {
  #m: RequestMetrics;
  #t0: number;
  #latencyDone = false;
  #done = false;

  constructor(m: RequestMetrics, t0: number, grpc: boolean, classifier: ResponseClassifier | undefined) {
    super(grpc, classifier);
    this.#m = m;
    this.#t0 = t0;
  }

  /** `at`: the time the first chunk arrived, when the caller has it already. */
  firstByte(at?: number): void {
    if (this.#latencyDone || this.status === 0) return;
    this.#latencyDone = true;
    const now = at ?? this.#m.now();
    this.#m.lastUpdate = now;
    this.#m.observeLatency(this.status, now - this.#t0);
  }

  override end(trailers: HeaderList | undefined): void {
    if (this.#done) return;
    super.end(trailers);
    this.#finish();
  }

  override streamError(label: string): void {
    if (this.#done) return;
    super.streamError(label);
    this.#finish();
  }

  /** `streamError` with the label derived from a thrown value (see `streamErrorLabel`). */
  fail(e: unknown): void {
    if (!this.#done) this.streamError(streamErrorLabel(e));
  }

  get done(): boolean {
    return this.#done;
  }

  #finish(): void {
    this.#done = true;
    if (this.status !== 0 && !this.#latencyDone) this.firstByte();
    this.#m.countResponse(this);
  }
}

/**
 * Wraps a response body so the recorder sees the first chunk, the end with its trailers, a failed
 * read, and a reader that cancels (counted as ended without trailers, as Linkerd counts a dropped
 * body). Upgrades (101) end at the head. Returns `rsp` with its body replaced.
 */
export function instrumentResponse(
  rec: RequestRecorder,
  rsp: HttpResponse,
  dropped?: AbortSignal,
): HttpResponse {
  rec.head(rsp.status, rsp.headers);
  if (rsp.upgrade !== undefined) {
    rec.end(undefined);
    return rsp;
  }
  rsp.body = new RecordedBody(rsp.body, rec, dropped);
  return rsp;
}

/**
 * Reports the response body's first byte, end, failure or cancel to the recorder. With `dropped`,
 * a read that fails once that signal has aborted is the caller dropping the response, counted as
 * a cancel (Linkerd classifies a dropped body as ended without trailers), not as a stream error.
 */
class RecordedBody extends BodyTap {
  readonly #rec: RequestRecorder;
  readonly #dropped: AbortSignal | undefined;

  constructor(inner: Body, rec: RequestRecorder, dropped?: AbortSignal) {
    super(inner);
    this.#rec = rec;
    this.#dropped = dropped;
  }

  protected onChunk(): void {
    this.#rec.firstByte();
  }

  protected onEnd(trailers: HeaderList | undefined): void {
    this.#rec.end(trailers);
  }

  protected onError(e: unknown): void {
    if (this.#dropped?.aborted) this.#rec.end(undefined);
    else this.#rec.fail(e);
  }

  protected onCancel(): void {
    this.#rec.end(undefined);
  }
}

/**
 * A metrics layer: records every request through `inner` into the handle `target(req)` returns.
 * A rejection counts as a stream failure (its `error` label from `streamErrorLabel`). With
 * `callerDrops`, a response body the caller abandons through the request's signal (a watch the
 * proxy no longer needs) counts as dropped, as Linkerd's control client counts it.
 */
export function recordRequests(
  inner: HttpService,
  target: (req: HttpRequest) => RequestMetrics,
  classifier?: (req: HttpRequest) => ResponseClassifier | undefined,
  o: { callerDrops?: boolean } = {},
): HttpService {
  return async (req, signal) => {
    const rec = target(req).start(isGrpc(req.headers), classifier?.(req));
    let rsp: HttpResponse;
    try {
      rsp = await inner(req, signal);
    } catch (e) {
      rec.fail(e);
      throw e;
    }
    return instrumentResponse(rec, rsp, o.callerDrops ? signal : undefined);
  };
}
