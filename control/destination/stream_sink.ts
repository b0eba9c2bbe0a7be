/**
 * The per-stream send queue. Producers (the watch path) only `push`, which never waits: when
 * the queue is full, or the transport has not drained for `sendTimeoutMs`, the stream is reset
 * so the client reconnects and re-syncs from a fresh snapshot, and nothing it does can slow
 * the watch path or other streams.
 */
import * as grpc from "@grpc/grpc-js";
import { rstStream } from "../grpc/rst_stream.ts";

export type ResetReason = "overflow" | "send_timeout";

export interface SinkOptions {
  capacity: number;
  sendTimeoutMs: number;
  onReset(reason: ResetReason): void;
  onSent?(): void;
}

interface Writable {
  write(chunk: unknown): boolean;
  once(event: "drain", fn: () => void): unknown;
  emit(event: "error", err: unknown): boolean;
}

export class StreamSink {
  readonly #call: Writable;
  readonly #opts: SinkOptions;
  #queue: Uint8Array[] = [];
  #head = 0;
  #closed = false;
  #blocked = false;
  #timer: ReturnType<typeof setTimeout> | undefined;

  constructor(call: Writable, opts: SinkOptions) {
    this.#call = call;
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
    if (this.queued >= this.#opts.capacity) return this.reset("overflow");
    this.#queue.push(message);
    if (!this.#blocked) this.#pump();
  }

  #pump(): void {
    while (!this.#blocked && this.#head < this.#queue.length && !this.#closed) {
      const m = this.#queue[this.#head];
      this.#queue[this.#head++] = undefined as unknown as Uint8Array;
      const ok = this.#call.write(m);
      this.#opts.onSent?.();
      if (!ok) {
        this.#blocked = true;
        this.#timer = setTimeout(() => this.reset("send_timeout"), this.#opts.sendTimeoutMs);
        this.#call.once("drain", () => {
          clearTimeout(this.#timer);
          this.#blocked = false;
          this.#pump();
        });
      }
    }
    if (this.#head === this.#queue.length) {
      this.#queue = [];
      this.#head = 0;
    }
  }

  /** Resets the stream: RST_STREAM when the HTTP/2 stream is reachable, else an UNAVAILABLE status. */
  reset(reason: ResetReason): void {
    if (this.#closed) return;
    this.close();
    this.#opts.onReset(reason);
    if (!rstStream(this.#call)) {
      this.#call.emit("error", {
        code: grpc.status.UNAVAILABLE,
        details: `stream reset: ${reason === "overflow" ? "update queue overflow" : "send timed out"}`,
      });
    }
  }

  /** Stops sending (the stream ended); queued messages are dropped. */
  close(): void {
    this.#closed = true;
    clearTimeout(this.#timer);
    this.#queue = [];
    this.#head = 0;
  }
}
