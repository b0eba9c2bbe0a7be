/**
 * The HTTP/1 server side of the proxy: one accepted connection, requests read in order (pipelined
 * ones wait in the reader, which bounds them), each passed to the `HttpService`, responses written
 * in the same order. Any failure is contained in its connection.
 *
 * Rules chosen here:
 * - Parse failures get their status (400, 408, 417, 431, 501, 505) and `connection: close`.
 * - CONNECT gets 501 and the connection closes: the proxy does not tunnel, and a client that
 *   sends tunnel bytes right after its CONNECT would have them parsed as requests.
 * - A FIN from the client while a request is in flight aborts it (unless `halfClose`).
 * - The header-read timeout runs from the first byte of a head; an idle connection (no byte of
 *   a next request) closes silently after the idle timeout.
 * - `Expect: 100-continue` is answered by this codec: "100 Continue" goes out when the service
 *   first reads the body; a final response sent before that closes the connection.
 * - A request body the service did not read is drained after the response when it is small and
 *   bounded, else the connection closes.
 * - Response trailers are sent only to clients that sent `TE: trailers`; to others they are
 *   dropped (RFC 9110 §6.5.1).
 * - A rejected service call maps to the `HttpError` status, any other error to 502, with a short
 *   text body and an `l5d-proxy-error` header.
 * - Upgrade: requests with Upgrade + Connection: upgrade keep both fields; a 101 response with an
 *   `upgrade` stream is written and then bytes are copied both ways (forward.ts).
 */
import type { Duplex } from "node:stream";
import {
  type Body,
  EMPTY_BODY,
  HeaderList,
  HttpError,
  type HttpRequest,
  type HttpResponse,
  type HttpService,
  textResponse,
} from "../message.ts";
import { forward } from "../../transport/forward.ts";
import { type BodyOwner, ChunkedBody, LengthBody, type WireBody } from "./body.ts";
import { H1ParseError } from "./errors.ts";
import {
  BODY_CHUNKED,
  BODY_LENGTH,
  type H1Limits,
  parseRequestHead,
  type RequestHead,
  resolveLimits,
} from "./head.ts";
import { HeadReader, SocketReader } from "./reader.ts";
import {
  BODY_ROOM_BYTES,
  drained,
  FRAME_CHUNKED,
  FRAME_CLOSE,
  FRAME_LENGTH,
  FRAME_NONE,
  Outbox,
  responseHead,
  writeMessage,
} from "./write.ts";

export interface ServeHttp1Options {
  limits?: Partial<H1Limits>;
  /** Time from the first byte of a request head to its end (slowloris); default 10 s. */
  headerTimeoutMs?: number;
  /** Time a kept-alive connection may sit with no request; default 60 s. */
  idleTimeoutMs?: number;
  /** Unread request body bytes the server reads and drops to keep the connection; default 64 KiB. */
  maxDrainBytes?: number;
  /** After `connection: close`, how long to wait for the client to close before resetting; default 2 s. */
  lingerMs?: number;
  /** Unread bytes buffered per connection before the socket is paused; default 64 KiB. */
  highWaterMark?: number;
  /**
   * Keep serving a request after the client shut down its sending side (FIN). Default false: a
   * FIN during a request means the client is gone, so the request is aborted (as hyper does).
   */
  halfClose?: boolean;
  /** Graceful shutdown: idle connections close at once, busy ones after their current response. */
  signal?: AbortSignal;
  /** Every request-level failure (parse error, service rejection, write failure), for logging. */
  onError?: (error: Error) => void;
}

const IDLE = 0, HEAD = 1, BUSY = 2, DRAIN = 3, DONE = 4;
/** `#pollHead`: bytes must arrive first; the connection is over. */
const WAIT = 0, STOP = 1;
const CONTINUE = new TextEncoder().encode("HTTP/1.1 100 Continue\r\n\r\n");
const noop = () => {};

/** Serves HTTP/1 on `socket` until it closes; never rejects. */
export function serveHttp1(
  socket: Duplex,
  service: HttpService,
  opts: ServeHttp1Options = {},
): Promise<void> {
  return new ServerConn(socket, service, opts).run();
}

/** A readable, single-line, latin1 copy of an error message for a header value. */
function headerSafe(s: string): string {
  // deno-lint-ignore no-control-regex
  return s.replace(/[\0-\x1f\x7f]|[^\0-\xff]/g, " ").slice(0, 256);
}

/** The response for a failed request: the HttpError status, else 502. */
export function errorResponse(e: unknown): HttpResponse {
  const status = e instanceof HttpError && e.status >= 400 && e.status <= 599 ? e.status : 502;
  const message = e instanceof Error ? e.message : String(e);
  const headers = new HeaderList(["l5d-proxy-error", headerSafe(message)]);
  return textResponse(status, message + "\n", headers);
}

class ServerConn implements BodyOwner {
  readonly sock: Duplex;
  readonly service: HttpService;
  readonly reader: SocketReader;
  readonly heads: HeadReader;
  readonly out = new Outbox();
  readonly limits: H1Limits;
  readonly headerTimeout: number;
  readonly idleTimeout: number;
  /** The longest the connection timer runs before it re-checks (the smallest timeout). */
  readonly tick: number;
  readonly maxDrain: number;
  readonly lingerMs: number;
  readonly onError: ((e: Error) => void) | undefined;
  readonly shutdown: AbortSignal | undefined;
  readonly halfClose: boolean;

  #state = IDLE;
  #deadline = 0;
  #timer: ReturnType<typeof setTimeout> | undefined = undefined;
  #linger: ReturnType<typeof setTimeout> | undefined = undefined;
  #timedOut = false;
  #ctrl: AbortController | undefined = undefined;
  /** The request body of the request in flight, if it has one. */
  #wire: WireBody | undefined = undefined;
  /** The connection may serve another request after this response. */
  #keep = false;
  #expectPending = false;
  #responseStarted = false;
  #bodyCancelled = false;
  #closing = false;
  #closed = false;
  #shuttingDown = false;
  #onClosed: (() => void) | undefined = undefined;
  readonly #closedPromise: Promise<void>;

  constructor(sock: Duplex, service: HttpService, opts: ServeHttp1Options) {
    this.sock = sock;
    this.service = service;
    this.limits = resolveLimits(opts.limits);
    this.headerTimeout = opts.headerTimeoutMs ?? 10_000;
    this.idleTimeout = opts.idleTimeoutMs ?? 60_000;
    this.tick = Math.min(this.headerTimeout, this.idleTimeout);
    this.maxDrain = opts.maxDrainBytes ?? 64 * 1024;
    this.lingerMs = opts.lingerMs ?? 2_000;
    this.onError = opts.onError;
    this.shutdown = opts.signal;
    this.halfClose = opts.halfClose ?? false;
    this.heads = new HeadReader(this.limits.maxHeadBytes, true);
    this.#closedPromise = new Promise((r) => this.#onClosed = r);
    // Always an error listener: an unhandled socket error would take the process down.
    sock.on("error", this.#onSockError);
    sock.once("close", this.#onSockClose);
    sock.on("end", this.#onSockEnd);
    this.reader = new SocketReader(sock, opts.highWaterMark);
    if (this.shutdown?.aborted) this.#shuttingDown = true;
    else this.shutdown?.addEventListener("abort", this.#onShutdown, { once: true });
  }

  // One async function per connection, not per request: the head is read and parsed, the
  // response written and the next request started without a promise of their own unless they
  // have to wait (for bytes, for 'drain', for the service).
  async run(): Promise<void> {
    try {
      while (!this.#closing) {
        // A client that pipelines without reading its responses waits here, not in our memory.
        if (this.sock.writableNeedDrain) await drained(this.sock);
        if (this.#closing) break;
        this.#setState(IDLE, this.idleTimeout);
        let bytes = this.#pollHead();
        while (bytes === WAIT) {
          await this.reader.wait();
          bytes = this.#pollHead();
        }
        if (bytes === STOP) break;
        if (bytes instanceof H1ParseError) {
          await this.#reject(bytes);
          break;
        }
        this.#setState(BUSY, 0);
        let head: RequestHead;
        try {
          head = parseRequestHead(bytes, this.limits, this.heads.start, this.heads.end);
        } catch (e) {
          await this.#reject(e);
          break;
        }
        if (head.method === "CONNECT") {
          await this.#reject(new H1ParseError(501, "CONNECT is not supported: this proxy does not tunnel"));
          break;
        }
        const req = this.#request(head);
        let res: HttpResponse;
        try {
          res = await this.service(req, this.#ctrl!.signal);
        } catch (e) {
          if (!this.#closed) this.#report(e);
          res = errorResponse(e);
        }
        const more = this.#respond(head, res);
        if (more === false || (more !== true && !(await more))) break;
      }
    } catch (e) {
      this.#report(e);
      this.sock.destroy();
    }
    if (!this.#closing && this.#state !== DONE) this.#close();
    await this.#closedPromise;
  }

  #report(e: unknown): void {
    if (this.onError !== undefined) this.onError(e instanceof Error ? e : new Error(String(e)));
  }

  #onSockError = (e: Error): void => {
    // Resets by clients are routine; the close handler does the cleanup.
    if ((e as { code?: string }).code !== "ECONNRESET" && this.#state !== IDLE) this.#report(e);
  };

  #onSockClose = (): void => {
    this.#closed = true;
    this.#closing = true;
    this.#deadline = 0;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    if (this.#linger !== undefined) clearTimeout(this.#linger);
    this.#timer = this.#linger = undefined;
    this.shutdown?.removeEventListener("abort", this.#onShutdown);
    const ctrl = this.#ctrl;
    if (ctrl !== undefined) {
      this.#ctrl = undefined;
      ctrl.abort(new DOMException("client closed the connection", "AbortError"));
    }
    this.#onClosed!();
  };

  #onSockEnd = (): void => {
    if (!this.halfClose && (this.#state === BUSY || this.#state === DRAIN)) this.sock.destroy();
  };

  #onShutdown = (): void => {
    this.#shuttingDown = true;
    if (this.#state === IDLE && this.heads.seen === 0) {
      this.#close();
      this.reader.interrupt();
    }
  };

  // Timeouts: one timer per connection, re-armed lazily instead of per request. It fires at most
  // `tick` after being armed, and every deadline is at least `tick` away when set, so none is missed.
  #setState(state: number, timeoutMs: number): void {
    this.#state = state;
    this.#timedOut = false;
    if (timeoutMs > 0) {
      this.#deadline = performance.now() + timeoutMs;
      if (this.#timer === undefined) {
        this.#timer = setTimeout(this.#onTimer, Math.min(timeoutMs, this.tick));
      }
    } else {
      this.#deadline = 0;
    }
  }

  #onTimer = (): void => {
    this.#timer = undefined;
    if (this.#deadline === 0 || this.#closing) return;
    const left = this.#deadline - performance.now();
    if (left > 0) {
      this.#timer = setTimeout(this.#onTimer, Math.min(left, this.tick));
      return;
    }
    this.#timedOut = true;
    this.reader.interrupt();
  };

  /** Ends the connection after what was written: FIN, then discard input until the client closes. */
  #close(): void {
    if (this.#closing && this.#state === DONE) return;
    this.#closing = true;
    this.#state = DONE;
    this.#deadline = 0;
    if (this.#closed) return;
    const s = this.sock;
    this.reader.detach();
    // Reading on avoids a reset (which could destroy the response in flight) if the client
    // still sends; the linger timer bounds how long that may take.
    s.on("data", noop);
    s.resume();
    s.end();
    if (this.reader.eof) s.destroy();
    else {
      s.once("end", () => s.destroy());
      this.#linger = setTimeout(() => s.destroy(), this.lingerMs);
    }
  }

  /**
   * The next request head if it is all buffered; WAIT when bytes must arrive first; STOP when the
   * connection is over; the error to answer when the head cannot be read.
   */
  #pollHead(): Uint8Array | typeof WAIT | typeof STOP | H1ParseError {
    if (this.#closing) return STOP;
    const h = this.heads.pull(this.reader);
    if (h === -1) return new H1ParseError(431, `request head larger than ${this.limits.maxHeadBytes} bytes`);
    if (h !== null) return h;
    if (this.heads.seen > 0 && this.#state === IDLE) this.#setState(HEAD, this.headerTimeout);
    if (this.reader.done) {
      this.#close();
      return STOP;
    }
    if (this.#timedOut) {
      if (this.#state === HEAD) {
        return new H1ParseError(408, `request head not complete within ${this.headerTimeout} ms`);
      }
      this.#close();
      return STOP;
    }
    if (this.#shuttingDown && this.heads.seen === 0) {
      this.#close();
      return STOP;
    }
    return WAIT;
  }

  /** Answers a request that cannot be served and closes the connection. */
  async #reject(e: unknown): Promise<void> {
    this.#report(e);
    this.#setState(BUSY, 0);
    const res = errorResponse(e);
    try {
      const h = responseHead(res.status, res.headers, FRAME_LENGTH, res.body.length!, "close");
      await writeMessage(this.sock, this.out, h, res.body, FRAME_LENGTH, false);
    } catch {
      // The client is gone; nothing to tell it.
    }
    this.#close();
  }

  /** The request for `head`, its body reading from the connection; arms the request's abort. */
  #request(head: RequestHead): HttpRequest {
    let body: Body = EMPTY_BODY;
    let wire: WireBody | undefined;
    if (head.bodyKind === BODY_LENGTH) {
      wire = new LengthBody(this.reader, this, head.contentLength, 400);
    } else if (head.bodyKind === BODY_CHUNKED) {
      wire = new ChunkedBody(this.reader, this, this.limits, 400);
    }
    if (wire !== undefined) body = wire;
    this.#wire = wire;
    this.#expectPending = head.expectContinue;
    this.#responseStarted = false;
    this.#bodyCancelled = false;
    this.#ctrl = new AbortController();
    return {
      method: head.method,
      scheme: head.scheme,
      authority: head.authority,
      path: head.path,
      version: head.version,
      headers: head.headers,
      body,
    };
  }

  /**
   * Writes the service's response; whether the connection goes on to another request, or a
   * promise of that when the write or the drain of an unread request body has to wait.
   */
  #respond(head: RequestHead, res: HttpResponse): boolean | Promise<boolean> {
    const wire = this.#wire;
    this.#wire = undefined;
    // A request body the client framed wrongly is the client's error, whatever the service made
    // of the broken upload (a proxy sees its upstream reset): answer it as a bad head is answered.
    const bodyError = wire?.failure;
    if (bodyError instanceof H1ParseError && !this.#closed && res.status !== bodyError.status) {
      this.#report(bodyError);
      res.body.cancel();
      res.upgrade?.destroy();
      res = errorResponse(bodyError);
    }
    if (this.#closed) {
      res.body.cancel();
      res.upgrade?.destroy();
      return false;
    }
    this.#responseStarted = true;
    let keep = head.keepAlive && !this.#shuttingDown;
    // A client waiting for 100 Continue may or may not send its body now: the framing is lost.
    if (wire !== undefined && !wire.started && this.#expectPending) keep = false;

    if (res.status === 101) {
      const up = res.upgrade;
      if (head.upgrade && up !== undefined) return this.#switchProtocols(head, res, up);
      up?.destroy();
      res.body.cancel();
      res = errorResponse(new HttpError(502, "101 response without an upgrade to switch to", "bad_upgrade"));
    } else if (res.upgrade !== undefined) {
      res.upgrade.destroy();
    }

    this.#keep = keep && !this.#bodyCancelled;
    let written: Promise<void> | undefined;
    try {
      written = this.#writeResponse(head, res);
    } catch (e) {
      this.#writeFailed(e);
      return false;
    }
    if (written !== undefined) return this.#respondLater(written, wire, this.#keep);
    return this.#afterResponse(wire, this.#keep);
  }

  async #respondLater(written: Promise<void>, wire: WireBody | undefined, keep: boolean): Promise<boolean> {
    try {
      await written;
    } catch (e) {
      this.#writeFailed(e);
      return false;
    }
    const more = this.#afterResponse(wire, keep);
    return more === true || (more !== false && await more);
  }

  #writeFailed(e: unknown): void {
    if (!this.#closed) this.#report(e);
    this.#ctrl = undefined;
    this.sock.destroy();
  }

  /** After the response was written: drain what is left of the request body, or close. */
  #afterResponse(wire: WireBody | undefined, keep: boolean): boolean | Promise<boolean> {
    this.#ctrl = undefined;
    if (wire !== undefined && !wire.finished) {
      if (!keep) {
        this.#close();
        return false;
      }
      return this.#drain(wire).then((drained) => {
        if (!drained || this.#bodyCancelled) {
          this.#close();
          return false;
        }
        return true;
      });
    }
    if (!keep || this.#bodyCancelled) {
      this.#close();
      return false;
    }
    return true;
  }

  /**
   * Writes the response head and body (undefined when done at once, else a promise). `#keep` says
   * whether the connection may stay open; a response framed by close clears it.
   */
  #writeResponse(head: RequestHead, res: HttpResponse): Promise<void> | undefined {
    let keep = this.#keep;
    let status = res.status;
    if (status < 200) {
      res.body.cancel();
      res = errorResponse(
        new HttpError(502, `service returned informational status ${status}`, "bad_response"),
      );
      status = res.status;
    }
    const noBody = head.method === "HEAD" || status === 204 || status === 304;
    let frame: number;
    let length = 0;
    if (noBody) frame = FRAME_NONE;
    else if (res.body.length !== undefined) {
      frame = FRAME_LENGTH;
      length = res.body.length;
    } else if (head.version === "HTTP/1.1") frame = FRAME_CHUNKED;
    else {
      frame = FRAME_CLOSE;
      keep = this.#keep = false;
    }
    const connection = !keep ? "close" : head.version === "HTTP/1.0" ? "keep-alive" : undefined;
    let h: Uint8Array;
    // A small body of known length goes in the head's buffer (one buffer per response).
    let room = frame === FRAME_LENGTH && length <= BODY_ROOM_BYTES ? length : 0;
    try {
      h = responseHead(status, res.headers, frame, length, connection, undefined, room);
    } catch (e) {
      // A service put a field in that cannot go on the wire; say so instead of writing it.
      this.#report(e);
      res.body.cancel();
      res = errorResponse(new HttpError(502, (e as Error).message, "bad_response"));
      frame = FRAME_LENGTH;
      room = 0;
      h = responseHead(res.status, res.headers, frame, res.body.length!, connection);
    }
    const w = writeMessage(this.sock, this.out, h, res.body, frame, head.teTrailers, h.length - room);
    if (noBody) res.body.cancel();
    return w;
  }

  /** Reads and drops the rest of an unread request body, if it is small; false if it was not. */
  async #drain(body: WireBody): Promise<boolean> {
    if (this.#bodyCancelled || this.#expectPending) return false;
    if (body instanceof LengthBody && body.remaining > this.maxDrain) return false;
    this.#setState(DRAIN, this.headerTimeout);
    let budget = this.maxDrain;
    try {
      for (;;) {
        const c = body.readNow();
        if (c === null) return true;
        if (c === undefined) {
          if (this.#timedOut || this.#closing) return false;
          await this.reader.wait();
          continue;
        }
        budget -= c.length;
        if (budget < 0) return false;
      }
    } catch {
      return false;
    } finally {
      this.#setState(BUSY, 0);
    }
  }

  #switchProtocols(head: RequestHead, res: HttpResponse, up: Duplex): boolean {
    this.#ctrl = undefined;
    this.#state = DONE;
    this.#deadline = 0;
    this.#closing = true;
    const value = res.headers.get("upgrade") ?? head.headers.get("upgrade")!;
    let h: Uint8Array;
    try {
      h = responseHead(101, res.headers, FRAME_NONE, 0, undefined, value);
    } catch (e) {
      this.#report(e);
      up.destroy();
      this.sock.destroy();
      return false;
    }
    const rest = this.reader.detach();
    this.out.setHead(h);
    this.out.flush(this.sock);
    for (const c of rest) up.write(c);
    forward(this.sock, up);
    this.sock.resume();
    up.resume();
    return false;
  }

  bodyStarted(): void {
    if (this.#expectPending && !this.#responseStarted && !this.#closing) {
      this.#expectPending = false;
      this.sock.write(CONTINUE);
    }
  }

  bodyFinished(_body: WireBody, error: Error | undefined): void {
    // A cancelled or broken request body leaves the rest of the connection unframed.
    if (error !== undefined) this.#bodyCancelled = true;
  }
}
