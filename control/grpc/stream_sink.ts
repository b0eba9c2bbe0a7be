/**
 * The sending side of one server stream (destination Get/GetProfile, policy watches). The watch
 * path only `push`es, which never waits: while the transport accepts writes they go straight
 * through; while it is backed up, messages wait in a bounded queue. When that queue is full, or the
 * transport has not drained for the send timeout, the stream is reset so the client reconnects and
 * re-syncs from a fresh snapshot: nothing a client does (or fails to do) can make the controller
 * buffer without bound or slow the watch path and the other streams.
 */
import * as grpc from "@grpc/grpc-js";
import * as http2 from "node:http2";
import { rstStream } from "./rst_stream.ts";

/** A client that takes no update for 5 s is stuck or hostile; both services reset it then. */
export const DEFAULT_STREAM_SEND_TIMEOUT_MS = 5000;

export type ResetReason = "overflow" | "send_timeout";

export interface StreamSinkOptions {
  /** Names the stream in status messages, e.g. "destination Get" or "policy inbound watch". */
  name: string;
  /** Messages that may wait while the transport is backed up; one more resets the stream. */
  capacity: number;
  /** How long the transport may stay backed up (the client not reading) before the stream is reset. */
  sendTimeoutMs: number;
  /** Called once when the sink resets the stream, after it stopped writing. */
  onReset(reason: ResetReason): void;
  /** Called for each message handed to the transport. */
  onSent?(): void;
}

/** What the sink needs of a grpc-js server stream. */
export interface Writable {
  write(chunk: unknown): boolean;
  once(event: "drain", fn: () => void): unknown;
  emit(event: "error", err: unknown): boolean;
  end(): unknown;
}

/**
 * How each reset reaches the client. The HTTP/2 reset is tried first: a status queued behind data
 * the client does not read would never arrive, and the server would keep the stream and its bytes.
 * A grpc-js client reports ENHANCE_YOUR_CALM as RESOURCE_EXHAUSTED and CANCEL as CANCELLED, so a
 * client can tell an overflow from a stall; the status is the fallback when no HTTP/2 stream is
 * reachable.
 */
const RESETS: Record<ResetReason, { h2: number; code: grpc.status }> = {
  overflow: { h2: http2.constants.NGHTTP2_ENHANCE_YOUR_CALM, code: grpc.status.RESOURCE_EXHAUSTED },
  send_timeout: { h2: http2.constants.NGHTTP2_CANCEL, code: grpc.status.UNAVAILABLE },
};

/** Refuses limits a sink cannot work with, naming the server; servers call it when they start. */
export function checkStreamLimits(server: string, capacity: number, sendTimeoutMs: number): void {
  if (!Number.isInteger(capacity) || capacity < 1) {
    throw new RangeError(`${server}: stream queue capacity must be a positive integer, got ${capacity}`);
  }
  if (!Number.isFinite(sendTimeoutMs) || sendTimeoutMs <= 0) {
    throw new RangeError(
      `${server}: stream send timeout must be a positive number of ms, got ${sendTimeoutMs}`,
    );
  }
}

export class StreamSink {
  readonly #out: Writable;
  readonly #opts: StreamSinkOptions;
  #queue: Uint8Array[] = [];
  #head = 0;
  #blocked = false;
  #closed = false;
  #timer: ReturnType<typeof setTimeout> | undefined;

  /** `opts` limits are checked once, at server start, by `checkStreamLimits`. */
  constructor(out: Writable, opts: StreamSinkOptions) {
    this.#out = out;
    this.#opts = opts;
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** Messages waiting for the transport. */
  get queued(): number {
    return this.#queue.length - this.#head;
  }

  push(message: Uint8Array): void {
    if (this.#closed) return;
    if (!this.#blocked) return this.#write(message);
    if (this.queued >= this.#opts.capacity) return this.#reset("overflow");
    this.#queue.push(message);
  }

  #write(message: Uint8Array): void {
    const ok = this.#out.write(message);
    this.#opts.onSent?.();
    if (!ok) this.#wait();
  }

  #wait(): void {
    this.#blocked = true;
    this.#timer = setTimeout(() => this.#reset("send_timeout"), this.#opts.sendTimeoutMs);
    this.#out.once("drain", () => {
      clearTimeout(this.#timer);
      this.#blocked = false;
      while (!this.#closed && !this.#blocked && this.#head < this.#queue.length) {
        const m = this.#queue[this.#head];
        // Drop the reference now: a long queue is not kept alive until it is empty.
        this.#queue[this.#head++] = EMPTY;
        this.#write(m);
      }
      if (this.#head === this.#queue.length) {
        this.#queue = [];
        this.#head = 0;
      }
    });
  }

  #reset(reason: ResetReason): void {
    if (this.#closed) return;
    this.detach();
    this.#opts.onReset(reason);
    const r = RESETS[reason];
    if (rstStream(this.#out, r.h2)) return;
    const details = reason === "overflow"
      ? `${this.#opts.name} stream reset: more than ${this.#opts.capacity} updates waiting for a client ` +
        `that is not reading; reconnect to re-sync`
      : `${this.#opts.name} stream reset: the client took no data for ${this.#opts.sendTimeoutMs} ms; ` +
        `reconnect to re-sync`;
    this.#out.emit("error", Object.assign(new Error(details), { code: r.code, details }));
  }

  /** Ends the stream with a status (drops anything queued). */
  fail(code: grpc.status, details: string): void {
    if (this.#closed) return;
    this.detach();
    this.#out.emit("error", Object.assign(new Error(details), { code, details }));
  }

  /** Ends the stream cleanly (server shutdown); anything queued is dropped. */
  end(): void {
    if (this.#closed) return;
    this.detach();
    this.#out.end();
  }

  /** Stops writing (the stream ended or the client went away); queued messages are dropped. */
  detach(): void {
    this.#closed = true;
    clearTimeout(this.#timer);
    this.#queue = [];
    this.#head = 0;
  }
}

const EMPTY = new Uint8Array(0);
