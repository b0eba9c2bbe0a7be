/**
 * A body passed through unchanged while a subclass sees how it ends: each chunk, the end with its
 * trailers, a failed read, or a reader that cancels. The metrics recorder and the balancer's
 * lease both watch response bodies this way; one class per response keeps the wrapper to a
 * single allocation on the hot path.
 */
import type { Body, HeaderList } from "./message.ts";

export abstract class BodyTap implements Body {
  protected readonly inner: Body;

  constructor(inner: Body) {
    this.inner = inner;
  }

  /** A chunk was read. */
  protected abstract onChunk(): void;
  /** The body ended; `trailers` as the inner body holds them. */
  protected abstract onEnd(trailers: HeaderList | undefined): void;
  /** A read failed with `e` (rethrown to the reader). */
  protected abstract onError(e: unknown): void;
  /** The reader cancelled (possibly after the end). */
  protected abstract onCancel(): void;

  get length(): number | undefined {
    return this.inner.length;
  }

  get trailers(): HeaderList | undefined {
    return this.inner.trailers;
  }

  async read(): Promise<Uint8Array | null> {
    let chunk: Uint8Array | null;
    try {
      chunk = await this.inner.read();
    } catch (e) {
      this.onError(e);
      throw e;
    }
    return this.#seen(chunk);
  }

  readNow(): Uint8Array | null | undefined {
    let chunk: Uint8Array | null | undefined;
    try {
      chunk = this.inner.readNow?.();
    } catch (e) {
      this.onError(e);
      throw e;
    }
    return chunk === undefined ? undefined : this.#seen(chunk);
  }

  cancel(reason?: Error): void {
    this.onCancel();
    this.inner.cancel(reason);
  }

  #seen(chunk: Uint8Array | null): Uint8Array | null {
    if (chunk === null) this.onEnd(this.inner.trailers);
    else this.onChunk();
    return chunk;
  }
}
