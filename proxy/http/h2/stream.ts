/**
 * One HTTP/2 stream (RFC 9113 §5.1) as its session sees it: the receive queue of DATA payloads
 * with the stream's share of flow control (its window is returned as the reader consumes), the
 * send window, and how it ended. Framing and the connection live in session.ts; the stream calls
 * back into its session to queue frames and to close.
 */
import { ErrorCode, errorCodeName } from "./frame.ts";
import { Http2StreamReset } from "./errors.ts";
import type { H2Session } from "./session.ts";

/** Why a stream ended without both sides finishing. */
export type StreamFailure =
  /** RST_STREAM from the peer (or from us), with its code. */
  | { kind: "reset"; code: number; local: boolean }
  /** The peer will not process it: REFUSED_STREAM, or a GOAWAY whose last stream id excludes it. */
  | { kind: "refused"; code: number }
  /** The connection closed or failed first. */
  | { kind: "connection"; message: string };

const EMPTY = new Uint8Array(0);

/** Resolves or rejects a writer waiting for send window, drain or a stream slot. */
export type Waiter = { resolve: () => void; reject: (e: Error) => void };

/**
 * Who hears about a stream: one object per exchange whose methods the stream calls, rather than
 * a closure per event per stream.
 */
export interface StreamOwner {
  /** Client: field blocks before the body (1xx and the final head). */
  streamHead?(fields: string[], endStream: boolean): void;
  /** Once, when the stream is closed: `failure` is undefined when both sides ended normally. */
  streamClosed(failure: StreamFailure | undefined): void;
}

/**
 * One stream. The receive side is read with `read()` (DATA payloads, null at END_STREAM, then
 * `trailers`); the send side with `sendHeaders`, `sendData`, `sendTrailers`, `reset`.
 */
export class H2Stream {
  readonly id: number;
  readonly session: H2Session;
  /** Told of heads (client) and of the close. Server: trailers only arrive via `trailers`. */
  owner: StreamOwner | undefined;
  /** Trailing fields (raw, lower-case names), once `read()` has returned null. */
  trailers: string[] | undefined;
  /** Content-Length the peer declared; a body of another size is a PROTOCOL_ERROR. */
  expectedLength: number | undefined;
  failure: StreamFailure | undefined;
  /** True once the first (non-1xx) field block was received. */
  headReceived = false;

  sendWindow: number;
  recvWindow: number;
  localEnded = false;
  remoteEnded = false;
  closed = false;
  /** Set when the reader no longer wants the body: data is dropped and credited at once. */
  discarding = false;

  #chunks: Uint8Array[] = [];
  #head = 0;
  #received = 0;
  #unacked = 0;
  #reader: { resolve: (c: Uint8Array | null) => void; reject: (e: Error) => void } | undefined;
  sendWaiter: Waiter | undefined;
  /** A body being sent (write_body.ts): cancelled when the stream fails first. */
  sendingBody: { cancel(reason?: Error): void } | undefined;

  constructor(session: H2Session, id: number, sendWindow: number, recvWindow: number) {
    this.session = session;
    this.id = id;
    this.sendWindow = sendWindow;
    this.recvWindow = recvWindow;
  }

  /** Next DATA payload, null at END_STREAM; rejects with Http2StreamReset if the stream failed. */
  read(): Promise<Uint8Array | null> {
    let now: Uint8Array | null | undefined;
    try {
      now = this.readNow();
    } catch (e) {
      return Promise.reject(e);
    }
    if (now !== undefined) return Promise.resolve(now);
    return new Promise((resolve, reject) => (this.#reader = { resolve, reject }));
  }

  /** The next payload if one is queued, null at the end, undefined when `read()` would wait. */
  readNow(): Uint8Array | null | undefined {
    if (this.#head < this.#chunks.length) {
      const c = this.#chunks[this.#head];
      this.#chunks[this.#head++] = EMPTY;
      if (this.#head === this.#chunks.length) {
        this.#chunks.length = 0;
        this.#head = 0;
      }
      this.#consumed(c.length);
      return c;
    }
    if (this.failure) throw failureError(this.failure, this.id);
    if (this.remoteEnded) return null;
    return undefined;
  }

  /** Bytes received and not yet read. */
  get buffered(): number {
    let n = 0;
    for (let i = this.#head; i < this.#chunks.length; i++) n += this.#chunks[i].length;
    return n;
  }

  /** Stop reading: what is queued and whatever still arrives is dropped and its window returned. */
  discard(): void {
    if (this.discarding) return;
    this.discarding = true;
    let n = 0;
    for (let i = this.#head; i < this.#chunks.length; i++) n += this.#chunks[i].length;
    this.#chunks.length = 0;
    this.#head = 0;
    if (n) this.#consumed(n);
  }

  #consumed(n: number): void {
    if (this.remoteEnded || this.closed) return;
    this.#unacked += n;
    // Batched: one WINDOW_UPDATE per quarter window read, not per chunk.
    if (this.#unacked >= this.session.streamCreditBatch) {
      this.recvWindow += this.#unacked;
      this.session.queueWindowUpdate(this.id, this.#unacked);
      this.#unacked = 0;
    }
  }

  /** Session: a DATA payload arrived (flow control already checked). */
  deliver(data: Uint8Array, end: boolean): void {
    this.#received += data.length;
    if (end) this.remoteEnded = true;
    if (end && this.expectedLength !== undefined && this.#received !== this.expectedLength) {
      this.session.resetStream(this, ErrorCode.PROTOCOL_ERROR);
      return;
    }
    if (this.expectedLength !== undefined && this.#received > this.expectedLength) {
      this.session.resetStream(this, ErrorCode.PROTOCOL_ERROR);
      return;
    }
    if (this.discarding) {
      if (data.length) this.#consumed(data.length);
    } else if (data.length) {
      const r = this.#reader;
      if (r !== undefined && this.#head === this.#chunks.length) {
        this.#reader = undefined;
        this.#consumed(data.length);
        r.resolve(data);
      } else {
        this.#chunks.push(data);
      }
    }
    if (end) this.#wakeEnd();
  }

  /** Session: trailers arrived with END_STREAM. */
  deliverTrailers(fields: string[]): void {
    if (this.expectedLength !== undefined && this.#received !== this.expectedLength) {
      this.session.resetStream(this, ErrorCode.PROTOCOL_ERROR);
      return;
    }
    this.trailers = fields;
    this.remoteEnded = true;
    this.#wakeEnd();
  }

  #wakeEnd(): void {
    const r = this.#reader;
    if (r !== undefined && this.#head === this.#chunks.length) {
      this.#reader = undefined;
      r.resolve(null);
    }
    this.session.maybeClose(this);
  }

  /** Session: the stream failed; readers and writers are woken with the error. */
  fail(f: StreamFailure): void {
    if (this.closed) return;
    this.failure = f;
    this.closed = true;
    const e = failureError(f, this.id);
    const r = this.#reader;
    this.#reader = undefined;
    r?.reject(e);
    const w = this.sendWaiter;
    this.sendWaiter = undefined;
    w?.reject(e);
    const b = this.sendingBody;
    if (b !== undefined) {
      // The source must not keep running for a stream that is gone.
      this.sendingBody = undefined;
      b.cancel(new Error("stream closed by peer"));
    }
    this.owner?.streamClosed(f);
  }

  /** Session: both sides ended. */
  finish(): void {
    if (this.closed) return;
    this.closed = true;
    this.owner?.streamClosed(undefined);
  }

  sendHeaders(fields: string[], endStream: boolean): void {
    this.session.sendHeaders(this, fields, endStream);
  }

  /** Sends `data` as DATA frames within the flow-control windows; resolves when all are queued. */
  sendData(data: Uint8Array, endStream: boolean): Promise<void> {
    return this.session.sendData(this, data, endStream);
  }

  /**
   * Queues all of `data` now and returns true when the windows and the socket allow it at once;
   * otherwise queues nothing and returns false (use `sendData`). Saves a promise per chunk.
   */
  trySendData(data: Uint8Array, endStream: boolean): boolean {
    return this.session.trySendData(this, data, endStream);
  }

  sendTrailers(fields: string[]): void {
    this.session.sendHeaders(this, fields, true);
  }

  /** RST_STREAM with `code` (no-op once closed). */
  reset(code: number): void {
    this.session.resetStream(this, code);
  }
}

export function failureError(f: StreamFailure, id: number): Error {
  switch (f.kind) {
    case "reset":
      return new Http2StreamReset(
        `stream ${id} reset${f.local ? " locally" : " by peer"} (${errorCodeName(f.code)})`,
        f.code,
      );
    case "refused":
      return new Http2StreamReset(`stream ${id} refused by peer`, ErrorCode.REFUSED_STREAM);
    case "connection":
      return new Http2StreamReset(`stream ${id}: ${f.message}`, ErrorCode.INTERNAL_ERROR, true);
  }
}
