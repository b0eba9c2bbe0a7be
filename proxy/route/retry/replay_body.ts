/**
 * A request body that can be sent again for a retry without holding up the first attempt: the
 * first attempt streams the original body while its chunks are kept, up to a limit (Linkerd's
 * default 64 KiB). Past the limit the copy is dropped and the request is no longer retryable; the
 * first attempt keeps streaming — memory never exceeds the limit.
 *
 * A retry gets a fresh cursor that replays the kept chunks and then continues from the original if
 * it was not finished. Replaying is possible when the original was read to its end within the
 * limit, or not read at all (e.g. the connection failed first); a body read partway is not
 * replayable (as in Linkerd: the peer answered before taking the whole body).
 *
 * Ownership: cancelling a cursor does not cancel the original while a retry may still need it.
 * Call `seal()` once the attempt that will be answered is chosen (frees the copy; that attempt's
 * cursor then owns the original, and cancelling it cancels the original) or `dispose(reason)` when
 * giving up.
 */
import type { Body, HeaderList } from "../../http/message.ts";

export const DEFAULT_MAX_REQUEST_BYTES = 64 * 1024;

class State {
  chunks: Uint8Array[] = [];
  bytes = 0;
  ended = false;
  /** Past the limit or sealed: nothing more is kept, no more replays. */
  capped = false;
  /** The body outgrew the limit. */
  overLimit = false;
  sealed = false;
  reading = false;
  readStarted = false;
  trailers: HeaderList | undefined = undefined;
  live: Cursor | undefined = undefined;

  constructor(readonly source: Body, readonly limit: number) {}
}

class Cursor implements Body {
  #pos = 0;
  #chunks: Uint8Array[];
  dead = false;

  constructor(readonly state: State) {
    this.#chunks = state.chunks;
  }

  get length(): number | undefined {
    return this.state.source.length;
  }

  get trailers(): HeaderList | undefined {
    return this.state.ended ? this.state.trailers : undefined;
  }

  read(): Promise<Uint8Array | null> {
    if (this.dead) return Promise.reject(new Error("request body was superseded by a retry"));
    const s = this.state;
    if (this.#pos < this.#chunks.length || s.ended) return Promise.resolve(this.#replayed());
    s.reading = true;
    s.readStarted = true;
    return s.source.read().then((c) => this.#took(c), (e) => {
      s.reading = false;
      throw e;
    });
  }

  readNow(): Uint8Array | null | undefined {
    if (this.dead) throw new Error("request body was superseded by a retry");
    const s = this.state;
    if (this.#pos < this.#chunks.length || s.ended) return this.#replayed();
    if (s.reading || s.source.readNow === undefined) return undefined;
    const c = s.source.readNow();
    if (c === undefined) return undefined;
    s.readStarted = true;
    return this.#took(c);
  }

  /** The next chunk already kept (or null once the source ended). */
  #replayed(): Uint8Array | null {
    const s = this.state;
    if (this.#pos < this.#chunks.length) {
      const c = this.#chunks[this.#pos];
      if (s.sealed) this.#chunks[this.#pos] = EMPTY; // let the copy go as it is replayed
      this.#pos++;
      return c;
    }
    return null;
  }

  /** A chunk fresh from the source: kept for replay unless over the limit. */
  #took(c: Uint8Array | null): Uint8Array | null {
    const s = this.state;
    s.reading = false;
    if (c === null) {
      s.ended = true;
      s.trailers = s.source.trailers;
      return null;
    }
    if (!s.capped) {
      s.bytes += c.length;
      if (s.bytes > s.limit) {
        s.capped = true;
        s.overLimit = true;
        s.chunks = [];
        this.#chunks = s.chunks;
        this.#pos = 0;
      } else {
        s.chunks.push(c);
        this.#pos++;
      }
    }
    return c;
  }

  cancel(reason?: Error): void {
    this.dead = true;
    const s = this.state;
    if (s.sealed && s.live === this && !s.ended) s.source.cancel(reason);
  }
}

const EMPTY = new Uint8Array(0);

export class ReplayBody {
  readonly #s: State;

  private constructor(source: Body, limit: number) {
    this.#s = new State(source, limit);
  }

  /** Undefined when the declared length already exceeds the limit (not retryable; forward `body` as is). */
  static wrap(body: Body, limit = DEFAULT_MAX_REQUEST_BYTES): ReplayBody | undefined {
    if (body.length !== undefined && body.length > limit) return undefined;
    return new ReplayBody(body, limit);
  }

  /** True when another cursor can replay the whole body. */
  get canReplay(): boolean {
    const s = this.#s;
    if (s.capped || s.reading) return false;
    return s.ended || !s.readStarted;
  }

  /** True once the body outgrew the limit. */
  get capped(): boolean {
    return this.#s.overLimit;
  }

  get bufferedBytes(): number {
    return this.#s.capped ? 0 : this.#s.bytes;
  }

  /**
   * The body for the next attempt. The first call always works; later ones need `canReplay`
   * (else throws). The previous cursor stops working.
   */
  cursor(): Body {
    const s = this.#s;
    if (s.live !== undefined && !this.canReplay) throw new Error("request body cannot be replayed");
    if (s.live) s.live.dead = true;
    const c = new Cursor(s);
    s.live = c;
    return c;
  }

  /** No more replays: drops the copy; the live cursor keeps streaming and now owns the original. */
  seal(): void {
    const s = this.#s;
    s.sealed = true;
    s.capped = true;
    s.chunks = [];
    if (s.live?.dead && !s.ended) s.source.cancel(new Error("request abandoned"));
  }

  /** Gives up: cancels the original unless it was read to the end. */
  dispose(reason?: Error): void {
    const s = this.#s;
    s.sealed = true;
    s.capped = true;
    s.chunks = [];
    if (s.live) s.live.dead = true;
    if (!s.ended) s.source.cancel(reason);
  }
}
