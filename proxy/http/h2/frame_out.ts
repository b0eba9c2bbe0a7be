/**
 * The frames a session has queued for its next socket write. Frame headers, field blocks, control
 * frames and small DATA payloads are written straight into one reused staging buffer, so queueing
 * a frame allocates nothing; a write takes one exact-size copy of it. Large DATA payloads are
 * kept by reference (no copy into the stage) and joined with the staged bytes around them when
 * the write is taken, as before.
 */
import { FRAME_HEADER_SIZE, FrameType } from "./frame.ts";

/**
 * DATA payloads at least this large are queued by reference, not copied into the stage. Below it a
 * copy is cheaper: a payload by reference still gets copied when the write joins it with its frame
 * header, after costing a sealed piece and a list of pieces.
 */
const BY_REFERENCE = 4096;
/** The stage starts this small (most sessions carry small messages) and grows on demand. */
const INITIAL_STAGE = 1024;
/** A stage grown above this is dropped after the write, so one burst does not pin it. */
const KEEP_STAGE = 16 * 1024;

export class FrameOut {
  #stage = new Uint8Array(INITIAL_STAGE);
  #staged = 0;
  /** Sealed pieces in order, when a payload was queued by reference; the stage follows them. */
  #parts: Uint8Array[] | undefined;
  /** All queued bytes, staged and sealed. */
  bytes = 0;

  /** A whole frame (header and payload), copied. */
  frame(f: Uint8Array): void {
    this.#room(f.length).set(f, this.#staged);
    this.#staged += f.length;
    this.bytes += f.length;
  }

  /** A frame header (RFC 9113 §4.1) written in place. */
  header(length: number, type: number, flags: number, streamId: number): void {
    const b = this.#room(FRAME_HEADER_SIZE);
    const at = this.#staged;
    b[at] = length >>> 16;
    b[at + 1] = (length >>> 8) & 0xff;
    b[at + 2] = length & 0xff;
    b[at + 3] = type;
    b[at + 4] = flags;
    b[at + 5] = (streamId >>> 24) & 0x7f;
    b[at + 6] = (streamId >>> 16) & 0xff;
    b[at + 7] = (streamId >>> 8) & 0xff;
    b[at + 8] = streamId & 0xff;
    this.#staged = at + FRAME_HEADER_SIZE;
    this.bytes += FRAME_HEADER_SIZE;
  }

  /** `src[start, end)` copied after what is staged (a field block, a small payload). */
  copy(src: Uint8Array, start: number, end: number): void {
    const n = end - start;
    if (n === 0) return;
    const b = this.#room(n);
    if (n <= 64) {
      // Small pieces (most field blocks between proxies): a loop, without the view set() needs.
      let at = this.#staged;
      for (let i = start; i < end; i++) b[at++] = src[i];
    } else {
      b.set(start === 0 && end === src.length ? src : src.subarray(start, end), this.#staged);
    }
    this.#staged += n;
    this.bytes += n;
  }

  /** A DATA payload, `data[start, end)`: copied when small, else kept by reference until the write. */
  payload(data: Uint8Array, start: number, end: number): void {
    if (end - start < BY_REFERENCE) {
      this.copy(data, start, end);
      return;
    }
    this.#seal();
    (this.#parts ??= []).push(start === 0 && end === data.length ? data : data.subarray(start, end));
    this.bytes += end - start;
  }

  /** WINDOW_UPDATE (RFC 9113 §6.9) written in place. */
  windowUpdate(streamId: number, increment: number): void {
    this.header(4, FrameType.WINDOW_UPDATE, 0, streamId);
    const b = this.#stage;
    const at = this.#staged;
    const v = increment & 0x7fffffff;
    b[at] = v >>> 24;
    b[at + 1] = (v >>> 16) & 0xff;
    b[at + 2] = (v >>> 8) & 0xff;
    b[at + 3] = v & 0xff;
    this.#staged = at + 4;
    this.bytes += 4;
  }

  /** Everything queued as one buffer the caller owns (undefined when empty); the queue empties. */
  take(): Uint8Array | undefined {
    if (this.bytes === 0) return undefined;
    let out: Uint8Array;
    const parts = this.#parts;
    if (parts === undefined) {
      out = this.#stage.slice(0, this.#staged);
    } else {
      this.#seal();
      if (parts.length === 1) out = parts[0];
      else {
        out = new Uint8Array(this.bytes);
        let at = 0;
        for (const p of parts) {
          out.set(p, at);
          at += p.length;
        }
      }
      this.#parts = undefined;
    }
    this.clear();
    return out;
  }

  /** Drops what is queued. */
  clear(): void {
    this.#staged = 0;
    this.#parts = undefined;
    this.bytes = 0;
    if (this.#stage.length > KEEP_STAGE) this.#stage = new Uint8Array(INITIAL_STAGE);
  }

  /** Staged bytes become a sealed piece, so a payload by reference can follow in order. */
  #seal(): void {
    if (this.#staged === 0) return;
    (this.#parts ??= []).push(this.#stage.slice(0, this.#staged));
    this.#staged = 0;
  }

  /** The stage, with room for `n` more bytes. */
  #room(n: number): Uint8Array {
    const need = this.#staged + n;
    if (need <= this.#stage.length) return this.#stage;
    const b = new Uint8Array(Math.max(need, this.#stage.length * 2));
    b.set(this.#stage.subarray(0, this.#staged));
    this.#stage = b;
    return b;
  }
}
