/**
 * Test helper: an HTTP/2 client written frame by frame over a plain TCP socket, so a test can behave
 * as a hostile peer that no library client would be: ignore the server's stream limit, advertise a
 * tiny receive window and never open it (never "read"), and see exactly which frames the server
 * sends back (RST_STREAM codes, GOAWAY). It answers SETTINGS and PING like any live peer, so only
 * the behaviour under test differs from a well-behaved client.
 */

const PREFACE = new TextEncoder().encode("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");

export const FrameType = {
  DATA: 0,
  HEADERS: 1,
  RST_STREAM: 3,
  SETTINGS: 4,
  PING: 6,
  GOAWAY: 7,
  WINDOW_UPDATE: 8,
} as const;

export const H2Error = { NO_ERROR: 0, PROTOCOL_ERROR: 1, CANCEL: 8, REFUSED_STREAM: 7 } as const;

export interface StreamState {
  id: number;
  /** HEADERS frames received (response headers, then trailers). */
  headers: number;
  dataBytes: number;
  /** Error code of a RST_STREAM from the server, with the time it arrived. */
  reset?: { code: number; at: number };
  endStream: boolean;
}

function hpackInt(value: number, prefixBits: number, first: number): number[] {
  const max = (1 << prefixBits) - 1;
  if (value < max) return [first | value];
  const out = [first | max];
  value -= max;
  while (value >= 128) {
    out.push((value % 128) + 128);
    value = Math.floor(value / 128);
  }
  out.push(value);
  return out;
}

/** HPACK "literal header field without indexing, new name", no Huffman: no table state needed. */
function hpackLiteral(name: string, value: string): number[] {
  const n = [...new TextEncoder().encode(name)];
  const v = [...new TextEncoder().encode(value)];
  return [0, ...hpackInt(n.length, 7, 0), ...n, ...hpackInt(v.length, 7, 0), ...v];
}

function frame(type: number, flags: number, stream: number, payload: Uint8Array): Uint8Array {
  const f = new Uint8Array(9 + payload.length);
  f[0] = payload.length >>> 16;
  f[1] = (payload.length >>> 8) & 0xff;
  f[2] = payload.length & 0xff;
  f[3] = type;
  f[4] = flags;
  new DataView(f.buffer).setUint32(5, stream & 0x7fffffff);
  f.set(payload, 9);
  return f;
}

/** A gRPC length-prefixed message (uncompressed). */
export function grpcMessage(body: Uint8Array): Uint8Array {
  const m = new Uint8Array(5 + body.length);
  new DataView(m.buffer).setUint32(1, body.length);
  m.set(body, 5);
  return m;
}

export class RawH2Client {
  readonly streams = new Map<number, StreamState>();
  /** Server SETTINGS values by identifier (3 = MAX_CONCURRENT_STREAMS). */
  readonly serverSettings = new Map<number, number>();
  goaway: { code: number; lastStream: number } | undefined;
  closed = false;
  #conn: Deno.TcpConn;
  #nextId = 1;
  #pingAcks = 0;
  #wake: (() => void)[] = [];
  #reader: Promise<void>;
  #writes: Promise<unknown> = Promise.resolve();

  private constructor(conn: Deno.TcpConn) {
    this.#conn = conn;
    this.#reader = this.#readLoop();
  }

  /** Connects and sends the preface with `initialWindowSize` as this client's stream receive window. */
  static async connect(port: number, initialWindowSize: number): Promise<RawH2Client> {
    const conn = await Deno.connect({ hostname: "127.0.0.1", port });
    const c = new RawH2Client(conn);
    const settings = new Uint8Array(12);
    const dv = new DataView(settings.buffer);
    dv.setUint16(0, 2); // ENABLE_PUSH
    dv.setUint32(2, 0);
    dv.setUint16(6, 4); // INITIAL_WINDOW_SIZE
    dv.setUint32(8, initialWindowSize);
    c.#write(PREFACE);
    c.#write(frame(FrameType.SETTINGS, 0, 0, settings));
    // A PING round trip after the server's SETTINGS were acknowledged: from then on the server
    // enforces its own settings (they apply once the peer acknowledged them).
    await c.until(() => c.serverSettings.size > 0 || c.closed, 5000, "server SETTINGS");
    await c.ping();
    return c;
  }

  #write(bytes: Uint8Array): void {
    this.#writes = this.#writes.then(async () => {
      let off = 0;
      while (off < bytes.length) off += await this.#conn.write(bytes.subarray(off));
    }).catch(() => {
      this.closed = true;
    });
  }

  async ping(): Promise<void> {
    const want = this.#pingAcks + 1;
    this.#write(frame(FrameType.PING, 0, 0, new Uint8Array(8)));
    await this.until(() => this.#pingAcks >= want || this.closed, 5000, "PING ack");
  }

  /** Opens a server-streaming call: HEADERS, then the request message with END_STREAM. */
  openCall(path: string, request: Uint8Array): StreamState {
    const id = this.#nextId;
    this.#nextId += 2;
    const block = [
      ...hpackLiteral(":method", "POST"),
      ...hpackLiteral(":scheme", "http"),
      ...hpackLiteral(":path", path),
      ...hpackLiteral(":authority", "localhost"),
      ...hpackLiteral("content-type", "application/grpc"),
      ...hpackLiteral("te", "trailers"),
    ];
    const st: StreamState = { id, headers: 0, dataBytes: 0, endStream: false };
    this.streams.set(id, st);
    this.#write(frame(FrameType.HEADERS, 0x4, id, new Uint8Array(block)));
    this.#write(frame(FrameType.DATA, 0x1, id, grpcMessage(request)));
    return st;
  }

  async #readLoop(): Promise<void> {
    let buf = new Uint8Array(0);
    const chunk = new Uint8Array(64 * 1024);
    try {
      for (;;) {
        const n = await this.#conn.read(chunk);
        if (n === null) break;
        const next = new Uint8Array(buf.length + n);
        next.set(buf);
        next.set(chunk.subarray(0, n), buf.length);
        buf = next;
        while (buf.length >= 9) {
          const len = (buf[0] << 16) | (buf[1] << 8) | buf[2];
          if (buf.length < 9 + len) break;
          const type = buf[3], flags = buf[4];
          const id = new DataView(buf.buffer, buf.byteOffset).getUint32(5) & 0x7fffffff;
          this.#onFrame(type, flags, id, buf.slice(9, 9 + len));
          buf = buf.slice(9 + len);
        }
        for (const w of this.#wake.splice(0)) w();
      }
    } catch {
      // reset by the server or closed by us
    }
    this.closed = true;
    for (const w of this.#wake.splice(0)) w();
  }

  #onFrame(type: number, flags: number, id: number, p: Uint8Array): void {
    const dv = new DataView(p.buffer, p.byteOffset, p.byteLength);
    const st = this.streams.get(id);
    switch (type) {
      case FrameType.SETTINGS:
        if (flags & 0x1) return;
        for (let i = 0; i + 6 <= p.length; i += 6) {
          this.serverSettings.set(dv.getUint16(i), dv.getUint32(i + 2));
        }
        this.#write(frame(FrameType.SETTINGS, 0x1, 0, new Uint8Array(0)));
        return;
      case FrameType.PING:
        if (flags & 0x1) this.#pingAcks++;
        else this.#write(frame(FrameType.PING, 0x1, 0, p));
        return;
      case FrameType.GOAWAY:
        this.goaway = { lastStream: dv.getUint32(0) & 0x7fffffff, code: dv.getUint32(4) };
        return;
      case FrameType.RST_STREAM:
        if (st) st.reset = { code: dv.getUint32(0), at: performance.now() };
        return;
      case FrameType.HEADERS:
        if (st) {
          st.headers++;
          if (flags & 0x1) st.endStream = true;
        }
        return;
      case FrameType.DATA:
        // Deliberately no WINDOW_UPDATE: this client never "reads".
        if (st) {
          st.dataBytes += p.length;
          if (flags & 0x1) st.endStream = true;
        }
        return;
    }
  }

  /** Waits until `cond` holds, re-checking on every frame; throws naming `what` after `ms`. */
  async until(cond: () => boolean, ms: number, what: string): Promise<void> {
    const deadline = performance.now() + ms;
    while (!cond()) {
      const left = deadline - performance.now();
      if (left <= 0) throw new Error(`raw h2 client: no ${what} within ${ms} ms`);
      await new Promise<void>((r) => {
        const t = setTimeout(r, Math.min(left, 100));
        this.#wake.push(() => {
          clearTimeout(t);
          r();
        });
      });
    }
  }

  async close(): Promise<void> {
    try {
      this.#conn.close();
    } catch {
      // already closed
    }
    await this.#reader;
  }
}
