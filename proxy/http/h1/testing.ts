/**
 * Test support for the HTTP/1 codec: a listener running `serveHttp1`, and a raw socket client with
 * its own small response reader (string-based, deliberately independent of the codec it checks).
 */
import * as net from "node:net";
import type { HttpService } from "../message.ts";
import { listenTcp } from "../../transport/listen.ts";
import { ConnTracker } from "../../transport/conn_tracker.ts";
import { serveHttp1, type ServeHttp1Options } from "./server.ts";

export interface TestServer {
  port: number;
  /** Connections accepted so far. */
  accepted: () => number;
  close(): Promise<void>;
}

export async function startServer(service: HttpService, opts: ServeHttp1Options = {}): Promise<TestServer> {
  const tracker = new ConnTracker();
  const stop = new AbortController();
  const signal = opts.signal ? AbortSignal.any([opts.signal, stop.signal]) : stop.signal;
  let accepted = 0;
  const l = await listenTcp({ ip: "127.0.0.1", port: 0 }, (sock) => {
    accepted++;
    tracker.add(sock);
    serveHttp1(sock, service, { ...opts, signal });
  });
  return {
    port: l.addr.port,
    accepted: () => accepted,
    close: async () => {
      // Graceful shutdown closes kept-alive client connections (fetch keeps them) at once.
      stop.abort();
      await tracker.drain(2000);
      await l.close();
    },
  };
}

export interface RawResponse {
  status: number;
  /** Lower-case names; repeated fields joined with ", ". */
  headers: Record<string, string>;
  body: string;
  trailers: Record<string, string>;
  /** The bytes of the head and body as received. */
  raw: string;
}

/** A client on a raw socket: writes bytes as given, reads responses as text (latin1). */
export class RawClient {
  readonly sock: net.Socket;
  #buf = "";
  #wake: (() => void) | undefined;
  ended = false;
  closed = false;
  readonly closedP: Promise<void>;

  private constructor(sock: net.Socket) {
    this.sock = sock;
    sock.setEncoding("latin1");
    sock.on("data", (d: string) => {
      this.#buf += d;
      this.#notify();
    });
    sock.on("end", () => {
      this.ended = true;
      this.#notify();
    });
    sock.on("error", () => {});
    this.closedP = new Promise((r) =>
      sock.on("close", () => {
        this.closed = true;
        this.#notify();
        r();
      })
    );
  }

  static connect(port: number, host = "127.0.0.1"): Promise<RawClient> {
    return new Promise((resolve, reject) => {
      const s = net.connect({ host, port, allowHalfOpen: true, noDelay: true });
      s.once("connect", () => resolve(new RawClient(s)));
      s.once("error", reject);
    });
  }

  #notify(): void {
    const w = this.#wake;
    this.#wake = undefined;
    w?.();
  }

  /** Everything received and not yet consumed by `response()`. */
  get pending(): string {
    return this.#buf;
  }

  /** Returns everything received and not yet consumed, and consumes it. */
  take(): string {
    const s = this.#buf;
    this.#buf = "";
    return s;
  }

  send(data: string | Uint8Array): void {
    if (typeof data === "string") this.sock.write(data, "latin1");
    else this.sock.write(data);
  }

  /** Waits until `pred(buffered text)` holds, the peer ends, or `ms` pass. */
  async waitFor(pred: (s: string) => boolean, ms = 5000): Promise<boolean> {
    const deadline = performance.now() + ms;
    while (!pred(this.#buf)) {
      if (this.ended || this.closed) return pred(this.#buf);
      const left = deadline - performance.now();
      if (left <= 0) return false;
      let t: ReturnType<typeof setTimeout> | undefined;
      await new Promise<void>((r) => {
        this.#wake = r;
        t = setTimeout(r, left);
      });
      clearTimeout(t);
    }
    return true;
  }

  /** Reads one complete response (Content-Length, chunked or until close). */
  async response(opts: { head?: boolean; ms?: number } = {}): Promise<RawResponse> {
    const ms = opts.ms ?? 5000;
    if (!await this.waitFor((s) => s.includes("\r\n\r\n"), ms)) {
      throw new Error(`no response head; got ${JSON.stringify(this.#buf.slice(0, 200))}`);
    }
    const headEnd = this.#buf.indexOf("\r\n\r\n") + 4;
    const lines = this.#buf.slice(0, headEnd - 4).split("\r\n");
    const status = Number(lines[0].split(" ")[1]);
    const headers: Record<string, string> = {};
    for (const l of lines.slice(1)) {
      const i = l.indexOf(":");
      const n = l.slice(0, i).toLowerCase();
      const v = l.slice(i + 1).trim();
      headers[n] = headers[n] === undefined ? v : headers[n] + ", " + v;
    }
    const noBody = opts.head || status < 200 || status === 204 || status === 304;
    let body = "";
    const trailers: Record<string, string> = {};
    let end = headEnd;
    if (noBody) {
      // nothing
    } else if (headers["transfer-encoding"] === "chunked") {
      let pos = headEnd;
      for (;;) {
        if (!await this.waitFor((s) => s.indexOf("\r\n", pos) >= 0, ms)) {
          throw new Error("chunk size missing");
        }
        const le = this.#buf.indexOf("\r\n", pos);
        const size = parseInt(this.#buf.slice(pos, le), 16);
        pos = le + 2;
        if (size === 0) {
          if (!await this.waitFor((s) => s.indexOf("\r\n\r\n", pos - 2) >= 0, ms)) {
            throw new Error("no chunked end");
          }
          const tEnd = this.#buf.indexOf("\r\n\r\n", pos - 2);
          for (const l of this.#buf.slice(pos, tEnd).split("\r\n").filter((x) => x)) {
            const i = l.indexOf(":");
            trailers[l.slice(0, i).toLowerCase()] = l.slice(i + 1).trim();
          }
          end = tEnd + 4;
          break;
        }
        if (!await this.waitFor((s) => s.length >= pos + size + 2, ms)) throw new Error("chunk data missing");
        body += this.#buf.slice(pos, pos + size);
        pos += size + 2;
      }
    } else if (headers["content-length"] !== undefined) {
      const n = Number(headers["content-length"]);
      if (!await this.waitFor((s) => s.length >= headEnd + n, ms)) throw new Error("body missing");
      body = this.#buf.slice(headEnd, headEnd + n);
      end = headEnd + n;
    } else {
      await this.waitFor(() => false, ms);
      body = this.#buf.slice(headEnd);
      end = this.#buf.length;
    }
    const raw = this.#buf.slice(0, end);
    this.#buf = this.#buf.slice(end);
    return { status, headers, body, trailers, raw };
  }

  /** Resolves true once the server has ended the connection (within `ms`). */
  async serverClosed(ms = 5000): Promise<boolean> {
    await this.waitFor(() => false, ms);
    return this.ended || this.closed;
  }

  destroy(): void {
    this.sock.destroy();
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** True if `p` settles within `ms`. */
export async function within(p: Promise<unknown>, ms: number): Promise<boolean> {
  let t: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<boolean>((r) => t = setTimeout(() => r(false), ms));
  try {
    return await Promise.race([p.then(() => true), timeout]);
  } finally {
    clearTimeout(t);
  }
}
