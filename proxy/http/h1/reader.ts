/**
 * The read side of one HTTP/1 connection: a queue of received chunks that the head parser and the
 * body decoders take from without copying. The socket is paused while more than `highWater` bytes
 * wait unread, so a peer that sends faster than the message's reader reads is held back by TCP.
 */
import type { Duplex } from "node:stream";
import { HeadScanner } from "./head.ts";

const EMPTY = new Uint8Array(0);
/** A queue array longer than this is dropped when it empties, not kept for the next bytes. */
const KEEP_SLOTS = 16;

export class SocketReader {
  readonly sock: Duplex;
  readonly highWater: number;
  // Chunks #first..#end-1 are queued. The array is kept when it empties (slots cleared) so each
  // request does not grow a new one.
  #chunks: Uint8Array[] = [];
  #first = 0;
  #end = 0;
  buffered = 0;
  /** The peer ended its side (FIN). */
  eof = false;
  /** The socket closed (after eof, an error or destroy()). */
  closed = false;
  error: Error | undefined = undefined;
  #paused = false;
  #wake: (() => void) | undefined = undefined;
  #detached = false;

  constructor(sock: Duplex, highWater = 64 * 1024) {
    this.sock = sock;
    this.highWater = highWater;
    sock.on("data", this.#onData);
    sock.on("end", this.#onEnd);
    sock.on("error", this.#onError);
    sock.on("close", this.#onClose);
    sock.resume();
  }

  #onData = (c: Uint8Array): void => {
    this.#chunks[this.#end++] = c;
    this.buffered += c.length;
    if (this.buffered >= this.highWater && !this.#paused) {
      this.#paused = true;
      this.sock.pause();
    }
    this.#notify();
  };

  #onEnd = (): void => {
    this.eof = true;
    this.#notify();
  };

  #onError = (e: Error): void => {
    this.error ??= e;
    this.#notify();
  };

  #onClose = (): void => {
    this.closed = true;
    this.#notify();
  };

  #notify(): void {
    const w = this.#wake;
    if (w !== undefined) {
      this.#wake = undefined;
      w();
    }
  }

  /** No more bytes will come (beyond what is buffered). */
  get done(): boolean {
    return this.eof || this.closed || this.error !== undefined || this.#detached;
  }

  /** The front of the queue, at most `max` bytes, or null if nothing is buffered. */
  take(max: number): Uint8Array | null {
    if (this.buffered === 0) return null;
    let c = this.#chunks[this.#first];
    if (c.length > max) {
      this.#chunks[this.#first] = c.subarray(max);
      c = c.subarray(0, max);
    } else {
      this.#chunks[this.#first] = EMPTY;
      if (++this.#first === this.#end) this.#emptied();
    }
    this.buffered -= c.length;
    if (this.#paused && this.buffered < this.highWater) {
      this.#paused = false;
      this.sock.resume();
    }
    return c;
  }

  /** The next byte, or -1 if nothing is buffered. */
  takeByte(): number {
    if (this.buffered === 0) return -1;
    const c = this.#chunks[this.#first];
    const b = c[0];
    if (c.length > 1) {
      this.#chunks[this.#first] = c.subarray(1);
      if (--this.buffered < this.highWater && this.#paused) {
        this.#paused = false;
        this.sock.resume();
      }
    } else {
      this.take(1);
    }
    return b;
  }

  #emptied(): void {
    this.#first = this.#end = 0;
    if (this.#chunks.length > KEEP_SLOTS) this.#chunks = [];
  }

  /** Puts bytes back at the front (the part of a chunk after a head). */
  unread(c: Uint8Array): void {
    if (c.length === 0) return;
    if (this.#first > 0) this.#chunks[--this.#first] = c;
    else if (this.#end === 0) this.#chunks[this.#end++] = c;
    else {
      this.#chunks.splice(0, 0, c);
      this.#end++;
    }
    this.buffered += c.length;
  }

  /** Resolves on the next data, end, error or `interrupt()`; resumes the socket if it was paused. */
  wait(): Promise<void> {
    if (this.buffered > 0 || this.done) return Promise.resolve();
    if (this.#paused) {
      this.#paused = false;
      this.sock.resume();
    }
    return new Promise(this.#setWake);
  }

  #setWake = (resolve: () => void): void => {
    this.#wake = resolve;
  };

  /**
   * `wait()` without a promise: `fn` is called once, synchronously, on the next data, end, error
   * or `interrupt()` (a connection waiting for a response head keeps one such function).
   */
  onNext(fn: () => void): void {
    if (this.buffered > 0 || this.done) {
      queueMicrotask(fn);
      return;
    }
    if (this.#paused) {
      this.#paused = false;
      this.sock.resume();
    }
    this.#wake = fn;
  }

  /** Wakes a pending `wait()` (timeouts, aborts). */
  interrupt(): void {
    this.#notify();
  }

  /** Stops reading: removes the listeners, pauses the socket and returns the unread bytes. */
  detach(): Uint8Array[] {
    this.#detached = true;
    const s = this.sock;
    s.off("data", this.#onData);
    s.off("end", this.#onEnd);
    s.off("error", this.#onError);
    s.off("close", this.#onClose);
    s.pause();
    const rest = this.#chunks.slice(this.#first, this.#end);
    this.#chunks = [];
    this.#first = this.#end = 0;
    this.buffered = 0;
    this.#notify();
    return rest;
  }
}

/**
 * Collects one head from a reader: scans each chunk for the end of the head and returns the head
 * bytes (a view of the chunk when the head arrived in one piece, the common case), putting back
 * whatever follows it.
 */
export class HeadReader {
  #scanner = new HeadScanner();
  #parts: Uint8Array[] = [];
  #total = 0;
  /** Bytes of the current head seen so far (for the header-read timeout). */
  seen = 0;
  /** Where the head `pull` returned lies in the array it returned (no subarray per head). */
  start = 0;
  end = 0;

  constructor(readonly maxBytes: number, readonly skipLeadingCrlf: boolean) {}

  reset(): void {
    this.#scanner.reset();
    this.#parts.length = 0;
    this.#total = 0;
    this.seen = 0;
  }

  /**
   * The bytes holding the complete head at [`start`, `end`), or null if more bytes are needed.
   * Returns -1 (as a number) when the head exceeds `maxBytes`.
   */
  pull(reader: SocketReader): Uint8Array | null | -1 {
    for (;;) {
      const c = reader.take(Infinity);
      if (c === null) return null;
      this.seen += c.length;
      let start = 0;
      if (this.#total === 0 && this.skipLeadingCrlf) {
        // RFC 9112 §2.2: ignore empty lines before a request line (old clients send CRLF after a body).
        while (start + 1 < c.length && c[start] === 13 && c[start + 1] === 10) start += 2;
        if (start === c.length) continue;
      }
      const end = this.#scanner.scan(c, start);
      if (end < 0) {
        this.#total += c.length - start;
        if (this.#total > this.maxBytes) return -1;
        this.#parts.push(start === 0 ? c : c.subarray(start));
        continue;
      }
      if (end < c.length) reader.unread(c.subarray(end));
      const size = this.#total + end - start;
      if (size > this.maxBytes) return -1;
      if (this.#parts.length === 0) {
        this.reset();
        this.start = start;
        this.end = end;
        return c;
      }
      const out = new Uint8Array(size);
      let off = 0;
      for (const p of this.#parts) {
        out.set(p, off);
        off += p.length;
      }
      out.set(c.subarray(start, end), off);
      this.reset();
      this.start = 0;
      this.end = size;
      return out;
    }
  }
}
