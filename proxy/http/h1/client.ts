/**
 * The HTTP/1 client side: one connection to an upstream, one exchange at a time (no pipelining:
 * a failure would take the queued requests with it). The response resolves when its head has
 * arrived; its body streams from the socket. The connection is reusable once the response body
 * was read to its end and the request was fully written, and `onIdle` tells the pool so.
 *
 * Rules chosen here:
 * - Request bodies of known length go with Content-Length (also 0 for POST/PUT/PATCH), others
 *   chunked; trailers of a chunked request body are always written (a server may drop them).
 * - Interim responses (100, 102, 103) are skipped; a 101 is only accepted for a request that asked
 *   to upgrade, and then the socket is handed over as `response.upgrade`.
 * - A response that ends before the request body was written (the server answered early) ends
 *   the exchange: the request body is cancelled and the connection closed.
 * - Aborting the signal destroys the connection; a pending request or body read rejects with the
 *   signal's reason.
 */
import type { Duplex } from "node:stream";
import { type Body, EMPTY_BODY, type HttpRequest, type HttpResponse } from "../message.ts";
import { type BodyOwner, ChunkedBody, CloseBody, LengthBody, type WireBody } from "./body.ts";
import { H1ParseError, Http1ClientError } from "./errors.ts";
import {
  BODY_CHUNKED,
  BODY_CLOSE,
  BODY_LENGTH,
  type H1Limits,
  parseResponseHead,
  resolveLimits,
} from "./head.ts";
import { HeadReader, SocketReader } from "./reader.ts";
import { FRAME_CHUNKED, FRAME_LENGTH, FRAME_NONE, Outbox, requestHead, writeMessage } from "./write.ts";

export interface Http1ClientOptions {
  limits?: Partial<H1Limits>;
  /** Unread response bytes buffered before the socket is paused; default 64 KiB. */
  highWaterMark?: number;
}

/** Methods whose requests may be sent twice (RFC 9110 §9.2.2). */
const IDEMPOTENT = new Set(["GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE"]);

function needsLength(method: string): boolean {
  return method === "POST" || method === "PUT" || method === "PATCH";
}

/** Sends a request on another connection (the pool's retry after a closed idle connection). */
export type RetryElsewhere = (req: HttpRequest, signal: AbortSignal) => Promise<HttpResponse>;

function retriable(
  e: unknown,
  signal: AbortSignal | undefined,
  retry: RetryElsewhere | undefined,
): boolean {
  return retry !== undefined && signal !== undefined && e instanceof Http1ClientError && e.safeToRetry &&
    !signal.aborted;
}

export class Http1Connection implements BodyOwner {
  readonly socket: Duplex;
  readonly #reader: SocketReader;
  readonly #heads: HeadReader;
  readonly #out = new Outbox();
  readonly #limits: H1Limits;
  #busy = false;
  #closed = false;
  #upgraded = false;
  #signal: AbortSignal | undefined = undefined;
  #failure: Error | undefined = undefined;
  #reqBody: Body | undefined = undefined;
  #reqDone = true;
  #bodyTouched = false;
  #resBody: WireBody | undefined = undefined;
  #resDone = true;
  #keepAlive = true;
  #responseSeen = false;
  /** The exchange waiting for its response head: request, signal, retry and the promise's settlers. */
  #req: HttpRequest | undefined = undefined;
  #reqSignal: AbortSignal | undefined = undefined;
  #retry: RetryElsewhere | undefined = undefined;
  #resolve: ((r: HttpResponse | Promise<HttpResponse>) => void) | undefined = undefined;
  #reject: ((e: unknown) => void) | undefined = undefined;
  /** Exchanges started on this connection. */
  requests = 0;
  /** Called each time the connection is idle again after an exchange. */
  onIdle: ((c: Http1Connection) => void) | undefined = undefined;
  /** Called once when the socket has closed. */
  onClose: ((c: Http1Connection) => void) | undefined = undefined;

  constructor(socket: Duplex, opts: Http1ClientOptions = {}) {
    this.socket = socket;
    this.#limits = resolveLimits(opts.limits);
    this.#heads = new HeadReader(this.#limits.maxHeadBytes, false);
    socket.on("error", this.#onSockError);
    socket.once("close", this.#onSockClose);
    socket.on("end", this.#onSockEnd);
    this.#reader = new SocketReader(socket, opts.highWaterMark);
  }

  /** Can take a request now. */
  get idle(): boolean {
    return !this.#busy && !this.#closed && !this.#reader.done;
  }

  get closed(): boolean {
    return this.#closed;
  }

  destroy(): void {
    this.socket.destroy();
  }

  #onSockError = (): void => {
    // The reader records the error; exchanges report it.
  };

  #onSockEnd = (): void => {
    // An idle connection the server half-closed is of no more use.
    if (!this.#busy) this.socket.destroy();
  };

  #onSockClose = (): void => {
    this.#closed = true;
    this.#signal?.removeEventListener("abort", this);
    this.#signal = undefined;
    // A body still finishes from what was buffered; it fails by itself if that is not all of it.
    if (this.#failure !== undefined) this.#resBody?.fail(this.#failure);
    this.#reader.interrupt();
    this.onClose?.(this);
  };

  /**
   * Sends `req` and resolves with the response once its head has arrived. `retry` (the pool's) is
   * where a request goes instead when this connection turns out closed before any response byte
   * and sending it again is safe (`Http1ClientError.safeToRetry`, `signal` not aborted).
   */
  request(req: HttpRequest, signal?: AbortSignal, retry?: RetryElsewhere): Promise<HttpResponse> {
    if (this.#busy) return Promise.reject(new Error("Http1Connection is busy with another request"));
    if (this.#closed || this.#reader.done || this.#reader.buffered > 0 || this.socket.destroyed) {
      this.socket.destroy();
      const e = new Http1ClientError(
        "upstream connection closed before the request was sent",
        "connection_closed",
        true,
      );
      return retriable(e, signal, retry) ? retry!(req, signal!) : Promise.reject(e);
    }
    if (signal?.aborted) return Promise.reject(signal.reason);
    return this.#exchange(req, signal, retry);
  }

  // The exchange runs on callbacks kept by the connection, not on an async function per request:
  // the response promise is settled by `#poll`, which the reader calls when bytes arrive.
  #exchange(
    req: HttpRequest,
    signal: AbortSignal | undefined,
    retry: RetryElsewhere | undefined,
  ): Promise<HttpResponse> {
    const body = req.body;
    let frame = FRAME_NONE;
    let length = 0;
    if (body.length === undefined) frame = FRAME_CHUNKED;
    else if (body.length > 0 || needsLength(req.method)) {
      frame = FRAME_LENGTH;
      length = body.length;
    }
    let head: Uint8Array;
    try {
      head = requestHead(req, frame, length);
    } catch (e) {
      // Nothing was sent: the connection is as good as before.
      queueMicrotask(this.#idleAgain);
      return Promise.reject(e);
    }
    this.#busy = true;
    this.requests++;
    this.#failure = undefined;
    this.#reqBody = body;
    this.#reqDone = false;
    this.#bodyTouched = frame === FRAME_CHUNKED || length > 0;
    this.#resBody = undefined;
    this.#resDone = false;
    this.#keepAlive = true;
    this.#responseSeen = false;
    this.#heads.reset();
    if (signal !== undefined) {
      this.#signal = signal;
      signal.addEventListener("abort", this);
    }
    this.#req = req;
    this.#reqSignal = signal;
    this.#retry = retry;
    const response = new Promise<HttpResponse>(this.#capture);
    this.#write(head, body, frame);
    this.#poll();
    return response;
  }

  #capture = (
    resolve: (r: HttpResponse | Promise<HttpResponse>) => void,
    reject: (e: unknown) => void,
  ): void => {
    this.#resolve = resolve;
    this.#reject = reject;
  };

  #idleAgain = (): void => this.onIdle?.(this);

  #write(head: Uint8Array, body: Body, frame: number): void {
    let written: Promise<void> | undefined;
    try {
      written = writeMessage(this.socket, this.#out, head, body, frame, true);
    } catch (e) {
      this.#writeFailed(e);
      return;
    }
    if (written === undefined) this.#written();
    else written.then(this.#written, this.#writeFailed);
  }

  #written = (): void => {
    this.#reqDone = true;
    this.#maybeIdle();
  };

  #writeFailed = (e: unknown): void => {
    this.#out.clear();
    // A closed socket is reported by the read side (which knows whether a retry is safe).
    if (this.socket.destroyed || this.#reader.done) this.socket.destroy();
    else this.#fail(e as Error);
  };

  /** Reads the response head if it is there, else waits for bytes; settles the response promise. */
  #poll = (): void => {
    if (this.#resolve === undefined) return;
    const r = this.#reader;
    for (;;) {
      const bytes = this.#heads.pull(r);
      if (this.#heads.seen > 0) this.#responseSeen = true;
      if (bytes === -1) {
        this.#fail(new H1ParseError(502, `response head larger than ${this.#limits.maxHeadBytes} bytes`));
        return this.#settleError(this.#failure);
      }
      if (bytes !== null) {
        this.#responseSeen = true;
        let res: HttpResponse | undefined;
        try {
          res = this.#response(this.#req!, bytes);
        } catch (e) {
          return this.#settleError(e);
        }
        if (res === undefined) continue;
        const resolve = this.#resolve;
        this.#settled();
        return resolve(res);
      }
      if (this.#failure !== undefined) return this.#settleError(this.#failure);
      if (r.done) {
        const req = this.#req!;
        const safe = !this.#responseSeen && IDEMPOTENT.has(req.method) && !this.#bodyTouched;
        const why = r.error !== undefined ? r.error.message : "connection closed";
        const e = new Http1ClientError(`upstream ${why} before a response`, "connection_closed", safe);
        this.#failure = e;
        this.socket.destroy();
        return this.#settleError(e);
      }
      return r.onNext(this.#poll);
    }
  };

  #settleError(e: unknown): void {
    const resolve = this.#resolve!, reject = this.#reject!;
    const req = this.#req!, signal = this.#reqSignal, retry = this.#retry;
    this.#settled();
    if (retriable(e, signal, retry)) resolve(retry!(req, signal!));
    else reject(e);
  }

  #settled(): void {
    this.#resolve = this.#reject = undefined;
    this.#req = undefined;
    this.#reqSignal = undefined;
    this.#retry = undefined;
  }

  /** The response for a head, or undefined for an interim (1xx) response. */
  #response(req: HttpRequest, bytes: Uint8Array): HttpResponse | undefined {
    let h;
    try {
      h = parseResponseHead(bytes, this.#limits, req.method, this.#heads.start, this.#heads.end);
    } catch (e) {
      this.#fail(e as Error);
      throw e;
    }
    if (h.status === 101) {
      if (!req.headers.has("upgrade")) {
        const e = new H1ParseError(502, "101 Switching Protocols for a request that did not ask to upgrade");
        this.#fail(e);
        throw e;
      }
      this.#upgraded = true;
      this.#reqDone = this.#resDone = true;
      this.#signal?.removeEventListener("abort", this);
      this.#signal = undefined;
      // The stream is handed over positioned after the head: bytes already read go back in front.
      const rest = this.#reader.detach();
      for (let i = rest.length - 1; i >= 0; i--) this.socket.unshift(rest[i]);
      this.socket.off("end", this.#onSockEnd);
      return { status: 101, headers: h.headers, body: EMPTY_BODY, upgrade: this.socket };
    }
    if (h.status < 200) return undefined;
    this.#keepAlive = h.keepAlive;
    let body: Body;
    const r = this.#reader;
    switch (h.bodyKind) {
      case BODY_LENGTH:
        body = this.#resBody = new LengthBody(r, this, h.contentLength, 502);
        break;
      case BODY_CHUNKED:
        body = this.#resBody = new ChunkedBody(r, this, this.#limits, 502);
        break;
      case BODY_CLOSE:
        body = this.#resBody = new CloseBody(r, this);
        break;
      default:
        body = EMPTY_BODY;
        this.#resDone = true;
        queueMicrotask(this.#maybeIdleTask);
    }
    return { status: h.status, headers: h.headers, body };
  }

  bodyStarted(): void {}

  bodyFinished(_body: WireBody, error: Error | undefined): void {
    if (error !== undefined) {
      this.#failure ??= error;
      this.socket.destroy();
      return;
    }
    this.#resDone = true;
    this.#maybeIdle();
  }

  /** Abort of the request's signal. */
  handleEvent(): void {
    // The listener stays on a finished exchange's signal (removing it costs more than the check):
    // only the current exchange's abort counts.
    const signal = this.#signal;
    if (signal === undefined || !signal.aborted) return;
    const reason = signal.reason;
    this.#fail(
      reason instanceof Error ? reason : new DOMException(String(reason ?? "aborted"), "AbortError"),
    );
  }

  #fail(e: Error): void {
    this.#failure ??= e;
    this.#resBody?.fail(this.#failure);
    this.socket.destroy();
    this.#reader.interrupt();
  }

  #maybeIdleTask = (): void => this.#maybeIdle();

  #maybeIdle(): void {
    if (!this.#busy || this.#upgraded || !this.#resDone) return;
    if (!this.#reqDone) {
      // The server answered before taking the whole request: stop sending, the framing is gone.
      this.#keepAlive = false;
      this.#reqBody?.cancel();
    }
    this.#signal = undefined;
    this.#reqBody = undefined;
    this.#resBody = undefined;
    this.#busy = false;
    if (!this.#keepAlive || this.#reader.done || this.#reader.buffered > 0 || !this.#reqDone) {
      this.socket.destroy();
      return;
    }
    this.onIdle?.(this);
  }
}
