/**
 * Looks at a response's trailers before deciding on a retry (gRPC puts `grpc-status` there), the
 * way Linkerd's PeekTrailersBody does: wait for the first frame; if the body ends there the
 * trailers are known; otherwise take the next frame only if it is already buffered, so a
 * streaming response is not held up. The returned body replays what was read.
 */
import type { Body, HeaderList } from "../../http/message.ts";

const NOT_YET = Symbol("not yet");

/** Resolves after a few microtask turns: enough for reads that are already buffered to settle. */
function soon(): Promise<typeof NOT_YET> {
  return Promise.resolve().then(() => undefined).then(() => undefined).then(() => NOT_YET);
}

class PeekedBody implements Body {
  #queued: (Uint8Array | null | Promise<Uint8Array | null>)[];

  constructor(readonly inner: Body, queued: (Uint8Array | null | Promise<Uint8Array | null>)[]) {
    this.#queued = queued;
  }

  get length(): number | undefined {
    return this.inner.length;
  }

  get trailers(): HeaderList | undefined {
    return this.inner.trailers;
  }

  read(): Promise<Uint8Array | null> {
    if (this.#queued.length > 0) return Promise.resolve(this.#queued.shift()!);
    return this.inner.read();
  }

  readNow(): Uint8Array | null | undefined {
    if (this.#queued.length > 0) {
      const q = this.#queued[0];
      if (q instanceof Promise) return undefined;
      this.#queued.shift();
      return q;
    }
    return this.inner.readNow?.();
  }

  cancel(reason?: Error): void {
    this.#queued = [];
    this.inner.cancel(reason);
  }
}

export interface Peeked {
  body: Body;
  /** The trailers when the body had already ended, else undefined. */
  trailers: HeaderList | undefined;
  /** True when the whole body was seen. */
  ended: boolean;
}

export async function peekTrailers(body: Body): Promise<Peeked> {
  const first = await body.read();
  if (first === null) return { body: new PeekedBody(body, [null]), trailers: body.trailers, ended: true };
  // A body that can say whether its next frame is buffered needs no microtask race.
  const now = body.readNow?.();
  if (now === null) {
    return { body: new PeekedBody(body, [first, null]), trailers: body.trailers, ended: true };
  }
  if (now !== undefined) {
    return { body: new PeekedBody(body, [first, now]), trailers: undefined, ended: false };
  }
  const next = body.read();
  next.catch(() => {}); // whoever reads it sees the rejection; a cancelled peek must not leave it unhandled
  const r = await Promise.race([next, soon()]);
  if (r === NOT_YET) return { body: new PeekedBody(body, [first, next]), trailers: undefined, ended: false };
  if (r === null) return { body: new PeekedBody(body, [first, null]), trailers: body.trailers, ended: true };
  return { body: new PeekedBody(body, [first, r]), trailers: undefined, ended: false };
}
