/**
 * Read backpressure for node:tls on Deno. Deno 2.9.6's TLS wrapper keeps reading ciphertext from
 * its transport while the TLS socket is paused, and buffers the decrypted bytes out of sight
 * (readableLength stays small): a peer that sends fast to a proxy whose destination reads slowly
 * grows the proxy by hundreds of MiB a second (docs/data-path.md, "Backpressure on Deno's
 * node:net/node:tls"). Pausing the raw socket does not help, because the wrapper reads its native
 * handle directly.
 *
 * So the TLS socket is put on a JS Duplex over the raw socket, which the wrapper can only read
 * through us. The raw socket is paused, and TCP holds the sender back, while the TLS socket is
 * paused by its consumer or has a full read buffer (nobody reading it yet, or a consumer using
 * read()); it resumes when the TLS socket resumes or asks for more (its _read). Writes go straight
 * to the raw socket, whose 'drain' is honest.
 */
import { Duplex } from "node:stream";
import type * as net from "node:net";

/** A Duplex carrying `raw`'s bytes; `gate()` ties its reading to a TLS socket's flow state. */
export class GatedTransport extends Duplex {
  readonly raw: net.Socket;
  /** The TLS socket's reader wants no more for now (the wrapper itself never says so). */
  #held = false;
  #tls: Duplex | undefined = undefined;

  constructor(raw: net.Socket) {
    // Room for one socket read (64 KiB) so a full-size chunk does not pause the socket each time.
    super({ allowHalfOpen: true, highWaterMark: 128 * 1024 });
    this.raw = raw;
    raw.on("data", (c: Uint8Array) => {
      if (!this.push(c)) raw.pause();
      const t = this.#tls;
      // Decrypted bytes land in the TLS socket a little later: this sees the previous chunk's.
      if (t !== undefined && t.readableLength >= t.readableHighWaterMark) this.#hold();
    });
    raw.on("end", () => this.push(null));
    raw.on("error", (e) => this.destroy(e));
    raw.on("close", () => {
      if (!this.destroyed) this.destroy();
    });
  }

  /** Ties reading `raw` to `tlsSocket`'s reader (after the handshake, which must read freely). */
  gate(tlsSocket: Duplex): void {
    this.#tls = tlsSocket;
    // The two live and die together, whichever the wrapper or its user closes first.
    tlsSocket.once("close", () => this.destroy());
    this.once("close", () => tlsSocket.destroy());
    tlsSocket.on("pause", () => this.#hold());
    tlsSocket.on("resume", () => this.#release());
    // A Readable calls _read when its buffer has room and someone reads: the moment to go on.
    const read = tlsSocket._read;
    tlsSocket._read = (n: number) => {
      this.#release();
      read.call(tlsSocket, n);
    };
    if (tlsSocket.readableLength >= tlsSocket.readableHighWaterMark) this.#hold();
  }

  #hold(): void {
    this.#held = true;
    this.raw.pause();
  }

  #release(): void {
    if (!this.#held) return;
    this.#held = false;
    this.raw.resume();
  }

  override _read(): void {
    if (!this.#held) this.raw.resume();
  }

  // A write is done when the raw socket took it without asking to wait: waiting for each write to
  // reach the kernel would add a round of callbacks to every TLS record. When it asks to wait, the
  // callback waits for 'drain', so the TLS socket's own write() and 'drain' stay honest.
  override _write(c: Uint8Array, _enc: BufferEncoding, cb: (e?: Error | null) => void): void {
    if (this.raw.write(c)) cb();
    else this.#afterDrain(cb);
  }

  override _writev(cs: { chunk: Uint8Array }[], cb: (e?: Error | null) => void): void {
    const raw = this.raw;
    raw.cork();
    let ok = true;
    for (let i = 0; i < cs.length; i++) ok = raw.write(cs[i].chunk);
    raw.uncork();
    if (ok) cb();
    else this.#afterDrain(cb);
  }

  #afterDrain(cb: (e?: Error | null) => void): void {
    const raw = this.raw;
    const done = () => {
      raw.off("drain", done);
      raw.off("close", done);
      cb(raw.destroyed ? new Error("connection closed while writing") : null);
    };
    raw.on("drain", done);
    raw.on("close", done);
  }

  override _final(cb: (e?: Error | null) => void): void {
    this.raw.end(cb);
  }

  override _destroy(e: Error | null, cb: (e: Error | null) => void): void {
    this.raw.destroy(e ?? undefined);
    cb(e);
  }
}
