/**
 * Message bodies read from an HTTP/1 connection: Content-Length, chunked (with trailers) and, for
 * responses, until close. Chunks are views of the received socket chunks (no copies). Nothing is
 * read ahead: bytes stay in the connection's reader, which pauses the socket when they pile up, so
 * a slow consumer slows the sender.
 */
import type { Body, HeaderList } from "../message.ts";
import { H1ParseError } from "./errors.ts";
import { type H1Limits, indexOfByte, latin1, parseTrailers } from "./head.ts";
import type { SocketReader } from "./reader.ts";

/** The connection a body belongs to, told when it is first read and when it is over. */
export interface BodyOwner {
  bodyStarted(): void;
  /** Once per body: read to the end (`error` undefined), failed, or cancelled by its reader. */
  bodyFinished(body: WireBody, error: Error | undefined, cancelled: boolean): void;
}

export abstract class WireBody implements Body {
  readonly length: number | undefined;
  trailers: HeaderList | undefined = undefined;
  /** Over: ended, failed or cancelled. */
  finished = false;
  started = false;
  failure: Error | undefined = undefined;
  protected readonly reader: SocketReader;
  protected readonly owner: BodyOwner;
  /** Status for malformed or truncated bodies: 400 for requests, 502 for responses. */
  protected readonly status: number;

  constructor(reader: SocketReader, owner: BodyOwner, length: number | undefined, status: number) {
    this.reader = reader;
    this.owner = owner;
    this.length = length;
    this.status = status;
  }

  /** Next chunk if it can be had now, null at the end, undefined when bytes must arrive first. */
  protected abstract step(): Uint8Array | null | undefined;

  /** `read()` without a promise: a chunk, null at the end, or undefined when it would wait. */
  readNow(): Uint8Array | null | undefined {
    if (!this.started) {
      this.started = true;
      this.owner.bodyStarted();
    }
    if (this.failure !== undefined) throw this.failure;
    if (this.finished) return null;
    try {
      return this.step();
    } catch (e) {
      this.fail(e as Error);
      throw e;
    }
  }

  read(): Promise<Uint8Array | null> {
    try {
      const r = this.readNow();
      if (r !== undefined) return Promise.resolve(r);
    } catch (e) {
      return Promise.reject(e);
    }
    return this.#readSlow();
  }

  async #readSlow(): Promise<Uint8Array | null> {
    for (;;) {
      await this.reader.wait();
      const r = this.readNow();
      if (r !== undefined) return r;
    }
  }

  cancel(reason?: Error): void {
    if (this.finished) return;
    this.finished = true;
    this.failure = reason ?? new Error("body cancelled by its reader");
    this.owner.bodyFinished(this, this.failure, true);
    this.reader.interrupt();
  }

  /** Ends the body with an error (connection failure, abort); a pending read rejects with it. */
  fail(error: Error): void {
    if (this.finished) return;
    this.finished = true;
    this.failure = error;
    this.owner.bodyFinished(this, error, false);
    this.reader.interrupt();
  }

  protected end(): void {
    this.finished = true;
    this.owner.bodyFinished(this, undefined, false);
  }

  /** No bytes now: undefined to wait, or the error if none will come. */
  protected starved(what: string): undefined {
    const r = this.reader;
    if (r.error !== undefined) throw new H1ParseError(this.status, `${what}: ${r.error.message}`);
    if (r.done) throw new H1ParseError(this.status, `${what}: connection closed`);
    return undefined;
  }
}

export class LengthBody extends WireBody {
  #remaining: number;

  constructor(reader: SocketReader, owner: BodyOwner, length: number, status: number) {
    super(reader, owner, length, status);
    this.#remaining = length;
  }

  get remaining(): number {
    return this.#remaining;
  }

  protected step(): Uint8Array | null | undefined {
    const c = this.reader.take(this.#remaining);
    if (c === null) {
      return this.starved(`body ended after ${this.length! - this.#remaining} of ${this.length} bytes`);
    }
    this.#remaining -= c.length;
    if (this.#remaining === 0) this.end();
    return c;
  }
}

const SIZE = 0, DATA = 1, DATA_CR = 2, DATA_LF = 3, TRAILERS = 4;

function hexValue(c: number): number {
  if (c >= 48 && c <= 57) return c - 48;
  c |= 0x20;
  if (c >= 97 && c <= 102) return c - 87;
  return -1;
}

export class ChunkedBody extends WireBody {
  #state = SIZE;
  #remaining = 0;
  #line = "";
  #extBytes = 0;
  #trailerText = "";
  #trailerCount = 0;
  readonly #limits: H1Limits;

  constructor(reader: SocketReader, owner: BodyOwner, limits: H1Limits, status: number) {
    super(reader, owner, undefined, status);
    this.#limits = limits;
  }

  protected step(): Uint8Array | null | undefined {
    const r = this.reader;
    for (;;) {
      switch (this.#state) {
        case SIZE: {
          const line = this.#readLine(this.#limits.maxChunkLineBytes, "chunk size line");
          if (line === undefined) return this.starved("chunked body ended early");
          const size = this.#chunkSize(line);
          if (size === 0) {
            this.#state = TRAILERS;
          } else {
            this.#remaining = size;
            this.#state = DATA;
          }
          break;
        }
        case DATA: {
          const c = r.take(this.#remaining);
          if (c === null) return this.starved("chunked body ended inside a chunk");
          this.#remaining -= c.length;
          if (this.#remaining === 0) this.#state = DATA_CR;
          return c;
        }
        case DATA_CR:
        case DATA_LF: {
          const b = r.takeByte();
          if (b < 0) return this.starved("chunked body ended after chunk data");
          if (b !== (this.#state === DATA_CR ? 13 : 10)) {
            throw new H1ParseError(this.status, "chunk data is not followed by CRLF");
          }
          this.#state = this.#state === DATA_CR ? DATA_LF : SIZE;
          break;
        }
        case TRAILERS: {
          const max = this.#limits.maxHeadBytes - this.#trailerText.length;
          const line = this.#readLine(max, "trailer section");
          if (line === undefined) return this.starved("chunked body ended in the trailers");
          if (line.length === 0) {
            if (this.#trailerCount > 0) {
              this.trailers = parseTrailers(this.#trailerText + "\r\n", this.#limits, this.status);
            }
            this.end();
            return null;
          }
          if (++this.#trailerCount > this.#limits.maxHeaders) {
            throw new H1ParseError(this.status, `more than ${this.#limits.maxHeaders} trailer fields`);
          }
          this.#trailerText += line + "\r\n";
          break;
        }
      }
    }
  }

  /** One CRLF-terminated line without the CRLF, or undefined if it has not all arrived. */
  #readLine(max: number, what: string): string | undefined {
    const r = this.reader;
    for (;;) {
      const c = r.take(Infinity);
      if (c === null) return undefined;
      const lf = indexOfByte(c, 10, 0);
      if (lf < 0) {
        this.#line += latin1(c);
        if (this.#line.length > max) throw new H1ParseError(this.status, `${what} longer than ${max} bytes`);
        continue;
      }
      if (lf + 1 < c.length) r.unread(c.subarray(lf + 1));
      const line = this.#line.length === 0 ? latin1(c, 0, lf) : this.#line + latin1(c, 0, lf);
      this.#line = "";
      if (line.length > max + 1) throw new H1ParseError(this.status, `${what} longer than ${max} bytes`);
      if (line.charCodeAt(line.length - 1) !== 13) {
        throw new H1ParseError(this.status, `${what} ends with a bare LF (CRLF required)`);
      }
      return line.slice(0, -1);
    }
  }

  #chunkSize(line: string): number {
    let size = 0;
    let i = 0;
    for (; i < line.length; i++) {
      const h = hexValue(line.charCodeAt(i));
      if (h < 0) break;
      if (i === 15) throw new H1ParseError(this.status, "chunk size too large");
      size = size * 16 + h;
    }
    if (i === 0) throw new H1ParseError(this.status, `invalid chunk size line "${line.slice(0, 32)}"`);
    if (i < line.length) {
      let j = i;
      while (j < line.length && (line.charCodeAt(j) === 32 || line.charCodeAt(j) === 9)) j++;
      if (line.charCodeAt(j) !== 59 /* ; */) {
        throw new H1ParseError(this.status, `invalid chunk size line "${line.slice(0, 32)}"`);
      }
      for (let k = j; k < line.length; k++) {
        const c = line.charCodeAt(k);
        if ((c < 32 && c !== 9) || c === 127) {
          throw new H1ParseError(this.status, "control character in chunk extension");
        }
      }
      this.#extBytes += line.length - i;
      if (this.#extBytes > this.#limits.maxChunkExtBytes) {
        throw new H1ParseError(this.status, `chunk extensions exceed ${this.#limits.maxChunkExtBytes} bytes`);
      }
    }
    return size;
  }
}

/** A response body delimited by the connection closing. */
export class CloseBody extends WireBody {
  constructor(reader: SocketReader, owner: BodyOwner) {
    super(reader, owner, undefined, 502);
  }

  protected step(): Uint8Array | null | undefined {
    const r = this.reader;
    const c = r.take(Infinity);
    if (c !== null) return c;
    if (r.error !== undefined) throw new H1ParseError(502, `response body failed: ${r.error.message}`);
    if (r.eof) {
      this.end();
      return null;
    }
    if (r.done) throw new H1ParseError(502, "response body failed: connection closed without FIN");
    return undefined;
  }
}
