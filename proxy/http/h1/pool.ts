/**
 * Kept-alive HTTP/1 connections to one endpoint. A request takes the most recently used idle
 * connection (fewer connections stay warm) or opens one; finished connections come back when
 * reusable. Broken, half-closed or surplus connections are closed, never handed out.
 *
 * A request that fails on a reused connection before any response byte, where the failure is
 * the server having closed that idle connection (`Http1ClientError.safeToRetry`: nothing was
 * written, or the request is idempotent and its body untouched), is sent once more on a new
 * connection. Anything else is the caller's to retry.
 */
import type { Duplex } from "node:stream";
import { HttpError, type HttpRequest, type HttpResponse, type HttpService } from "../message.ts";
import { type Http1ClientOptions, Http1Connection } from "./client.ts";

export interface Http1PoolOptions {
  /** Opens a connected socket (TCP or TLS) to the endpoint; should reject when `signal` aborts. */
  connect: (signal: AbortSignal) => Promise<Duplex>;
  /** Idle connections kept; default 16. */
  maxIdle?: number;
  /** An idle connection unused this long is closed; default 60 s. */
  idleTimeoutMs?: number;
  client?: Http1ClientOptions;
}

export class Http1Pool {
  readonly #connect: (signal: AbortSignal) => Promise<Duplex>;
  readonly #maxIdle: number;
  readonly #idleTimeout: number;
  readonly #client: Http1ClientOptions | undefined;
  /** Oldest first; taken from the end. */
  readonly #idle: Http1Connection[] = [];
  readonly #idleSince: number[] = [];
  #timer: ReturnType<typeof setTimeout> | undefined = undefined;
  #closed = false;
  #open = 0;
  /** Connections opened over the pool's life. */
  opened = 0;
  /** Requests sent again after a reused connection turned out closed. */
  retries = 0;

  /** The pool as an `HttpService`. */
  readonly service: HttpService = (req, signal) => this.request(req, signal);

  constructor(opts: Http1PoolOptions) {
    this.#connect = opts.connect;
    this.#maxIdle = opts.maxIdle ?? 16;
    this.#idleTimeout = opts.idleTimeoutMs ?? 60_000;
    this.#client = opts.client;
  }

  get idleCount(): number {
    return this.#idle.length;
  }

  /** Connections open now, idle or in use. */
  get openCount(): number {
    return this.#open;
  }

  request(req: HttpRequest, signal: AbortSignal): Promise<HttpResponse> {
    if (this.#closed) return Promise.reject(new HttpError(503, "connection pool is closed", "pool_closed"));
    const reused = this.#takeIdle();
    // A reused connection the server closed meanwhile hands the request back through #retry.
    if (reused !== undefined) return reused.request(req, signal, this.#retry);
    return this.#sendNew(req, signal);
  }

  #retry = (req: HttpRequest, signal: AbortSignal): Promise<HttpResponse> => {
    this.retries++;
    return this.#sendNew(req, signal);
  };

  async #sendNew(req: HttpRequest, signal: AbortSignal): Promise<HttpResponse> {
    const conn = await this.#open1(signal);
    return await conn.request(req, signal);
  }

  /** Closes idle connections now and the others when their exchange ends. */
  close(): void {
    this.#closed = true;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    for (const c of this.#idle.splice(0)) c.destroy();
    this.#idleSince.length = 0;
  }

  #takeIdle(): Http1Connection | undefined {
    while (this.#idle.length > 0) {
      const c = this.#idle.pop()!;
      this.#idleSince.pop();
      if (c.idle) return c;
      c.destroy();
    }
    return undefined;
  }

  async #open1(signal: AbortSignal): Promise<Http1Connection> {
    const sock = await this.#connect(signal);
    if (signal.aborted) {
      sock.destroy();
      throw signal.reason;
    }
    const c = new Http1Connection(sock, this.#client);
    this.#open++;
    this.opened++;
    c.onIdle = this.#onIdle;
    c.onClose = this.#onClose;
    return c;
  }

  #onIdle = (c: Http1Connection): void => {
    if (this.#closed || this.#idle.length >= this.#maxIdle) {
      c.destroy();
      return;
    }
    this.#idle.push(c);
    this.#idleSince.push(performance.now());
    if (this.#timer === undefined) this.#timer = setTimeout(this.#sweep, this.#idleTimeout);
  };

  #onClose = (c: Http1Connection): void => {
    this.#open--;
    const i = this.#idle.indexOf(c);
    if (i >= 0) {
      this.#idle.splice(i, 1);
      this.#idleSince.splice(i, 1);
    }
  };

  #sweep = (): void => {
    this.#timer = undefined;
    const cutoff = performance.now() - this.#idleTimeout;
    let n = 0;
    while (n < this.#idle.length && this.#idleSince[n] <= cutoff) n++;
    const old = this.#idle.splice(0, n);
    this.#idleSince.splice(0, n);
    for (const c of old) c.destroy();
    if (this.#idle.length > 0) {
      const wait = this.#idleSince[0] + this.#idleTimeout - performance.now();
      this.#timer = setTimeout(this.#sweep, Math.max(1, wait));
    }
  };
}
