/**
 * gRPC's length-prefixed messages on an HTTP/2 body: a flag byte (1 = compressed), a 4-byte
 * big-endian length, the message. The proxy never asks for compression, so a compressed message is
 * the server's error; a length over the limit is refused from its prefix, before any of the message
 * is buffered.
 */
import { Status } from "./status.ts";

/** grpc-js's and tonic's default receive limit; the control plane sends nothing larger. */
export const DEFAULT_MAX_MESSAGE_BYTES = 4 * 1024 * 1024;
const PREFIX = 5;

/** A response body that is not a well-formed gRPC message stream; `code` is the call's status. */
export class GrpcFramingError extends Error {
  override name = "GrpcFramingError";
  constructor(readonly code: number, message: string) {
    super(message);
  }
}

/** One uncompressed message with its prefix. */
export function frameMessage(msg: Uint8Array): Uint8Array {
  const out = new Uint8Array(PREFIX + msg.length);
  new DataView(out.buffer).setUint32(1, msg.length);
  out.set(msg, PREFIX);
  return out;
}

/**
 * Splits body chunks into messages. A message inside one chunk is handed out as a view of it (the
 * caller decodes it before the next `push`); pieces kept across chunks are copied.
 */
export class MessageDecoder {
  readonly #max: number;
  #parts: Uint8Array[] = [];
  #buffered = 0;
  /** Length of the message being collected, once its prefix is complete; -1 before. */
  #want = -1;

  constructor(maxBytes = DEFAULT_MAX_MESSAGE_BYTES) {
    this.#max = maxBytes;
  }

  /** The messages completed by `chunk`; throws GrpcFramingError for a bad prefix. */
  push(chunk: Uint8Array): Uint8Array[] {
    const out: Uint8Array[] = [];
    let c = chunk;
    for (;;) {
      if (this.#want < 0) {
        if (this.#buffered === 0 && c.length >= PREFIX) {
          this.#want = this.#prefix(c);
          c = c.subarray(PREFIX);
        } else {
          c = this.#collect(c, PREFIX);
          if (this.#buffered < PREFIX) break;
          this.#want = this.#prefix(this.#take());
        }
      }
      if (this.#buffered === 0 && c.length >= this.#want) {
        out.push(c.subarray(0, this.#want));
        c = c.subarray(this.#want);
        this.#want = -1;
        if (c.length === 0) break;
        continue;
      }
      c = this.#collect(c, this.#want);
      if (this.#buffered < this.#want) break;
      out.push(this.#take());
      this.#want = -1;
      if (c.length === 0) break;
    }
    return out;
  }

  /** Buffers (a copy of) what `c` holds toward `total` bytes; returns the rest of `c`. */
  #collect(c: Uint8Array, total: number): Uint8Array {
    const n = Math.min(total - this.#buffered, c.length);
    if (n > 0) this.#parts.push(c.slice(0, n));
    this.#buffered += n;
    return c.subarray(n);
  }

  /** The body ended: a message cut short is an error (the server or a proxy dropped bytes). */
  end(): void {
    if (this.#buffered === 0 && this.#want < 0) return;
    const what = this.#want < 0
      ? `${this.#buffered} of a message's 5 prefix bytes`
      : `${this.#buffered} of a ${this.#want}-byte message`;
    throw new GrpcFramingError(Status.INTERNAL, `the response ended inside a message (${what})`);
  }

  #prefix(b: Uint8Array): number {
    const flag = b[0];
    if (flag === 1) {
      throw new GrpcFramingError(
        Status.INTERNAL,
        "the server sent a compressed message, but this client asked for no compression",
      );
    }
    if (flag !== 0) throw new GrpcFramingError(Status.INTERNAL, `message flag byte ${flag} is invalid`);
    const len = ((b[1] << 24) >>> 0) + (b[2] << 16) + (b[3] << 8) + b[4];
    if (len > this.#max) {
      throw new GrpcFramingError(
        Status.RESOURCE_EXHAUSTED,
        `the server sent a message of ${len} bytes, over this client's limit of ${this.#max}`,
      );
    }
    return len;
  }

  /** Joins what is buffered into one array and empties the buffer. */
  #take(): Uint8Array {
    if (this.#parts.length === 1 && this.#parts[0].length === this.#buffered) {
      const only = this.#parts[0];
      this.#parts = [];
      this.#buffered = 0;
      return only;
    }
    const out = new Uint8Array(this.#buffered);
    let at = 0;
    for (const p of this.#parts) {
      out.set(p, at);
      at += p.length;
    }
    this.#parts = [];
    this.#buffered = 0;
    return out;
  }
}
