/**
 * A small HTTP/2 client over one `node:net` connection, for the benchmark's gRPC load: cleartext
 * (prior knowledge), request = one HEADERS + one DATA frame, response = status, grpc-status and
 * end of stream. Deno 2.9.6's `node:http2` is not usable for this: its server aborts in nghttp2
 * when a client goes away, and its client adds milliseconds at p99 at 1,000 calls/s on loopback,
 * which would be the generator measuring itself.
 *
 * It implements what a peer may send: SETTINGS (acked), PING (answered), WINDOW_UPDATE (send
 * window), HEADERS/CONTINUATION (HPACK decoded with the proxy's decoder, dynamic table and
 * Huffman included, so the header state stays right whatever the proxy in between encodes), DATA (receive
 * window kept open), RST_STREAM and GOAWAY. Requests are encoded without indexing, so they
 * never touch the peer's decoder table.
 */
import * as net from "node:net";
import { Buffer } from "node:buffer";
import { HpackDecoder } from "../http/h2/hpack.ts";
import { STATIC_BY_NAME } from "../http/h2/hpack_table.ts";

const PREFACE = Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", "latin1");
const DATA = 0x0, HEADERS = 0x1, RST_STREAM = 0x3, SETTINGS = 0x4, PING = 0x6, GOAWAY = 0x7;
const WINDOW_UPDATE = 0x8, CONTINUATION = 0x9;
const END_STREAM = 0x1, ACK = 0x1, END_HEADERS = 0x4, PADDED = 0x8, PRIORITY = 0x20;
const MAX_WINDOW = 0x7fffffff;

// ---- HPACK (RFC 7541): the proxy's decoder and static table; requests are plain literals ----

/** Static-table index of `name` (first entry), or -1. */
function staticName(name: string): number {
  return STATIC_BY_NAME.get(name)?.index ?? -1;
}

/** Static-table index of exactly `name: value`, or -1. */
function staticExact(name: string, value: string): number {
  return STATIC_BY_NAME.get(name)?.values.get(value) ?? -1;
}

function hpackInt(out: number[], first: number, prefix: number, v: number): void {
  const mask = (1 << prefix) - 1;
  if (v < mask) {
    out.push(first | v);
    return;
  }
  out.push(first | mask);
  v -= mask;
  while (v >= 128) {
    out.push((v % 128) | 0x80);
    v = Math.floor(v / 128);
  }
  out.push(v);
}

/**
 * A header block with every field as a literal without indexing (static name index where the
 * table has the name; exact static matches as indexed fields), raw strings.
 */
export function encodeHeaders(fields: [string, string][]): Uint8Array {
  const out: number[] = [];
  for (const [name, value] of fields) {
    const exact = staticExact(name, value);
    if (exact > 0) {
      hpackInt(out, 0x80, 7, exact);
      continue;
    }
    const byName = staticName(name);
    hpackInt(out, 0x00, 4, Math.max(byName, 0));
    if (byName < 0) {
      hpackInt(out, 0x00, 7, name.length);
      for (const c of Buffer.from(name, "latin1")) out.push(c);
    }
    hpackInt(out, 0x00, 7, value.length);
    for (const c of Buffer.from(value, "latin1")) out.push(c);
  }
  return Uint8Array.from(out);
}

/** A gRPC length-prefixed message (not compressed) of `n` opaque bytes. */
export function grpcMessage(n: number): Uint8Array {
  const b = new Uint8Array(5 + n).fill(0x61);
  b[0] = 0;
  new DataView(b.buffer).setUint32(1, n);
  return b;
}

// ---- frames and connection ----

function frameHeader(
  out: Buffer,
  at: number,
  length: number,
  type: number,
  flags: number,
  stream: number,
): void {
  out[at] = (length >> 16) & 0xff;
  out[at + 1] = (length >> 8) & 0xff;
  out[at + 2] = length & 0xff;
  out[at + 3] = type;
  out[at + 4] = flags;
  out.writeUInt32BE(stream & MAX_WINDOW, at + 5);
}

function frame(type: number, flags: number, stream: number, payload: Uint8Array = new Uint8Array(0)): Buffer {
  const b = Buffer.allocUnsafe(9 + payload.length);
  frameHeader(b, 0, payload.length, type, flags, stream);
  b.set(payload, 9);
  return b;
}

interface Stream {
  status: number;
  grpcStatus: string;
  done: (ok: boolean, status: number, grpcStatus: string) => void;
}

export class H2Connection {
  readonly socket: net.Socket;
  /** The peer's SETTINGS_MAX_CONCURRENT_STREAMS (unlimited until it says). */
  maxConcurrent = Infinity;
  closed = false;
  #streams = new Map<number, Stream>();
  #nextId = 1;
  #decoder = new HpackDecoder();
  #buf: Buffer | undefined;
  #block: Buffer[] = [];
  #blockStream = 0;
  #blockEnd = false;
  #sendWindow = 65535;
  #peerInitialWindow = 65535;
  #received = 0;
  #queued: Buffer[] = [];
  #queuedBytes: number[] = [];

  private constructor(socket: net.Socket) {
    this.socket = socket;
    socket.on("data", (d: Buffer) => this.#onData(d));
    socket.on("error", () => {});
    socket.once("close", () => this.#fail(0));
  }

  static connect(host: string, port: number): Promise<H2Connection> {
    return new Promise((resolve, reject) => {
      const s = net.connect({ host, port, noDelay: true });
      s.once("error", reject);
      s.once("connect", () => {
        s.off("error", reject);
        const c = new H2Connection(s);
        const settings = Buffer.alloc(12);
        settings.writeUInt16BE(0x2, 0); // ENABLE_PUSH = 0
        settings.writeUInt32BE(0, 2);
        settings.writeUInt16BE(0x4, 6); // INITIAL_WINDOW_SIZE
        settings.writeUInt32BE(MAX_WINDOW, 8);
        const wu = Buffer.alloc(4);
        wu.writeUInt32BE(MAX_WINDOW - 65535, 0);
        s.write(Buffer.concat([PREFACE, frame(SETTINGS, 0, 0, settings), frame(WINDOW_UPDATE, 0, 0, wu)]));
        resolve(c);
      });
    });
  }

  get inFlight(): number {
    return this.#streams.size;
  }

  /** Sends HEADERS (`block`) and DATA (`body`, ending the stream). False when the connection is done. */
  request(block: Uint8Array, body: Uint8Array, done: Stream["done"]): boolean {
    if (this.closed || this.#nextId > MAX_WINDOW) return false;
    const id = this.#nextId;
    this.#nextId += 2;
    this.#streams.set(id, { status: 0, grpcStatus: "", done });
    const b = Buffer.allocUnsafe(18 + block.length + body.length);
    frameHeader(b, 0, block.length, HEADERS, END_HEADERS, id);
    b.set(block, 9);
    frameHeader(b, 9 + block.length, body.length, DATA, END_STREAM, id);
    b.set(body, 18 + block.length);
    if (body.length > this.#peerInitialWindow) {
      throw new Error("request body exceeds the peer's stream window");
    }
    if (this.#queued.length > 0 || body.length > this.#sendWindow) {
      this.#queued.push(b);
      this.#queuedBytes.push(body.length);
    } else {
      this.#sendWindow -= body.length;
      this.socket.write(b);
    }
    return true;
  }

  close(): void {
    this.closed = true;
    this.socket.destroy();
  }

  #flushQueued(): void {
    while (this.#queued.length > 0 && this.#queuedBytes[0] <= this.#sendWindow) {
      this.#sendWindow -= this.#queuedBytes.shift()!;
      this.socket.write(this.#queued.shift()!);
    }
  }

  #finish(id: number, ok: boolean): void {
    const s = this.#streams.get(id);
    if (!s) return;
    this.#streams.delete(id);
    s.done(ok && s.status === 200, s.status, s.grpcStatus);
  }

  /** Fails every stream above `lastId` (all of them when the connection is gone). */
  #fail(lastId: number): void {
    this.closed = true;
    for (const id of [...this.#streams.keys()]) {
      if (id > lastId || this.socket.destroyed) this.#finish(id, false);
    }
  }

  #onData(d: Buffer): void {
    const b = this.#buf ? Buffer.concat([this.#buf, d]) : d;
    this.#buf = undefined;
    let at = 0;
    while (b.length - at >= 9) {
      const len = (b[at] << 16) | (b[at + 1] << 8) | b[at + 2];
      if (b.length - at < 9 + len) break;
      const type = b[at + 3], flags = b[at + 4];
      const stream = b.readUInt32BE(at + 5) & MAX_WINDOW;
      this.#frame(type, flags, stream, b.subarray(at + 9, at + 9 + len));
      at += 9 + len;
    }
    if (at < b.length) this.#buf = Buffer.from(b.subarray(at));
  }

  #frame(type: number, flags: number, stream: number, p: Buffer): void {
    switch (type) {
      case DATA: {
        this.#received += p.length;
        if (this.#received > 1 << 30) {
          const wu = Buffer.alloc(4);
          wu.writeUInt32BE(this.#received, 0);
          this.socket.write(frame(WINDOW_UPDATE, 0, 0, wu));
          this.#received = 0;
        }
        if (flags & END_STREAM) this.#finish(stream, true);
        return;
      }
      case HEADERS: {
        let start = 0, end = p.length;
        if (flags & PADDED) {
          start = 1;
          end -= p[0];
        }
        if (flags & PRIORITY) start += 5;
        this.#block = [p.subarray(start, end)];
        this.#blockStream = stream;
        this.#blockEnd = (flags & END_STREAM) !== 0;
        if (flags & END_HEADERS) this.#headers();
        return;
      }
      case CONTINUATION:
        this.#block.push(p);
        if (flags & END_HEADERS) this.#headers();
        return;
      case RST_STREAM:
        this.#finish(stream, false);
        return;
      case SETTINGS: {
        if (flags & ACK) return;
        for (let i = 0; i + 6 <= p.length; i += 6) {
          const id = p.readUInt16BE(i), v = p.readUInt32BE(i + 2);
          if (id === 0x3) this.maxConcurrent = v;
          if (id === 0x4) this.#peerInitialWindow = v;
        }
        this.socket.write(frame(SETTINGS, ACK, 0));
        return;
      }
      case PING:
        if (!(flags & ACK)) this.socket.write(frame(PING, ACK, 0, p));
        return;
      case GOAWAY:
        this.#fail(p.readUInt32BE(0) & MAX_WINDOW);
        return;
      case WINDOW_UPDATE:
        if (stream === 0) {
          this.#sendWindow += p.readUInt32BE(0) & MAX_WINDOW;
          this.#flushQueued();
        }
        return;
      default:
        return; // PRIORITY, PUSH_PROMISE (disabled), unknown: ignored
    }
  }

  #headers(): void {
    const block = this.#block.length === 1 ? this.#block[0] : Buffer.concat(this.#block);
    this.#block = [];
    const s = this.#streams.get(this.#blockStream);
    const fields = this.#decoder.decode(block);
    for (let i = 0; s && i < fields.length; i += 2) {
      if (fields[i] === ":status") s.status = Number(fields[i + 1]);
      else if (fields[i] === "grpc-status") s.grpcStatus = fields[i + 1];
    }
    if (this.#blockEnd) this.#finish(this.#blockStream, true);
  }
}
