/**
 * Copies bytes both ways between two sockets with backpressure and half-close, counting bytes
 * as they pass. Plain 'data'/'drain' handling: no stream adapters or extra copies on the byte path.
 */
import type { Duplex } from "node:stream";

export interface ForwardHooks {
  /** Bytes read from `a` (and written to `b`). */
  aToB?(n: number): void;
  bToA?(n: number): void;
  /** Once, after both sides are closed; `error` is the first error seen, if any. */
  closed?(error: (Error & { code?: string }) | undefined): void;
}

function pump(from: Duplex, to: Duplex, count: ((n: number) => void) | undefined): void {
  let waiting = false;
  const resume = () => {
    waiting = false;
    from.resume();
  };
  from.on("data", (chunk: Uint8Array) => {
    count?.(chunk.length);
    if (!to.write(chunk) && !waiting) {
      waiting = true;
      from.pause();
      to.once("drain", resume);
    }
  });
  from.on("end", () => to.end());
}

export function forward(a: Duplex, b: Duplex, hooks: ForwardHooks = {}): void {
  let firstError: (Error & { code?: string }) | undefined;
  let open = 2;
  const onError = (other: Duplex) => (e: Error) => {
    firstError ??= e;
    other.destroy();
  };
  const onClose = () => {
    if (--open === 0) hooks.closed?.(firstError);
  };
  a.on("error", onError(b));
  b.on("error", onError(a));
  a.once("close", onClose);
  b.once("close", onClose);
  pump(a, b, hooks.aToB);
  pump(b, a, hooks.bToA);
}
