/**
 * `Body` over the receive side of an `H2Stream`: DATA payloads in order, then the trailers. The
 * stream's window is returned as chunks are read, so a slow reader holds the sender back.
 *
 * `cancel()` depends on the side: a response body (client side) resets the stream with CANCEL;
 * a request body (server side) cannot, because the stream still has to carry the response, so
 * whatever else the client sends is discarded (and credited back at once).
 */
import { type Body, HeaderList } from "../message.ts";
import { ErrorCode } from "./frame.ts";
import type { H2Stream } from "./stream.ts";

export class StreamBody implements Body {
  readonly length: number | undefined;
  readonly #stream: H2Stream;
  readonly #discardOnCancel: boolean;
  #trailers: HeaderList | undefined;

  constructor(stream: H2Stream, length: number | undefined, opts: { discardOnCancel?: boolean } = {}) {
    this.#stream = stream;
    this.length = length;
    this.#discardOnCancel = opts.discardOnCancel ?? false;
  }

  read(): Promise<Uint8Array | null> {
    return this.#stream.read();
  }

  readNow(): Uint8Array | null | undefined {
    return this.#stream.readNow();
  }

  get trailers(): HeaderList | undefined {
    const raw = this.#stream.trailers;
    if (raw === undefined) return undefined;
    return this.#trailers ??= new HeaderList(raw);
  }

  /** True once the body has ended or failed. */
  get settled(): boolean {
    const s = this.#stream;
    return s.failure !== undefined || (s.remoteEnded && s.buffered === 0);
  }

  cancel(_reason?: Error): void {
    const s = this.#stream;
    if (s.remoteEnded || s.closed) return;
    if (this.#discardOnCancel) s.discard();
    else s.reset(ErrorCode.CANCEL);
  }
}
