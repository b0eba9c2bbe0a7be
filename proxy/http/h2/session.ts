/**
 * One HTTP/2 connection (RFC 9113), for either role, over an already-open socket (plain TCP or
 * mesh TLS). weft frames HTTP/2 itself instead of using node:http2: in Deno 2.9.6 that module
 * costs ~0.3 ms of CPU per request per side and aborts the process on some GOAWAY sequences. This
 * file owns framing, SETTINGS, PING, GOAWAY, flow control and the table of streams; one stream's
 * receive queue and state are in stream.ts. HTTP semantics (pseudo-headers, validation, bodies as
 * `Body`) live in server.ts / client.ts.
 *
 * Writes are queued and sent as one `socket.write` per event-loop turn, so a response's HEADERS,
 * DATA and trailers go out in one TLS record and one syscall. Received DATA is handed out as
 * views of the socket's chunks (no copy). Flow control: a stream's receive window is returned as
 * its reader consumes bytes (a slow reader holds its sender back); the connection window is
 * returned on receipt, since the stream windows already bound what one connection can buffer.
 */
import type { Duplex } from "node:stream";
import { setImmediate } from "node:timers";
import type { Log } from "../../core/log.ts";
import {
  DEFAULT_MAX_FRAME_SIZE,
  DEFAULT_WINDOW,
  ErrorCode,
  errorCodeName,
  Flag,
  FRAME_HEADER_SIZE,
  FrameType,
  goawayFrame,
  MAX_WINDOW,
  pingFrame,
  PREFACE,
  read32,
  rstStreamFrame,
  Setting,
  SETTINGS_ACK,
  settingsFrame,
  windowUpdateFrame,
} from "./frame.ts";
import { FrameOut } from "./frame_out.ts";
import { HeaderListTooLarge, HpackDecoder, HpackEncoder, HpackError } from "./hpack.ts";
import { failureError, H2Stream, type StreamFailure, type Waiter } from "./stream.ts";
import { StreamTable } from "./stream_table.ts";

export interface SessionOptions {
  role: "client" | "server";
  /** Streams the peer may open at once (advertised; enforced with REFUSED_STREAM). */
  maxConcurrentStreams: number;
  /** Our per-stream receive window (SETTINGS_INITIAL_WINDOW_SIZE). */
  initialWindowSize: number;
  /** Our connection receive window; the first WINDOW_UPDATE raises it from 65,535. */
  connectionWindow: number;
  /** Largest field list we accept (advertised SETTINGS_MAX_HEADER_LIST_SIZE). */
  maxHeaderListSize: number;
  /** Most fields in one block. */
  maxHeaderCount: number;
  /**
   * Bytes queued on the socket above which DATA waits for 'drain' and reading pauses. TLS sockets
   * too: their `writableLength` is honest; a TLS socket must read through proxy/transport/tls_flow.ts
   * so that pausing it really stops reading the network.
   */
  writeHighWater?: number;
  /** Server: the preface and first SETTINGS must arrive within this many ms. Default 10 s; 0 = off. */
  prefaceTimeoutMs?: number;
  /** A field block (HEADERS + CONTINUATION) must be complete within this many ms. Default 10 s; 0 = off. */
  headerTimeoutMs?: number;
  /** Server: close a connection without open streams for this many ms. Default 10 min; 0 = off. */
  idleTimeoutMs?: number;
  log?: Log;
  /** Server: a new stream's first field block (not yet validated as a request). */
  onStream?: (stream: H2Stream, fields: string[], endStream: boolean) => void;
  /** Server: a new stream whose first block exceeded a limit (the session stays in sync). */
  onStreamTooLarge?: (stream: H2Stream, e: HeaderListTooLarge, endStream: boolean) => void;
  /** The peer's first SETTINGS arrived. */
  onRemoteSettings?: () => void;
  onGoaway?: (code: number, lastStreamId: number, debug: string) => void;
}

const EMPTY = new Uint8Array(0);
const KEEPALIVE_PING = new Uint8Array(8);
const HIGH_WATER = 256 * 1024;
/**
 * Resets per second (the peer's RST_STREAMs on a server, plus streams we reset because the peer
 * broke a rule) before the connection is closed: "rapid reset" (CVE-2023-44487), "MadeYouReset"
 * (CVE-2025-8671). See `#countReset`.
 */
const RESET_LIMIT = 1000;
/** Streams we may reset over a connection's life because the peer broke a rule (h2's default). */
const LOCAL_ERROR_RESET_LIMIT = 1024;
/** Control frames (PING/SETTINGS ACKs, RST_STREAMs) we may owe a peer that is not reading (nghttp2's figure). */
const MAX_OWED_CONTROL = 1000;
/** Frames per second that cost us work and carry nothing (PING, SETTINGS, PRIORITY, empty DATA). */
const CHAFF_LIMIT = 10_000;
/** Frames in one field block; with 16 KiB frames the byte limit is reached long before. */
const MAX_BLOCK_FRAMES = 128;
/** A field block (HEADERS + CONTINUATION) may not exceed this many bytes on the wire. */
const blockLimit = (listLimit: number) => Math.max(2 * listLimit, 64 * 1024);

interface Continuation {
  id: number;
  endStream: boolean;
  parts: Uint8Array[];
  size: number;
  frames: number;
}

export class H2Session {
  readonly socket: Duplex;
  readonly role: "client" | "server";
  readonly #o: SessionOptions;
  readonly #decoder: HpackDecoder;
  readonly #encoder = new HpackEncoder();
  readonly #streams = new StreamTable<H2Stream>();
  readonly #highWater: number;
  readonly streamCreditBatch: number;

  // Peer's settings.
  #peerInitialWindow = DEFAULT_WINDOW;
  #peerMaxFrame = DEFAULT_MAX_FRAME_SIZE;
  #peerMaxStreams = Infinity;
  #remoteSettingsSeen = false;

  #connSendWindow = DEFAULT_WINDOW;
  #connRecvWindow = DEFAULT_WINDOW;
  #connUnacked = 0;
  #connWaiters: H2Stream[] = [];
  #drainWaiters: Waiter[] = [];

  /** Client: next stream id; server: highest id the peer opened. */
  #nextId = 1;
  #lastPeerId = 0;
  /** Streams we opened (client) or accepted (server) and that are not closed. */
  #active = 0;
  #slotWaiters: Waiter[] = [];

  #prefaceLeft: number;
  #pending: Uint8Array | undefined;
  #continuation: Continuation | undefined;
  readonly #out = new FrameOut();
  #flushQueued = false;

  #goawaySent = false;
  #goawayReceived = false;
  #peerLastStreamId = 2 ** 31 - 1;
  #closeWhenIdle = false;
  #dead = false;
  #resets = 0;
  #resetsSince = 0;
  #localErrorResets = 0;
  #chaff = 0;
  #chaffSince = 0;
  #pingWaiters: (() => void)[] = [];
  #ending = false;

  // Write-side backpressure: see `#backUp`.
  #backedUp = false;
  #owed = 0;

  // One lazily armed timer for the preface, field-block and idle deadlines.
  #timer: ReturnType<typeof setTimeout> | undefined;
  #timerAt = Infinity;
  #prefaceDeadline = Infinity;
  #blockDeadline = Infinity;
  #idleSince = 0;
  #deadReason = "connection closed";
  readonly #closed = Promise.withResolvers<void>();

  constructor(socket: Duplex, o: SessionOptions) {
    this.socket = socket;
    this.role = o.role;
    this.#o = o;
    this.#highWater = o.writeHighWater ?? HIGH_WATER;
    this.streamCreditBatch = Math.max(1, Math.floor(o.initialWindowSize / 4));
    this.#decoder = new HpackDecoder({ maxListSize: o.maxHeaderListSize, maxFieldCount: o.maxHeaderCount });
    this.#prefaceLeft = o.role === "server" ? PREFACE.length : 0;
    (socket as { setNoDelay?: (b: boolean) => void }).setNoDelay?.(true);
    if (o.role === "client") this.queueFrame(PREFACE);
    const settings: [number, number][] = [
      [Setting.ENABLE_PUSH, 0],
      [Setting.INITIAL_WINDOW_SIZE, o.initialWindowSize],
      [Setting.MAX_HEADER_LIST_SIZE, o.maxHeaderListSize],
    ];
    if (o.role === "server") settings.push([Setting.MAX_CONCURRENT_STREAMS, o.maxConcurrentStreams]);
    this.queueFrame(settingsFrame(settings));
    if (o.connectionWindow > DEFAULT_WINDOW) {
      this.queueFrame(windowUpdateFrame(0, o.connectionWindow - DEFAULT_WINDOW));
      this.#connRecvWindow = o.connectionWindow;
    }
    socket.on("data", this.#onData);
    socket.on("drain", this.#onDrain);
    socket.on("error", (e: Error) => this.#lost(`connection error: ${e.message}`));
    socket.on("close", () => this.#lost("connection closed"));
    socket.on("end", () => {
      // The peer will send nothing more; streams still waiting on it cannot finish.
      this.#lost("connection closed by peer");
    });
    // A socket that was peeked at may have been paused: 'data' alone does not restart it.
    socket.resume();
    if (o.role === "server") {
      const now = performance.now();
      const preface = o.prefaceTimeoutMs ?? 10_000;
      if (preface > 0) {
        this.#prefaceDeadline = now + preface;
        this.#arm(this.#prefaceDeadline);
      }
      this.#idleSince = now;
      const idle = this.#idleMs;
      if (idle > 0) this.#arm(now + idle);
    }
  }

  get #idleMs(): number {
    return this.role === "server" ? this.#o.idleTimeoutMs ?? 600_000 : 0;
  }

  // ---- deadlines ------------------------------------------------------------------------------

  /** Makes sure the timer fires no later than `at`; a timer already due earlier is kept. */
  #arm(at: number): void {
    if (this.#dead || at === Infinity) return;
    if (this.#timer !== undefined) {
      if (this.#timerAt <= at) return;
      clearTimeout(this.#timer);
    }
    this.#timerAt = at;
    this.#timer = setTimeout(this.#onTimer, Math.max(0, at - performance.now()));
  }

  #onTimer = (): void => {
    this.#timer = undefined;
    this.#timerAt = Infinity;
    if (this.#dead) return;
    const now = performance.now();
    if (!this.#remoteSettingsSeen && now >= this.#prefaceDeadline) {
      return this.#fatal(
        ErrorCode.PROTOCOL_ERROR,
        `no preface and SETTINGS within ${this.#o.prefaceTimeoutMs ?? 10_000} ms`,
      );
    }
    if (this.#continuation !== undefined && now >= this.#blockDeadline) {
      return this.#fatal(
        ErrorCode.ENHANCE_YOUR_CALM,
        `field block not completed within ${this.#o.headerTimeoutMs ?? 10_000} ms`,
      );
    }
    const idle = this.#idleMs;
    if (idle > 0 && this.#active === 0 && now - this.#idleSince >= idle) {
      // No GOAWAY (see server.ts close): a FIN once what is queued is out.
      this.#o.log?.("debug", `h2 ${this.role}: closing a connection idle for ${idle} ms`);
      this.closeWhenIdle();
      return;
    }
    if (!this.#remoteSettingsSeen) this.#arm(this.#prefaceDeadline);
    if (this.#continuation !== undefined) this.#arm(this.#blockDeadline);
    if (idle > 0 && this.#active === 0) this.#arm(this.#idleSince + idle);
  };

  /** Resolves when the socket has closed. */
  get closed(): Promise<void> {
    return this.#closed.promise;
  }

  get destroyed(): boolean {
    return this.#dead;
  }

  get activeStreams(): number {
    return this.#active;
  }

  get remoteSettingsSeen(): boolean {
    return this.#remoteSettingsSeen;
  }

  /** False once either side sent GOAWAY, the ids ran out, or the connection is gone. */
  get acceptingStreams(): boolean {
    return !this.#dead && !this.#goawaySent && !this.#goawayReceived && !this.#closeWhenIdle &&
      this.#nextId < 2 ** 31 - 1;
  }

  /** Client: a slot under the peer's MAX_CONCURRENT_STREAMS is free. */
  get hasSlot(): boolean {
    return this.#active < this.#peerMaxStreams;
  }

  /** Client: waits until `hasSlot` (or the session can no longer take streams). */
  waitForSlot(signal: AbortSignal): Promise<void> {
    if (this.hasSlot || !this.acceptingStreams) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const w: Waiter = {
        resolve: () => {
          signal.removeEventListener("abort", onAbort);
          resolve();
        },
        reject,
      };
      const onAbort = () => {
        const i = this.#slotWaiters.indexOf(w);
        if (i >= 0) this.#slotWaiters.splice(i, 1);
        reject(signal.reason);
      };
      signal.addEventListener("abort", onAbort, { once: true });
      this.#slotWaiters.push(w);
    });
  }

  /** Client: opens a stream and sends its request head in the same turn (ids go out in order). */
  request(fields: string[], endStream: boolean): H2Stream {
    if (!this.acceptingStreams) throw new Error(this.#dead ? this.#deadReason : "connection is closing");
    const id = this.#nextId;
    this.#nextId += 2;
    const s = new H2Stream(this, id, this.#peerInitialWindow, this.#o.initialWindowSize);
    this.#streams.set(id, s);
    this.#active++;
    this.sendHeaders(s, fields, endStream);
    return s;
  }

  /**
   * Client keepalive: sends a PING; resolves when an ACK arrives (never, when the peer is gone: the
   * caller bounds the wait and destroys the session).
   */
  ping(): Promise<void> {
    const p = Promise.withResolvers<void>();
    this.#pingWaiters.push(p.resolve);
    this.queueFrame(pingFrame(KEEPALIVE_PING, false));
    return p.promise;
  }

  /** Sends GOAWAY: no stream above the last one we saw will be processed. */
  goaway(code: number = ErrorCode.NO_ERROR, debug = ""): void {
    if (this.#dead || this.#goawaySent) return;
    this.#goawaySent = true;
    this.queueFrame(goawayFrame(this.role === "server" ? this.#lastPeerId : 0, code, debug));
  }

  /** No new streams; the socket closes when the last open stream finishes. */
  closeWhenIdle(): void {
    this.#closeWhenIdle = true;
    this.#wakeSlots();
    if (this.#active === 0) this.#end();
  }

  /** Closes the socket now; open streams fail. */
  destroy(reason = "connection closed"): void {
    this.#lost(reason);
    (this.socket as { destroy(): void }).destroy();
  }

  // ---- sending -------------------------------------------------------------------------------

  queueFrame(f: Uint8Array): void {
    if (this.#dead) return;
    this.#out.frame(f);
    this.#queued();
  }

  /** A stream's WINDOW_UPDATE, written into the queue without a frame object. */
  queueWindowUpdate(streamId: number, increment: number): void {
    if (this.#dead) return;
    this.#out.windowUpdate(streamId, increment);
    this.#queued();
  }

  /** Something was queued: make sure a flush follows. */
  #queued(): void {
    if (!this.#flushQueued) {
      this.#flushQueued = true;
      // After this turn's microtasks and I/O callbacks: everything the current socket read
      // produced (responses on several streams, WINDOW_UPDATEs) leaves in one write.
      setImmediate(this.#flush);
    }
  }

  #flush = (): void => {
    this.#flushQueued = false;
    if (this.#dead) return;
    const buf = this.#out.take();
    if (buf === undefined) return;
    this.socket.write(buf);
    if (!this.#backedUp && this.#backedUpNow()) this.#backUp();
  };

  /** The socket holds more than we allow queued. */
  #backedUpNow(): boolean {
    return ((this.socket as { writableLength?: number }).writableLength ?? 0) > this.#highWater;
  }

  /**
   * A peer that sends but does not read must not make us buffer without bound: reading stops until
   * the write side drains, DATA waits, and the control frames already read but still owed are
   * capped (`#owe`).
   */
  #backUp(): void {
    this.#backedUp = true;
    (this.socket as { pause?: () => void }).pause?.();
  }

  /** True when the socket holds more than the high-water mark; 'drain' will follow (write returned false). */
  #congested(): boolean {
    if (this.#out.bytes >= 64 * 1024) this.#flush();
    return this.#backedUpNow();
  }

  #onDrain = (): void => {
    if (this.#backedUp && !this.#dead && !this.#backedUpNow()) {
      this.#backedUp = false;
      this.#owed = 0;
      this.socket.resume();
    }
    const ws = this.#drainWaiters;
    this.#drainWaiters = [];
    for (const w of ws) w.resolve();
  };

  /** Queues a control frame the peer made us owe; too many while it does not read closes the connection. */
  #owe(f: Uint8Array): void {
    if (this.#backedUp && ++this.#owed > MAX_OWED_CONTROL) {
      return this.#fatal(
        ErrorCode.ENHANCE_YOUR_CALM,
        `more than ${MAX_OWED_CONTROL} control frames owed to a peer that does not read`,
      );
    }
    this.queueFrame(f);
  }

  /** Counts a frame that costs work and carries nothing; false once the connection was closed for it. */
  #countChaff(what: string): boolean {
    const now = performance.now();
    if (now - this.#chaffSince > 1000) {
      this.#chaffSince = now;
      this.#chaff = 0;
    }
    if (++this.#chaff > CHAFF_LIMIT) {
      this.#fatal(
        ErrorCode.ENHANCE_YOUR_CALM,
        `more than ${CHAFF_LIMIT} ${what} and similar frames in a second`,
      );
      return false;
    }
    return true;
  }

  /** Counts a reset toward `RESET_LIMIT` per second; false once the connection was closed for it. */
  #countReset(local: boolean): boolean {
    const now = performance.now();
    if (now - this.#resetsSince > 1000) {
      this.#resetsSince = now;
      this.#resets = 0;
    }
    if (local && ++this.#localErrorResets > LOCAL_ERROR_RESET_LIMIT) {
      this.#fatal(
        ErrorCode.ENHANCE_YOUR_CALM,
        `more than ${LOCAL_ERROR_RESET_LIMIT} streams reset for protocol errors`,
      );
      return false;
    }
    if (++this.#resets > RESET_LIMIT) {
      this.#fatal(ErrorCode.ENHANCE_YOUR_CALM, `more than ${RESET_LIMIT} streams reset in a second`);
      return false;
    }
    return true;
  }

  sendHeaders(s: H2Stream, fields: string[], endStream: boolean): void {
    if (s.closed || s.localEnded || this.#dead) return;
    const len = this.#encoder.encodeBlock(fields);
    const block = this.#encoder.block;
    const max = this.#peerMaxFrame;
    let flags = endStream ? Flag.END_STREAM : 0;
    let type: number = FrameType.HEADERS;
    // One HEADERS frame, or HEADERS + CONTINUATIONs of at most the peer's frame size each.
    for (let at = 0; at < len || at === 0; at += max) {
      const end = Math.min(at + max, len);
      this.#out.header(end - at, type, flags | (end === len ? Flag.END_HEADERS : 0), s.id);
      this.#out.copy(block, at, end);
      type = FrameType.CONTINUATION;
      flags = 0;
    }
    this.#queued();
    if (endStream) {
      s.localEnded = true;
      this.maybeClose(s);
    }
  }

  /** See `H2Stream.trySendData`: all of `data` within the windows, or nothing. */
  trySendData(s: H2Stream, data: Uint8Array, endStream: boolean): boolean {
    const len = data.length;
    if (s.closed || s.localEnded || this.#dead) return false;
    if (len > s.sendWindow || len > this.#connSendWindow || this.#congested()) return false;
    const max = this.#peerMaxFrame;
    let off = 0;
    do {
      const n = Math.min(len - off, max);
      const end = endStream && off + n === len;
      this.#out.header(n, FrameType.DATA, end ? Flag.END_STREAM : 0, s.id);
      this.#out.payload(data, off, off + n);
      off += n;
    } while (off < len);
    s.sendWindow -= len;
    this.#connSendWindow -= len;
    this.#queued();
    if (endStream) {
      s.localEnded = true;
      this.maybeClose(s);
    }
    return true;
  }

  async sendData(s: H2Stream, data: Uint8Array, endStream: boolean): Promise<void> {
    let off = 0;
    for (;;) {
      if (s.closed) throw failureError(s.failure ?? { kind: "connection", message: "stream closed" }, s.id);
      if (s.localEnded) throw new Error(`stream ${s.id}: DATA after END_STREAM`);
      const left = data.length - off;
      if (left === 0) {
        if (endStream) {
          this.#out.header(0, FrameType.DATA, Flag.END_STREAM, s.id);
          this.#queued();
          s.localEnded = true;
          this.maybeClose(s);
        }
        return;
      }
      if (this.#congested()) {
        await new Promise<void>((resolve, reject) => this.#drainWaiters.push({ resolve, reject }));
        continue;
      }
      const n = Math.min(left, s.sendWindow, this.#connSendWindow, this.#peerMaxFrame);
      if (n <= 0) {
        await new Promise<void>((resolve, reject) => {
          s.sendWaiter = { resolve, reject };
          if (s.sendWindow > 0) this.#connWaiters.push(s);
        });
        continue;
      }
      const last = n === left;
      const end = last && endStream;
      this.#out.header(n, FrameType.DATA, end ? Flag.END_STREAM : 0, s.id);
      this.#out.payload(data, off, off + n);
      this.#queued();
      s.sendWindow -= n;
      this.#connSendWindow -= n;
      off += n;
      if (last) {
        if (end) {
          s.localEnded = true;
          this.maybeClose(s);
        }
        return;
      }
    }
  }

  resetStream(s: H2Stream, code: number): void {
    if (s.closed) return;
    const peerError = PEER_ERROR_CODES.has(code);
    if (peerError) this.#owe(rstStreamFrame(s.id, code));
    else this.queueFrame(rstStreamFrame(s.id, code));
    this.#close(s, { kind: "reset", code, local: true });
    // A reset the peer provoked costs us as much as one it sent ("MadeYouReset").
    if (peerError) this.#countReset(true);
  }

  // ---- stream bookkeeping ---------------------------------------------------------------------

  maybeClose(s: H2Stream): void {
    if (s.closed || !s.localEnded || !s.remoteEnded) return;
    this.#close(s, undefined);
  }

  #close(s: H2Stream, f: StreamFailure | undefined): void {
    if (!this.#streams.delete(s.id)) {
      if (f) s.fail(f);
      else s.finish();
      return;
    }
    if (--this.#active === 0) {
      const idle = this.#idleMs;
      if (idle > 0) {
        this.#idleSince = performance.now();
        this.#arm(this.#idleSince + idle);
      }
    }
    if (f) s.fail(f);
    else s.finish();
    this.#wakeSlots();
    if (this.#active === 0 && (this.#closeWhenIdle || this.#goawayReceived || this.#goawaySent)) this.#end();
  }

  #wakeSlots(): void {
    if (!this.acceptingStreams) {
      for (const w of this.#slotWaiters.splice(0)) w.resolve();
      return;
    }
    // As many as there are free slots: each woken caller opens its stream in its next turn.
    let free = this.#peerMaxStreams - this.#active;
    while (free-- > 0 && this.#slotWaiters.length) this.#slotWaiters.shift()!.resolve();
  }

  /** Flushes what is queued, then half-closes; the socket is destroyed if the peer lingers. */
  #end(): void {
    if (this.#ending) return;
    this.#ending = true;
    this.#flush();
    (this.socket as { end(): void }).end();
    const t = setTimeout(() => this.destroy(), 5000);
    Deno.unrefTimer(t);
  }

  #lost(reason: string, destroySocket = true): void {
    if (this.#dead) return;
    this.#dead = true;
    this.#deadReason = reason;
    this.#out.clear();
    const streams = this.#streams.values();
    this.#streams.clear();
    this.#active = 0;
    for (const s of streams) s.fail({ kind: "connection", message: reason });
    const e = new Error(reason);
    for (const w of this.#drainWaiters.splice(0)) w.reject(e);
    for (const w of this.#slotWaiters.splice(0)) w.resolve();
    this.#connWaiters = [];
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    if (destroySocket) (this.socket as { destroy(): void }).destroy();
    this.#closed.resolve();
  }

  /** A connection error: GOAWAY with the code, then the connection closes. */
  #fatal(code: number, message: string): void {
    if (this.#dead) return;
    this.#o.log?.("debug", `h2 ${this.role}: connection error ${errorCodeName(code)}: ${message}`);
    this.queueFrame(goawayFrame(this.#lastPeerId, code, message.slice(0, 200)));
    this.#goawaySent = true;
    this.#end();
    // Streams fail now; the socket closes once the GOAWAY is out (or after the linger timer).
    this.#lost(`connection error ${errorCodeName(code)}: ${message}`, false);
  }

  // ---- receiving ------------------------------------------------------------------------------

  #onData = (chunk: Uint8Array): void => {
    if (this.#dead) return;
    let buf = chunk;
    if (this.#pending !== undefined) {
      const p = this.#pending;
      buf = new Uint8Array(p.length + chunk.length);
      buf.set(p);
      buf.set(chunk, p.length);
      this.#pending = undefined;
    }
    let at = 0;
    if (this.#prefaceLeft > 0) {
      const start = PREFACE.length - this.#prefaceLeft;
      const n = Math.min(this.#prefaceLeft, buf.length);
      for (let i = 0; i < n; i++) {
        if (buf[i] !== PREFACE[start + i]) {
          this.#fatal(ErrorCode.PROTOCOL_ERROR, "the client did not start with the HTTP/2 preface");
          return;
        }
      }
      this.#prefaceLeft -= n;
      at = n;
    }
    const limit = DEFAULT_MAX_FRAME_SIZE;
    while (buf.length - at >= FRAME_HEADER_SIZE) {
      const len = (buf[at] << 16) | (buf[at + 1] << 8) | buf[at + 2];
      if (len > limit) {
        this.#fatal(
          ErrorCode.FRAME_SIZE_ERROR,
          `frame of ${len} bytes exceeds SETTINGS_MAX_FRAME_SIZE ${limit}`,
        );
        return;
      }
      if (buf.length - at - FRAME_HEADER_SIZE < len) break;
      const type = buf[at + 3];
      const flags = buf[at + 4];
      const id = read32(buf, at + 5) & 0x7fffffff;
      const start = at + FRAME_HEADER_SIZE;
      at = start + len;
      if (
        type === FrameType.HEADERS && (flags & (Flag.PADDED | Flag.PRIORITY)) === 0 &&
        (flags & Flag.END_HEADERS) !== 0 && id !== 0 && this.#continuation === undefined &&
        this.#remoteSettingsSeen
      ) {
        // The usual field block, one frame that passes #frame's and #headers' checks: decoded
        // where it lies, without views of the payload and the fragment.
        this.#block(id, (flags & Flag.END_STREAM) !== 0, buf, start, at);
      } else {
        this.#frame(type, flags, id, buf.subarray(start, at));
      }
      if (this.#dead) return;
    }
    if (at < buf.length) this.#pending = buf.subarray(at);
  };

  #frame(type: number, flags: number, id: number, p: Uint8Array): void {
    if (this.#continuation !== undefined && type !== FrameType.CONTINUATION) {
      this.#fatal(
        ErrorCode.PROTOCOL_ERROR,
        `frame type ${type} inside a field block (CONTINUATION expected)`,
      );
      return;
    }
    if (!this.#remoteSettingsSeen && type !== FrameType.SETTINGS) {
      this.#fatal(ErrorCode.PROTOCOL_ERROR, "the first frame must be SETTINGS");
      return;
    }
    switch (type) {
      case FrameType.DATA:
        return this.#data(flags, id, p);
      case FrameType.HEADERS:
        return this.#headers(flags, id, p);
      case FrameType.PRIORITY:
        if (id === 0) return this.#fatal(ErrorCode.PROTOCOL_ERROR, "PRIORITY on stream 0");
        if (!this.#countChaff("PRIORITY")) return;
        if (p.length !== 5) {
          const s = this.#streams.get(id);
          if (s) this.resetStream(s, ErrorCode.FRAME_SIZE_ERROR);
        }
        return;
      case FrameType.RST_STREAM:
        return this.#rst(id, p);
      case FrameType.SETTINGS:
        return this.#settings(flags, id, p);
      case FrameType.PUSH_PROMISE:
        return this.#fatal(ErrorCode.PROTOCOL_ERROR, "PUSH_PROMISE, but push is disabled");
      case FrameType.PING:
        if (id !== 0) return this.#fatal(ErrorCode.PROTOCOL_ERROR, "PING on a stream");
        if (p.length !== 8) return this.#fatal(ErrorCode.FRAME_SIZE_ERROR, `PING of ${p.length} bytes`);
        if (flags & Flag.ACK) {
          this.#pingWaiters.shift()?.(); // keepalive (`ping`); other ACKs are ignored
          return;
        }
        if (!this.#countChaff("PING")) return;
        this.#owe(pingFrame(p, true));
        return;
      case FrameType.GOAWAY:
        return this.#goaway(id, p);
      case FrameType.WINDOW_UPDATE:
        return this.#windowUpdate(id, p);
      case FrameType.CONTINUATION:
        return this.#continue(flags, id, p);
      default:
        return; // unknown frame types are ignored (RFC 9113 §4.1)
    }
  }

  /** Whether `id` is a stream that never existed (idle) from our point of view. */
  #idle(id: number): boolean {
    const peerOpened = (id & 1) === (this.role === "server" ? 1 : 0);
    return peerOpened ? id > this.#lastPeerId : id >= this.#nextId;
  }

  #data(flags: number, id: number, p: Uint8Array): void {
    if (id === 0) return this.#fatal(ErrorCode.PROTOCOL_ERROR, "DATA on stream 0");
    let data = p;
    if (flags & Flag.PADDED) {
      if (p.length === 0 || p[0] >= p.length) {
        return this.#fatal(ErrorCode.PROTOCOL_ERROR, "DATA padding too long");
      }
      data = p.subarray(1, p.length - p[0]);
    }
    const len = p.length;
    if (len === 0 && (flags & Flag.END_STREAM) === 0 && !this.#countChaff("empty DATA")) return;
    if (len > this.#connRecvWindow) {
      return this.#fatal(ErrorCode.FLOW_CONTROL_ERROR, "DATA beyond the connection window");
    }
    this.#connRecvWindow -= len;
    this.#connUnacked += len;
    if (this.#connUnacked >= this.#o.connectionWindow / 2) {
      this.queueWindowUpdate(0, this.#connUnacked);
      this.#connRecvWindow += this.#connUnacked;
      this.#connUnacked = 0;
    }
    const s = this.#streams.get(id);
    if (s === undefined) {
      if (this.#idle(id)) return this.#fatal(ErrorCode.PROTOCOL_ERROR, `DATA on idle stream ${id}`);
      return; // a stream we closed or reset: what was in flight is dropped
    }
    if (s.remoteEnded) {
      this.resetStream(s, ErrorCode.STREAM_CLOSED);
      return;
    }
    if (!s.headReceived) {
      this.resetStream(s, ErrorCode.PROTOCOL_ERROR);
      return;
    }
    if (len > s.recvWindow) {
      this.resetStream(s, ErrorCode.FLOW_CONTROL_ERROR);
      return;
    }
    s.recvWindow -= len;
    if (len !== data.length) s.recvWindow += len - data.length; // padding is returned at once
    s.deliver(data, (flags & Flag.END_STREAM) !== 0);
  }

  #headers(flags: number, id: number, p: Uint8Array): void {
    if (id === 0) return this.#fatal(ErrorCode.PROTOCOL_ERROR, "HEADERS on stream 0");
    let start = 0;
    let end = p.length;
    if (flags & Flag.PADDED) {
      if (p.length === 0) return this.#fatal(ErrorCode.PROTOCOL_ERROR, "HEADERS padding missing");
      start = 1;
      end -= p[0];
    }
    if (flags & Flag.PRIORITY) start += 5;
    if (start > end) return this.#fatal(ErrorCode.PROTOCOL_ERROR, "HEADERS padding or priority too long");
    const fragment = p.subarray(start, end);
    const endStream = (flags & Flag.END_STREAM) !== 0;
    if (flags & Flag.END_HEADERS) {
      this.#block(id, endStream, fragment, 0, fragment.length);
      return;
    }
    this.#continuation = {
      id,
      endStream,
      parts: fragment.length ? [fragment.slice()] : [],
      size: fragment.length,
      frames: 1,
    };
    const ms = this.#o.headerTimeoutMs ?? 10_000;
    if (ms > 0) {
      this.#blockDeadline = performance.now() + ms;
      this.#arm(this.#blockDeadline);
    }
  }

  #continue(flags: number, id: number, p: Uint8Array): void {
    const c = this.#continuation;
    if (c === undefined || c.id !== id) {
      return this.#fatal(ErrorCode.PROTOCOL_ERROR, `CONTINUATION on stream ${id} without a field block`);
    }
    c.size += p.length;
    if (c.size > blockLimit(this.#o.maxHeaderListSize)) {
      return this.#fatal(
        ErrorCode.ENHANCE_YOUR_CALM,
        `field block over ${blockLimit(this.#o.maxHeaderListSize)} bytes`,
      );
    }
    // Zero-length CONTINUATIONs add no bytes but still cost a frame each (CVE-2024-27316 class).
    if (++c.frames > MAX_BLOCK_FRAMES) {
      return this.#fatal(ErrorCode.ENHANCE_YOUR_CALM, `field block of more than ${MAX_BLOCK_FRAMES} frames`);
    }
    if (p.length) c.parts.push(p.slice());
    if ((flags & Flag.END_HEADERS) === 0) return;
    this.#continuation = undefined;
    const block = new Uint8Array(c.size);
    let at = 0;
    for (const part of c.parts) {
      block.set(part, at);
      at += part.length;
    }
    this.#block(id, c.endStream, block, 0, block.length);
  }

  #block(id: number, endStream: boolean, block: Uint8Array, start: number, end: number): void {
    let fields: string[] | undefined;
    let tooLarge: HeaderListTooLarge | undefined;
    try {
      fields = this.#decoder.decode(block, start, end);
    } catch (e) {
      if (e instanceof HeaderListTooLarge) tooLarge = e;
      else if (e instanceof HpackError) return this.#fatal(ErrorCode.COMPRESSION_ERROR, e.message);
      else throw e;
    }
    const s = this.#streams.get(id);
    if (s !== undefined) {
      if (tooLarge) {
        this.resetStream(s, ErrorCode.ENHANCE_YOUR_CALM);
        return;
      }
      if (s.remoteEnded) {
        this.resetStream(s, ErrorCode.STREAM_CLOSED);
        return;
      }
      if (!s.headReceived) {
        // Client side: 1xx heads come first, then the response head.
        const owner = s.owner;
        if (owner?.streamHead === undefined) {
          this.resetStream(s, ErrorCode.PROTOCOL_ERROR);
          return;
        }
        owner.streamHead(fields!, endStream);
        if (endStream && !s.closed) s.deliver(EMPTY, true);
        return;
      }
      if (!endStream) {
        this.resetStream(s, ErrorCode.PROTOCOL_ERROR); // trailers must end the stream
        return;
      }
      s.deliverTrailers(fields!);
      return;
    }
    if (this.role === "client" || (id & 1) === 0) {
      if (!this.#idle(id) && (id & 1) === (this.role === "client" ? 1 : 0)) return; // closed by us
      return this.#fatal(ErrorCode.PROTOCOL_ERROR, `HEADERS on stream ${id}, which the peer may not open`);
    }
    if (id <= this.#lastPeerId) return; // a stream already closed (e.g. trailers after our reset)
    this.#lastPeerId = id;
    if (this.#goawaySent || this.#closeWhenIdle) {
      this.#owe(rstStreamFrame(id, ErrorCode.REFUSED_STREAM));
      return;
    }
    if (this.#active >= this.#o.maxConcurrentStreams) {
      // Over the limit we advertised: a refusal we owe, and counted like a reset we were made to send.
      this.#owe(rstStreamFrame(id, ErrorCode.REFUSED_STREAM));
      this.#countReset(false);
      return;
    }
    const ns = new H2Stream(this, id, this.#peerInitialWindow, this.#o.initialWindowSize);
    ns.headReceived = true;
    if (endStream) ns.remoteEnded = true;
    this.#streams.set(id, ns);
    this.#active++;
    if (tooLarge) this.#o.onStreamTooLarge?.(ns, tooLarge, endStream);
    else this.#o.onStream?.(ns, fields!, endStream);
  }

  #rst(id: number, p: Uint8Array): void {
    if (id === 0) return this.#fatal(ErrorCode.PROTOCOL_ERROR, "RST_STREAM on stream 0");
    if (p.length !== 4) return this.#fatal(ErrorCode.FRAME_SIZE_ERROR, `RST_STREAM of ${p.length} bytes`);
    const s = this.#streams.get(id);
    if (s === undefined) {
      if (this.#idle(id)) this.#fatal(ErrorCode.PROTOCOL_ERROR, `RST_STREAM on idle stream ${id}`);
      return;
    }
    // "Rapid reset" (CVE-2023-44487): opening and cancelling streams costs the peer nothing and
    // us a request each, so a peer that cancels more than RESET_LIMIT per second is cut off.
    if (this.role === "server" && !this.#countReset(false)) return;
    const code = read32(p, 0);
    this.#close(
      s,
      code === ErrorCode.REFUSED_STREAM ? { kind: "refused", code } : { kind: "reset", code, local: false },
    );
  }

  #settings(flags: number, id: number, p: Uint8Array): void {
    if (id !== 0) return this.#fatal(ErrorCode.PROTOCOL_ERROR, "SETTINGS on a stream");
    if (flags & Flag.ACK) {
      if (p.length !== 0) this.#fatal(ErrorCode.FRAME_SIZE_ERROR, "SETTINGS ACK with a payload");
      return;
    }
    if (p.length % 6 !== 0) return this.#fatal(ErrorCode.FRAME_SIZE_ERROR, `SETTINGS of ${p.length} bytes`);
    if (this.#remoteSettingsSeen && !this.#countChaff("SETTINGS")) return;
    let initialWindow: number | undefined;
    for (let at = 0; at < p.length; at += 6) {
      const key = (p[at] << 8) | p[at + 1];
      const v = read32(p, at + 2);
      switch (key) {
        case Setting.HEADER_TABLE_SIZE:
          this.#encoder.setMaxTableSize(Math.min(v, 4096));
          break;
        case Setting.ENABLE_PUSH:
          if (v > 1) return this.#fatal(ErrorCode.PROTOCOL_ERROR, `SETTINGS_ENABLE_PUSH ${v}`);
          break;
        case Setting.MAX_CONCURRENT_STREAMS:
          this.#peerMaxStreams = v;
          break;
        case Setting.INITIAL_WINDOW_SIZE:
          if (v > MAX_WINDOW) {
            return this.#fatal(ErrorCode.FLOW_CONTROL_ERROR, `SETTINGS_INITIAL_WINDOW_SIZE ${v}`);
          }
          initialWindow = v; // applied once below: a frame repeating it must not cost a pass each
          break;
        case Setting.MAX_FRAME_SIZE:
          if (v < DEFAULT_MAX_FRAME_SIZE || v > 16_777_215) {
            return this.#fatal(ErrorCode.PROTOCOL_ERROR, `SETTINGS_MAX_FRAME_SIZE ${v}`);
          }
          this.#peerMaxFrame = v;
          break;
        default:
          break; // MAX_HEADER_LIST_SIZE is advisory; unknown settings are ignored
      }
    }
    if (initialWindow !== undefined && initialWindow !== this.#peerInitialWindow) {
      const delta = initialWindow - this.#peerInitialWindow;
      this.#peerInitialWindow = initialWindow;
      for (const s of this.#streams.values()) {
        s.sendWindow += delta;
        if (s.sendWindow > MAX_WINDOW) {
          return this.#fatal(ErrorCode.FLOW_CONTROL_ERROR, "stream window overflow after SETTINGS");
        }
        if (delta > 0) this.#wakeStream(s);
      }
    }
    this.#owe(SETTINGS_ACK);
    if (!this.#remoteSettingsSeen) {
      this.#remoteSettingsSeen = true;
      this.#wakeSlots();
      this.#o.onRemoteSettings?.();
    }
  }

  #goaway(id: number, p: Uint8Array): void {
    if (id !== 0) return this.#fatal(ErrorCode.PROTOCOL_ERROR, "GOAWAY on a stream");
    if (p.length < 8) return this.#fatal(ErrorCode.FRAME_SIZE_ERROR, `GOAWAY of ${p.length} bytes`);
    const last = read32(p, 0) & 0x7fffffff;
    const code = read32(p, 4);
    const debug = new TextDecoder().decode(p.subarray(8));
    this.#goawayReceived = true;
    this.#peerLastStreamId = Math.min(this.#peerLastStreamId, last);
    this.#o.onGoaway?.(code, last, debug);
    // Streams we opened above `last` were never processed: safe to retry elsewhere.
    for (const s of this.#streams.values()) {
      const ours = (s.id & 1) === (this.role === "client" ? 1 : 0);
      if (ours && s.id > this.#peerLastStreamId) this.#close(s, { kind: "refused", code });
    }
    this.#wakeSlots();
    if (code !== ErrorCode.NO_ERROR) {
      this.#o.log?.("debug", `h2 ${this.role}: peer sent GOAWAY ${errorCodeName(code)} ${debug}`);
    }
    if (this.#active === 0) this.#end();
  }

  /** Highest stream id the peer said it processed or may process (GOAWAY), else 2^31-1. */
  get peerLastStreamId(): number {
    return this.#peerLastStreamId;
  }

  #windowUpdate(id: number, p: Uint8Array): void {
    if (p.length !== 4) return this.#fatal(ErrorCode.FRAME_SIZE_ERROR, `WINDOW_UPDATE of ${p.length} bytes`);
    const inc = read32(p, 0) & 0x7fffffff;
    if (id === 0) {
      if (inc === 0) return this.#fatal(ErrorCode.PROTOCOL_ERROR, "WINDOW_UPDATE of 0");
      this.#connSendWindow += inc;
      if (this.#connSendWindow > MAX_WINDOW) {
        return this.#fatal(ErrorCode.FLOW_CONTROL_ERROR, "connection window overflow");
      }
      const ws = this.#connWaiters;
      this.#connWaiters = [];
      for (const s of ws) this.#wakeStream(s);
      return;
    }
    const s = this.#streams.get(id);
    if (s === undefined) {
      if (this.#idle(id)) this.#fatal(ErrorCode.PROTOCOL_ERROR, `WINDOW_UPDATE on idle stream ${id}`);
      return;
    }
    if (inc === 0) {
      this.resetStream(s, ErrorCode.PROTOCOL_ERROR);
      return;
    }
    s.sendWindow += inc;
    if (s.sendWindow > MAX_WINDOW) {
      this.resetStream(s, ErrorCode.FLOW_CONTROL_ERROR);
      return;
    }
    this.#wakeStream(s);
  }

  #wakeStream(s: H2Stream): void {
    const w = s.sendWaiter;
    if (w === undefined) return;
    s.sendWaiter = undefined;
    w.resolve();
  }
}

/** Codes we reset with because the peer broke a rule (counted toward the reset limits). */
const PEER_ERROR_CODES = new Set<number>([
  ErrorCode.PROTOCOL_ERROR,
  ErrorCode.FLOW_CONTROL_ERROR,
  ErrorCode.STREAM_CLOSED,
  ErrorCode.FRAME_SIZE_ERROR,
  ErrorCode.COMPRESSION_ERROR,
  ErrorCode.ENHANCE_YOUR_CALM,
]);
