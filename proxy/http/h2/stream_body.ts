/**
 * `Body` over the readable side of a node:http2 stream. Chunks are queued until `read()` takes
 * them; past `highWater` queued bytes the stream is paused, which stops node:http2 from
 * returning flow-control window to the peer, so a slow reader holds the sender back instead of
 * buffering without bound.
 *
 * `cancel()` depends on the side: a response body (client side) resets the stream with CANCEL;
 * a request body (server side) cannot, because the stream still has to carry the response, so
 * it discards whatever else the client sends.
 */
import type * as http2 from "node:http2";
import { constants } from "node:http2";
import type { Body, HeaderList } from "../message.ts";
import { trailersFromRaw } from "./headers.ts";
import { Http2StreamReset } from "./errors.ts";
import { resetStream } from "./reset_stream.ts";

const DEFAULT_HIGH_WATER = 64 * 1024;

export class StreamBody implements Body {
  readonly length: number | undefined;
  trailers: HeaderList | undefined;
  #stream: http2.Http2Stream;
  #queue: Uint8Array[] = [];
  #head = 0;
  #queued = 0;
  #highWater: number;
  #paused = false;
  #ended = false;
  #error: Error | undefined;
  #waiter: { resolve: (c: Uint8Array | null) => void; reject: (e: Error) => void } | undefined;
  #what: string;
  #discardOnCancel: boolean;
  #discarding = false;

  /**
   * `what` names the stream in errors ("request body", "upstream response body"). A body that
   * is already known to be empty (END_STREAM on the headers) is built with `length` 0 and
   * `ended` true and never attaches to the stream.
   */
  constructor(
    stream: http2.Http2Stream,
    length: number | undefined,
    what: string,
    opts: { ended?: boolean; discardOnCancel?: boolean; highWater?: number } = {},
  ) {
    this.#stream = stream;
    this.length = length;
    this.#what = what;
    this.#highWater = opts.highWater ?? DEFAULT_HIGH_WATER;
    this.#discardOnCancel = opts.discardOnCancel ?? false;
    const ended = opts.ended ?? false;
    if (ended) {
      this.#ended = true;
      stream.resume(); // lets node:http2 see the (empty) readable side end and close the stream
      return;
    }
    stream.on("data", this.#onData);
    stream.once("end", this.#onEnd);
    stream.once("trailers", this.#onTrailers);
    stream.once("close", this.#onClose);
  }

  #onData = (chunk: Uint8Array) => {
    if (this.#discarding) return;
    const w = this.#waiter;
    if (w !== undefined) {
      this.#waiter = undefined;
      w.resolve(chunk);
      return;
    }
    this.#queue.push(chunk);
    this.#queued += chunk.length;
    if (this.#queued >= this.#highWater && !this.#paused) {
      this.#paused = true;
      this.#stream.pause();
    }
  };

  #onTrailers = (headers: Record<string, unknown>, _flags: number, raw?: string[]) => {
    this.trailers = trailersFromRaw(Array.isArray(raw) ? raw : undefined, headers);
  };

  #onEnd = () => {
    this.#ended = true;
    this.#discarding = false;
    this.#detach();
    const w = this.#waiter;
    if (w !== undefined && this.#head === this.#queue.length) {
      this.#waiter = undefined;
      w.resolve(null);
    }
  };

  #onClose = () => {
    if (this.#discarding) {
      this.#discarding = false;
      this.#detach();
      return;
    }
    if (this.#ended) return;
    // Closed without END_STREAM: the peer reset the stream or the connection went away.
    const code = this.#stream.rstCode ?? constants.NGHTTP2_INTERNAL_ERROR;
    this.#fail(new Http2StreamReset(`${this.#what} ended early: stream reset (${codeName(code)})`, code));
  };

  #fail(e: Error, keepListening = false): void {
    if (this.#ended || this.#error !== undefined) return;
    this.#error = e;
    if (!keepListening) this.#detach();
    this.#queue = [];
    this.#head = 0;
    this.#queued = 0;
    const w = this.#waiter;
    if (w !== undefined) {
      this.#waiter = undefined;
      w.reject(e);
    }
  }

  #detach(): void {
    const s = this.#stream;
    s.off("data", this.#onData);
    s.off("end", this.#onEnd);
    s.off("close", this.#onClose);
  }

  read(): Promise<Uint8Array | null> {
    if (this.#head < this.#queue.length) {
      const c = this.#queue[this.#head];
      this.#queue[this.#head++] = EMPTY;
      this.#queued -= c.length;
      if (this.#head === this.#queue.length) {
        this.#queue.length = 0;
        this.#head = 0;
      }
      if (this.#paused && this.#queued < this.#highWater) {
        this.#paused = false;
        this.#stream.resume();
      }
      return Promise.resolve(c);
    }
    if (this.#error !== undefined) return Promise.reject(this.#error);
    if (this.#ended) return Promise.resolve(null);
    if (this.#waiter !== undefined) return Promise.reject(new Error(`${this.#what}: concurrent read()`));
    return new Promise((resolve, reject) => {
      this.#waiter = { resolve, reject };
    });
  }

  /** True once the body has ended, failed or been cancelled. */
  get settled(): boolean {
    return this.#ended || this.#error !== undefined;
  }

  cancel(reason?: Error): void {
    if (this.#ended || this.#error !== undefined) return;
    const s = this.#stream;
    if (this.#discardOnCancel) {
      this.#discarding = true;
      this.#fail(reason ?? new Error(`${this.#what} cancelled`), true);
      if (this.#paused) {
        this.#paused = false;
        s.resume();
      }
      return;
    }
    this.#fail(reason ?? new Error(`${this.#what} cancelled`));
    resetStream(s, constants.NGHTTP2_CANCEL);
  }
}

const EMPTY = new Uint8Array(0);

const CODE_NAMES: Record<number, string> = {
  0: "NO_ERROR",
  1: "PROTOCOL_ERROR",
  2: "INTERNAL_ERROR",
  3: "FLOW_CONTROL_ERROR",
  5: "STREAM_CLOSED",
  6: "FRAME_SIZE_ERROR",
  7: "REFUSED_STREAM",
  8: "CANCEL",
  9: "COMPRESSION_ERROR",
  10: "CONNECT_ERROR",
  11: "ENHANCE_YOUR_CALM",
  12: "INADEQUATE_SECURITY",
  13: "HTTP_1_1_REQUIRED",
};

export function codeName(code: number): string {
  return CODE_NAMES[code] ?? `code ${code}`;
}
