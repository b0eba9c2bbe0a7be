/**
 * The sending side of one policy stream. `offer` never waits: while the transport accepts
 * writes they go straight through; while it is backed up, updates wait in a bounded queue, and
 * when that fills the stream is reset (UNAVAILABLE) so the proxy reconnects and re-syncs from a
 * fresh snapshot instead of the controller buffering without bound.
 */
import * as grpc from "@grpc/grpc-js";

export interface Writable {
  write(chunk: unknown): boolean;
  once(event: "drain", cb: () => void): unknown;
  emit(event: "error", err: unknown): boolean;
  end(): unknown;
}

export class StreamSink {
  readonly #out: Writable;
  readonly #capacity: number;
  readonly #onOverflow: () => void;
  readonly #queue: Uint8Array[] = [];
  #blocked = false;
  #closed = false;

  constructor(out: Writable, capacity: number, onOverflow: () => void) {
    this.#out = out;
    this.#capacity = capacity;
    this.#onOverflow = onOverflow;
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
      this.fail(grpc.status.UNAVAILABLE, "policy update queue overflowed; reconnect to re-sync");
      return;
    }
    this.#queue.push(bytes);
  }

  #wait(): void {
    this.#blocked = true;
    this.#out.once("drain", () => {
      this.#blocked = false;
      while (!this.#closed && this.#queue.length > 0) {
        if (!this.#out.write(this.#queue.shift()!)) {
          this.#wait();
          return;
        }
      }
    });
  }

  /** Ends the stream with a status (drops anything queued). */
  fail(code: grpc.status, details: string): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#queue.length = 0;
    this.#out.emit("error", Object.assign(new Error(details), { code, details }));
  }

  /** Ends the stream cleanly (server shutdown). */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#queue.length = 0;
    this.#out.end();
  }

  /** The client went away: stop writing. */
  detach(): void {
    this.#closed = true;
    this.#queue.length = 0;
  }
}
