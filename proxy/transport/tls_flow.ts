/**
 * Read backpressure for node:tls on Deno. Deno 2.9.6's TLS wrapper keeps reading ciphertext from
 * its transport while the TLS socket is paused, and buffers the decrypted bytes out of sight
 * (readableLength stays small): a peer that sends fast to a proxy whose destination reads slowly
 * grows the proxy by hundreds of MiB a second (docs/data-path.md, "Backpressure on Deno's
 * node:net/node:tls"). Pausing the raw socket does not help, because the wrapper reads its native
 * handle directly.
 *
 * So the TLS socket is put on a JS Duplex over the raw socket, which the wrapper can only read
 * through us: while the TLS socket is paused by its consumer, the raw socket is paused too and TCP
 * holds the sender back. Writes go straight to the raw socket, whose 'drain' is honest.
 */
import { Duplex } from "node:stream";
import type * as net from "node:net";

/** A Duplex carrying `raw`'s bytes; `gate()` ties its reading to a TLS socket's flow state. */
export class GatedTransport extends Duplex {
  readonly raw: net.Socket;
  /** Paused by the TLS socket's consumer (not by the wrapper: it never pauses its transport). */
  #held = false;

  constructor(raw: net.Socket) {
    super({ allowHalfOpen: true });
    this.raw = raw;
    raw.on("data", (c: Uint8Array) => {
      if (!this.push(c)) raw.pause();
    });
    raw.on("end", () => this.push(null));
    raw.on("error", (e) => this.destroy(e));
    raw.on("close", () => {
      if (!this.destroyed) this.destroy();
    });
  }

  /** Pauses `raw` whenever `tlsSocket` is paused by its reader, and resumes it with it. */
  gate(tlsSocket: Duplex): void {
    // The two live and die together, whichever the wrapper or its user closes first.
    tlsSocket.once("close", () => this.destroy());
    this.once("close", () => tlsSocket.destroy());
    tlsSocket.on("pause", () => {
      this.#held = true;
      this.raw.pause();
    });
    tlsSocket.on("resume", () => {
      this.#held = false;
      this.raw.resume();
    });
  }

  override _read(): void {
    if (!this.#held) this.raw.resume();
  }

  override _write(c: Uint8Array, _enc: BufferEncoding, cb: (e?: Error | null) => void): void {
    this.raw.write(c, cb);
  }

  override _writev(cs: { chunk: Uint8Array }[], cb: (e?: Error | null) => void): void {
    this.raw.cork();
    for (let i = 0; i < cs.length - 1; i++) this.raw.write(cs[i].chunk);
    this.raw.write(cs[cs.length - 1].chunk, cb);
    this.raw.uncork();
  }

  override _final(cb: (e?: Error | null) => void): void {
    this.raw.end(cb);
  }

  override _destroy(e: Error | null, cb: (e: Error | null) => void): void {
    this.raw.destroy(e ?? undefined);
    cb(e);
  }
}
