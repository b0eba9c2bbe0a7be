/**
 * Where a control-plane client's calls go: one HTTP/2 connection (the proxy's own client,
 * proxy/http/h2/client.ts) per address of the target, calls spread over them round-robin, as grpc-js
 * channels did with `round_robin`.
 *
 * - An address whose connect fails is skipped for a jittered exponential backoff (the proxy's
 *   control backoff settings) and the call goes to the next one; when every address is backing off
 *   the call fails at once with UNAVAILABLE (the watches retry with their own backoff).
 * - The target is resolved again after a failure, at most once per `reresolveMinMs`: a replaced
 *   controller pod's address disappears from its headless Service. It is also resolved every
 *   `reresolveIntervalMs` while the channel is in use, because a failure is not always seen: a pod
 *   killed while its watches were elsewhere stays in the list until a later reconnect picks it and
 *   waits out the connect timeout, and a new replica would get no connections until a failure.
 * - Connections with open streams are pinged (keepalive), so a controller that vanished without a
 *   FIN fails its streams instead of leaving the watches silent forever.
 *
 * A channel is an `HttpService`; the gRPC call layer (client.ts) runs on top of it.
 */
import type * as net from "node:net";
import type { Log } from "../core/log.ts";
import type { HttpRequest, HttpResponse } from "../http/message.ts";
import { Http2Connection } from "../http/h2/client.ts";
import { Http2ClientError } from "../http/h2/errors.ts";
import { backoffDelay } from "../core/backoff.ts";
import { type Endpoint, endpointKey, type Resolve } from "./resolve.ts";
import { GrpcError, Status } from "./status.ts";

export interface ChannelBackoff {
  minMs: number;
  maxMs: number;
  /** Up to this fraction of the delay is added at random. */
  jitter: number;
}

export interface GrpcChannelOptions {
  /** For errors and logs, e.g. "policy (policy.weft.svc.cluster.local.:8090)". */
  name: string;
  resolve: Resolve;
  /** Opens the transport to one address (plain TCP, or TLS); must reject when `signal` aborts. */
  connect: (ep: Endpoint, signal: AbortSignal) => Promise<net.Socket>;
  /** Resolves once the channel may connect (e.g. identity has its first certificate). */
  ready?: (signal: AbortSignal) => Promise<void>;
  backoff: ChannelBackoff;
  /** Least time between resolutions. Default 1 s. */
  reresolveMinMs?: number;
  /** Resolve again this often while the channel knows addresses. Default 10 s; 0 turns it off. */
  reresolveIntervalMs?: number;
  /** Default: a ping every 10 s while streams are open, 5 s for its ACK (as the grpc-js channels had). */
  keepAlive?: { intervalMs: number; timeoutMs: number };
  /** Bound on connecting one address, TLS included. Default 10 s. */
  connectTimeoutMs?: number;
  random?: () => number;
  now?: () => number;
  log?: Log;
}

/** One address and its connection. */
interface Subchannel {
  key: string;
  conn: Http2Connection;
  /** Connect failures in a row. */
  failures: number;
  /** Not tried before this time (ms, `now()`), after a failed connect. */
  retryAt: number;
}

export class GrpcChannel {
  readonly #o: GrpcChannelOptions;
  readonly #now: () => number;
  #subs = new Map<string, Subchannel>();
  #order: Subchannel[] = [];
  #next = 0;
  #resolving: Promise<void> | undefined;
  #resolvedAt = -Infinity;
  #resolveError: string | undefined;
  #closed = false;
  #closing = new AbortController();
  #refresh: ReturnType<typeof setInterval> | undefined;

  constructor(o: GrpcChannelOptions) {
    this.#o = o;
    this.#now = o.now ?? (() => performance.now());
  }

  /** Addresses the channel currently knows (for tests and diagnostics). */
  get addresses(): string[] {
    return this.#order.map((s) => s.key);
  }

  /** Sends one request over the next usable address. Rejects with GrpcError when none is usable. */
  request = async (req: HttpRequest, signal: AbortSignal): Promise<HttpResponse> => {
    if (this.#closed) throw new GrpcError(Status.UNAVAILABLE, `${this.#o.name}: channel closed`);
    const both = AbortSignal.any([signal, this.#closing.signal]);
    if (this.#o.ready) await this.#o.ready(both);
    if (this.#order.length === 0) await this.#resolve(both);
    const tried = new Set<Subchannel>();
    let last: string | undefined;
    for (;;) {
      const sub = this.#pick(tried);
      if (sub === undefined) break;
      tried.add(sub);
      try {
        const res = await sub.conn.request(req, signal);
        sub.failures = 0;
        return res;
      } catch (e) {
        // Only a connection that never came up is certain to have seen nothing of the request.
        if (!(e instanceof Http2ClientError) || (e.reason !== "connect_failed" && e.reason !== "closed")) {
          if (e instanceof Http2ClientError) this.#resolveSoon();
          throw e;
        }
        if (e.reason === "connect_failed") this.#failed(sub);
        last = e.message;
      }
    }
    this.#resolveSoon();
    // The connection's own error already names the channel and the address.
    if (last !== undefined) throw new GrpcError(Status.UNAVAILABLE, last);
    const why = this.#order.length === 0
      ? `no addresses${this.#resolveError ? ` (${this.#resolveError})` : ""}`
      : `all ${this.#order.length} addresses are backing off after failed connects`;
    throw new GrpcError(Status.UNAVAILABLE, `${this.#o.name}: ${why}`);
  };

  /** Stops new calls and closes every connection (open streams fail). */
  close(): Promise<void> {
    this.#closed = true;
    clearInterval(this.#refresh);
    this.#closing.abort(new GrpcError(Status.UNAVAILABLE, `${this.#o.name}: channel closed`));
    const all = [...this.#subs.values()];
    this.#subs.clear();
    this.#order = [];
    return Promise.all(all.map((s) => s.conn.close(0))).then(() => {});
  }

  /** The next address in turn that is not backing off and not yet tried for this call. */
  #pick(tried: Set<Subchannel>): Subchannel | undefined {
    const n = this.#order.length;
    const now = this.#now();
    for (let i = 0; i < n; i++) {
      const sub = this.#order[(this.#next + i) % n];
      if (tried.has(sub) || sub.retryAt > now) continue;
      this.#next = (this.#next + i + 1) % n;
      return sub;
    }
    return undefined;
  }

  #failed(sub: Subchannel): void {
    const delay = backoffDelay(this.#o.backoff, sub.failures++, this.#o.random);
    sub.retryAt = this.#now() + delay;
    this.#o.log?.("debug", `${this.#o.name}: ${sub.key} unreachable, next try in ${delay}ms`);
  }

  /** Resolves again in the background unless that was done within `reresolveMinMs`. */
  #resolveSoon(): void {
    if (this.#closed || this.#now() - this.#resolvedAt < (this.#o.reresolveMinMs ?? 1000)) return;
    this.#resolve(this.#closing.signal).catch(() => {});
  }

  #resolve(signal: AbortSignal): Promise<void> {
    this.#resolving ??= this.#doResolve().finally(() => (this.#resolving = undefined));
    const p = this.#resolving;
    return new Promise((resolve, reject) => {
      const onAbort = () => reject(signal.reason);
      if (signal.aborted) return onAbort();
      signal.addEventListener("abort", onAbort, { once: true });
      p.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
    });
  }

  async #doResolve(): Promise<void> {
    this.#resolvedAt = this.#now();
    let eps: Endpoint[];
    try {
      eps = await this.#o.resolve(this.#closing.signal);
    } catch (e) {
      this.#resolveError = (e as Error).message;
      // Known addresses are kept: a resolver hiccup must not cut working watches.
      if (this.#order.length > 0) return;
      throw new GrpcError(Status.UNAVAILABLE, `${this.#o.name}: ${this.#resolveError}`);
    }
    this.#resolveError = undefined;
    if (this.#closed) return;
    // No ready replica right now (a restart, a rollout): nothing better to go to, so the known addresses
    // stay, backing off, and come back if the same pods become ready again.
    if (eps.length === 0 && this.#order.length > 0) return;
    const keep = new Map<string, Subchannel>();
    for (const ep of eps) {
      const key = endpointKey(ep);
      keep.set(key, this.#subs.get(key) ?? this.#subchannel(key, ep));
    }
    for (const [key, sub] of this.#subs) {
      // Gone from the Service: its streams may finish (their watches then reconnect elsewhere).
      if (!keep.has(key)) void sub.conn.close(30_000);
    }
    this.#subs = keep;
    this.#order = [...keep.values()];
    this.#next = this.#next % Math.max(1, this.#order.length);
    this.#startRefresh();
  }

  /** Once the channel has addresses: resolve again every interval, without keeping the process alive. */
  #startRefresh(): void {
    const every = this.#o.reresolveIntervalMs ?? 10_000;
    if (this.#refresh !== undefined || every <= 0 || this.#closed || this.#order.length === 0) return;
    this.#refresh = setInterval(() => this.#resolveSoon(), every);
    Deno.unrefTimer(this.#refresh);
  }

  #subchannel(key: string, ep: Endpoint): Subchannel {
    const o = this.#o;
    const conn = new Http2Connection({
      name: `${o.name} ${key}`,
      connect: (signal) => o.connect(ep, signal),
      connectTimeoutMs: o.connectTimeoutMs ?? 10_000,
      keepAlive: o.keepAlive ?? { intervalMs: 10_000, timeoutMs: 5_000 },
      log: o.log,
    });
    return { key, conn, failures: 0, retryAt: -Infinity };
  }
}
