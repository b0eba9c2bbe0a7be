/**
 * The sending side of one policy stream. `offer` never waits: while the transport accepts
 * writes they go straight through; while it is backed up, updates wait in a bounded queue, and
 * when that fills, or the transport has not drained for the send timeout, the stream is reset so
 * the proxy reconnects and re-syncs from a fresh snapshot instead of the controller buffering
 * without bound for a client that does not read.
 */
import * as grpc from "@grpc/grpc-js";
import { rstStream } from "../grpc/rst_stream.ts";

export interface Writable {
  write(chunk: unknown): boolean;
  once(event: "drain", cb: () => void): unknown;
  emit(event: "error", err: unknown): boolean;
  end(): unknown;
}

export interface SendTimeout {
  /** How long the transport may stay backed up before the stream is reset. */
  ms: number;
  onTimeout: () => void;
}

export class StreamSink {
  readonly #out: Writable;
  readonly #capacity: number;
  readonly #onOverflow: () => void;
  readonly #sendTimeout: SendTimeout | undefined;
  readonly #queue: Uint8Array[] = [];
  #blocked = false;
  #closed = false;
  #timer: ReturnType<typeof setTimeout> | undefined;

  constructor(out: Writable, capacity: number, onOverflow: () => void, sendTimeout?: SendTimeout) {
    this.#out = out;
    this.#capacity = capacity;
    this.#onOverflow = onOverflow;
    this.#sendTimeout = sendTimeout;
  }

  get closed(): boolean {
    return this.#closed;
  }

  get queued(): number {
    return this.#queue.length;
  }

  offer(bytes: Uint8Array): void {
    if (this.#closed) return;
    if (!this.#blocked) {
      if (!this.#out.write(bytes)) this.#wait();
      return;
    }
    if (this.#queue.length >= this.#capacity) {
      this.#onOverflow();
      this.#reset("policy update queue overflowed; reconnect to re-sync");
      return;
    }
    this.#queue.push(bytes);
  }

  #wait(): void {
    this.#blocked = true;
    const t = this.#sendTimeout;
    if (t) {
      this.#timer = setTimeout(() => {
        if (this.#closed) return;
        t.onTimeout();
        this.#reset(`policy stream send timed out after ${t.ms} ms; reconnect to re-sync`);
      }, t.ms);
    }
    this.#out.once("drain", () => {
      clearTimeout(this.#timer);
      this.#blocked = false;
      while (!this.#closed && this.#queue.length > 0) {
        if (!this.#out.write(this.#queue.shift()!)) {
          this.#wait();
          return;
        }
      }
    });
  }

  /**
   * A backed-up stream is reset at the HTTP/2 level: a status queued behind unread data would never
   * arrive and would keep the stream and its bytes on the server.
   */
  #reset(details: string): void {
    if (this.#closed) return;
    if (rstStream(this.#out)) {
      this.detach();
      return;
    }
    this.fail(grpc.status.UNAVAILABLE, details);
  }

  /** Ends the stream with a status (drops anything queued). */
  fail(code: grpc.status, details: string): void {
    if (this.#closed) return;
    this.detach();
    this.#out.emit("error", Object.assign(new Error(details), { code, details }));
  }

  /** Ends the stream cleanly (server shutdown). */
  close(): void {
    if (this.#closed) return;
    this.detach();
    this.#out.end();
  }

  /** The client went away: stop writing. */
  detach(): void {
    this.#closed = true;
    this.#queue.length = 0;
    clearTimeout(this.#timer);
  }
}
