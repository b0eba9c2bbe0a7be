/**
 * Sends a `Body` on an `H2Stream` (a request on the client side, a response on the server side)
 * with backpressure: the next chunk is pulled only after the last one fit the flow-control
 * windows, so a peer that stops reading stops the source upstream. A body whose declared length
 * is complete ends with END_STREAM on its last DATA frame; otherwise its trailers (or an empty
 * DATA frame) end the stream.
 */
import type { Body } from "../message.ts";
import { ErrorCode } from "./frame.ts";
import { Http2StreamReset } from "./errors.ts";
import { appendSendable } from "./headers.ts";
import type { H2Stream } from "./stream.ts";

const EMPTY = new Uint8Array(0);

/**
 * As `writeBody`, but a sized body that is already here in full (one chunk, then the end, no
 * trailers) and fits the windows is queued now, without an async function and its promise: the
 * common small response. Anything else goes through `writeBody`, with what was read replayed.
 */
export function writeBodyNow(stream: H2Stream, body: Body): boolean | Promise<boolean> {
  const declared = body.length;
  if (declared === undefined || declared === 0 || body.readNow === undefined) return writeBody(stream, body);
  let first: Uint8Array | null | undefined;
  let second: Uint8Array | null | undefined;
  try {
    first = body.readNow();
    if (first === undefined) return writeBody(stream, body);
    if (first !== null && first.length === declared) second = body.readNow();
  } catch (e) {
    stream.reset(e instanceof Http2StreamReset ? e.code : ErrorCode.INTERNAL_ERROR);
    return false;
  }
  if (
    first !== null && first.length === declared && second === null &&
    (body.trailers === undefined || body.trailers.size === 0) && stream.trySendData(first, true)
  ) {
    return true;
  }
  return writeBody(stream, new Replay(body, first, second));
}

/** A body whose first one or two reads were already taken: they come first, then the rest. */
class Replay implements Body {
  readonly length: number | undefined;
  readonly #body: Body;
  readonly #taken: (Uint8Array | null)[];

  constructor(body: Body, first: Uint8Array | null, second: Uint8Array | null | undefined) {
    this.#body = body;
    this.length = body.length;
    // `second` undefined: it was not read (or would have waited), so reading goes on from the body.
    this.#taken = second === undefined ? [first] : [first, second];
  }

  readNow(): Uint8Array | null | undefined {
    if (this.#taken.length > 0) return this.#taken.shift();
    return this.#body.readNow?.();
  }

  read(): Promise<Uint8Array | null> {
    if (this.#taken.length > 0) return Promise.resolve(this.#taken.shift() ?? null);
    return this.#body.read();
  }

  get trailers() {
    return this.#body.trailers;
  }

  cancel(reason?: Error): void {
    this.#body.cancel(reason);
  }
}

/**
 * Resolves true when the whole body was queued, false when the exchange was cut short: a body
 * that fails resets the stream with its own reset code (else INTERNAL_ERROR); a stream that
 * closes first cancels the body.
 */
export async function writeBody(stream: H2Stream, body: Body): Promise<boolean> {
  let sent = 0;
  const declared = body.length;
  // A stream that closes while we wait for the next chunk must not leave the source running.
  stream.sendingBody = body;
  try {
    for (;;) {
      let chunk: Uint8Array | null | undefined;
      try {
        chunk = body.readNow?.();
        if (chunk === undefined) chunk = await body.read();
      } catch (e) {
        stream.reset(e instanceof Http2StreamReset ? e.code : ErrorCode.INTERNAL_ERROR);
        return false;
      }
      if (stream.closed) {
        if (chunk !== null) body.cancel(new Error("stream closed by peer"));
        return false;
      }
      if (chunk === null) break;
      sent += chunk.length;
      if (declared !== undefined && sent > declared) {
        stream.reset(ErrorCode.INTERNAL_ERROR); // more than declared: never pass it on
        body.cancel(new Error("body longer than its declared length"));
        return false;
      }
      // The declared length is complete: the next read is the end, so END_STREAM can ride on
      // this frame (one frame instead of two for every sized body).
      let last = false;
      if (declared !== undefined && sent >= declared) {
        let next: Uint8Array | null | undefined;
        try {
          next = body.readNow?.();
          if (next === undefined) next = await body.read();
        } catch (e) {
          stream.reset(e instanceof Http2StreamReset ? e.code : ErrorCode.INTERNAL_ERROR);
          return false;
        }
        if (next !== null) {
          stream.reset(ErrorCode.INTERNAL_ERROR); // more than declared: never pass it on
          body.cancel(new Error("body longer than its declared length"));
          return false;
        }
        last = body.trailers === undefined || body.trailers.size === 0;
      }
      try {
        if (!stream.trySendData(chunk, last)) await stream.sendData(chunk, last);
      } catch {
        body.cancel(new Error("stream closed by peer"));
        return false;
      }
      if (last) return true;
      if (declared !== undefined && sent >= declared) break;
    }
    const t = body.trailers;
    if (t !== undefined && t.size > 0) {
      const out: string[] = [];
      appendSendable(out, t);
      stream.sendTrailers(out);
    } else if (!stream.trySendData(EMPTY, true)) {
      await stream.sendData(EMPTY, true);
    }
    return true;
  } catch {
    return false;
  } finally {
    stream.sendingBody = undefined;
  }
}
