/**
 * Read backpressure for node:tls on Deno. Deno 2.9.6's TLS wrapper keeps reading ciphertext from
 * its transport while the TLS socket is paused, and buffers the decrypted bytes out of sight
 * (readableLength stays small): a peer that sends fast to a proxy whose destination reads slowly
 * grows the proxy by hundreds of MiB a second (docs/data-path.md, "Backpressure on Deno's
 * node:net/node:tls"). raw.pause() does not help: the wrapper reads the TCP handle itself.
 *
 * The gate makes the TCP handle under the TLS socket stop and start reading whenever node:net
 * stops and starts the TLS handle (its read buffer is full; its reader wants more), so TCP holds the
 * sender back. Where the TCP socket has no such handle (another runtime version), the TLS socket is
 * put on a JS Duplex over the raw socket instead, which the wrapper can only read through us: it
 * holds while the TLS socket is paused or its buffer is full and lets go when it resumes or asks for
 * more. That costs about a quarter of small-message throughput, so it is only the fallback.
 */
import { Duplex } from "node:stream";
import type * as net from "node:net";

/** What the gate needs from a stream handle (libuv-style, as node:net's TCP handles have). */
interface ReadControl {
  readStart(): number;
  readStop(): number;
}

function readControl(raw: net.Socket): ReadControl | undefined {
  const h = (raw as unknown as { _handle?: Partial<ReadControl> | null })._handle;
  if (h == null || typeof h.readStart !== "function" || typeof h.readStop !== "function") return undefined;
  return h as ReadControl;
}

/** The transport to build a TLS socket on, and `gate()` to call once its handshake is done. */
export interface TlsReadGate {
  transport: net.Socket;
  gate(tlsSocket: Duplex): void;
}

export function tlsReadGate(raw: net.Socket): TlsReadGate {
  const control = readControl(raw);
  if (control === undefined) {
    const d = new GatedTransport(raw);
    return { transport: d as unknown as net.Socket, gate: (t) => d.gate(t) };
  }
  return { transport: raw, gate: (t) => gateHandle(control, t) };
}

/**
 * Makes the TCP handle follow the TLS handle: node:net stops the TLS handle when the socket's read
 * buffer is full and starts it when its reader wants more, exactly when reading should stop and go
 * on; Deno's TLS handle alone would keep reading the network, so the TCP handle is told too.
 */
function gateHandle(control: ReadControl, t: Duplex): void {
  const tlsHandle = (t as unknown as { _handle?: Partial<ReadControl> | null })._handle;
  if (
    tlsHandle == null || typeof tlsHandle.readStart !== "function" || typeof tlsHandle.readStop !== "function"
  ) {
    // Unbounded reads are not an option: refuse the connection, loudly (tls_flow_test.ts fails too).
    t.destroy(new Error("TLS socket has no readStart/readStop handle: its reads cannot be bounded"));
    return;
  }
  const stop = tlsHandle.readStop;
  const start = tlsHandle.readStart;
  tlsHandle.readStop = () => {
    control.readStop();
    return stop.call(tlsHandle);
  };
  tlsHandle.readStart = () => {
    control.readStart();
    return start.call(tlsHandle);
  };
}

/** Calls `hold` when `t`'s read buffer is full and `release` when `t` asks for more. */
function watchReader(t: Duplex, hold: () => void, release: () => void): void {
  const push = t.push;
  t.push = (chunk: unknown, encoding?: BufferEncoding) => {
    const room = push.call(t, chunk, encoding);
    if (!room && chunk !== null) hold();
    return room;
  };
  // A Readable calls _read when its buffer has room and someone reads: the moment to go on.
  const read = t._read;
  t._read = (n: number) => {
    release();
    read.call(t, n);
  };
  if (t.readableLength >= t.readableHighWaterMark) hold();
}

/** The fallback: a Duplex carrying `raw`'s bytes; `gate()` ties its reading to a TLS socket's reader. */
export class GatedTransport extends Duplex {
  readonly raw: net.Socket;
  /** The TLS socket's reader wants no more for now (the wrapper itself never says so). */
  #held = false;

  constructor(raw: net.Socket) {
    // Room for one socket read (64 KiB) so a full-size chunk does not pause the socket each time.
    super({ allowHalfOpen: true, highWaterMark: 128 * 1024 });
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

  /** Ties reading `raw` to `tlsSocket`'s reader (after the handshake, which must read freely). */
  gate(tlsSocket: Duplex): void {
    // The two live and die together, whichever the wrapper or its user closes first.
    tlsSocket.once("close", () => this.destroy());
    this.once("close", () => tlsSocket.destroy());
    tlsSocket.on("pause", () => this.#hold());
    tlsSocket.on("resume", () => this.#release());
    watchReader(tlsSocket, () => this.#hold(), () => this.#release());
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
