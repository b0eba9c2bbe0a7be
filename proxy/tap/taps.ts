/**
 * The proxy's live taps and the data path's side of them. The stacks check `taps.active` once per
 * request; with no tap taking requests that is all a request pays. With one, `tapExchange` matches
 * the request against each tap, queues RequestInit, then ResponseInit when the head arrives and
 * ResponseEnd (status, bytes, gRPC status or reset code, latency) when the body ends, as
 * linkerd2-proxy reports them. Bodies are passed through untouched: only chunk lengths are read.
 */
import {
  type HttpHeaders,
  type TapEvent,
  type TapEvent_Http,
  TapEvent_ProxyDirection,
} from "../../proto/tap_messages.ts";
import { toHttpMethod } from "../../proto/http_method.ts";
import { toTcpAddress } from "../../proto/ip.ts";
import type { Body, HeaderList, HttpRequest, HttpResponse } from "../http/message.ts";
import { Http2ClientError, Http2StreamReset } from "../http/h2/errors.ts";
import type { TapEndpoints } from "./match.ts";
import type { TapSession } from "./session.ts";

/** How many Observe calls may run at once on one proxy. */
export const DEFAULT_MAX_TAPS = 4;

/** A request's connection as tap reports it (built only while a tap is active). */
export interface TapContext extends TapEndpoints {
  direction: "inbound" | "outbound";
  /** `tls` and `client_id` (inbound), or `tls=loopback` (outbound), as Linkerd fills them. */
  sourceLabels: Readonly<Record<string, string>>;
  /** The endpoint's labels with `tls`/`server_id` (outbound), or `tls=loopback` (inbound). */
  destinationMeta: Readonly<Record<string, string>>;
}

export class TooManyTaps extends Error {
  override name = "TooManyTaps";
}

export class Taps {
  /** Sessions still taking requests; the data path's one check is `active !== 0`. */
  active = 0;
  readonly max: number;
  #sessions: TapSession[] = [];
  readonly #now: () => number;

  constructor(o: { max?: number; now?: () => number } = {}) {
    this.max = o.max ?? DEFAULT_MAX_TAPS;
    this.#now = o.now ?? (() => performance.now());
  }

  /** Registers a session; throws TooManyTaps when `max` are running. */
  add(s: TapSession): void {
    this.#sessions = this.#sessions.filter((x) => !x.finished);
    if (this.#sessions.length >= this.max) {
      throw new TooManyTaps(`${this.#sessions.length} taps are running on this proxy, the most it allows`);
    }
    this.#sessions.push(s);
    this.#recount();
  }

  /** Unregisters a session (its client went away or it finished). */
  remove(s: TapSession): void {
    this.#sessions = this.#sessions.filter((x) => x !== s);
    this.#recount();
  }

  #recount(): void {
    let n = 0;
    for (const s of this.#sessions) if (s.accepting) n++;
    this.active = n;
  }

  get running(): number {
    return this.#sessions.length;
  }

  /**
   * Sends `req` through `send`, reporting it to every tap it matches. Call only when `active`.
   * `ctx` is read once per request.
   */
  exchange(
    req: HttpRequest,
    ctx: TapContext,
    send: () => Promise<HttpResponse>,
  ): Promise<HttpResponse> {
    let followed: Followed[] | undefined;
    let base: BaseEvent | undefined;
    const t0 = this.#now();
    for (const s of this.#sessions) {
      if (!s.accepting || !s.match(req, ctx)) continue;
      const n = s.claim();
      if (n === undefined) continue;
      base ??= baseEvent(ctx);
      const id = { base: s.base, stream: BigInt(n) };
      const init = event(base, {
        event: {
          $case: "requestInit",
          value: {
            id,
            method: toHttpMethod(req.method),
            scheme: req.scheme === undefined ? undefined : schemeOf(req.scheme),
            authority: req.authority,
            path: req.path,
            headers: s.headers ? requestHeaders(req) : undefined,
          },
        },
      });
      // As Linkerd: a request whose first event finds the queue full is not followed.
      if (s.push(init)) {
        s.opened();
        (followed ??= []).push({ s, id });
      }
    }
    if (this.active !== 0) this.#recount();
    if (followed === undefined) return send();
    const f = followed;
    const b = base!;
    let sent: Promise<HttpResponse>;
    try {
      sent = send();
    } catch (e) {
      // A service that throws instead of rejecting must still end the requests taps follow.
      sent = Promise.reject(e);
    }
    return sent.then((res) => {
      const t1 = this.#now();
      const grpcInHead = numberOr(res.headers.get("grpc-status"));
      for (const { s, id } of f) {
        s.push(event(b, {
          event: {
            $case: "responseInit",
            value: {
              id,
              sinceRequestInit: duration(t1 - t0),
              httpStatus: res.status,
              headers: s.headers ? responseHeaders(res) : undefined,
            },
          },
        }));
      }
      if (res.upgrade !== undefined) {
        for (const x of f) endOf(x, b, t0, t1, this.#now(), 0, undefined, undefined);
        return res;
      }
      res.body = new TappedBody(res.body, (bytes, trailers, error) => {
        const t2 = this.#now();
        const grpc = numberOr(trailers?.get("grpc-status")) ?? grpcInHead;
        const eos = error !== undefined
          ? resetCode(error)
          : grpc === undefined
          ? undefined
          : { $case: "grpcStatusCode" as const, value: grpc };
        for (const x of f) endOf(x, b, t0, t1, t2, bytes, eos, x.s.headers ? trailers : undefined);
      });
      return res;
    }, (e) => {
      const t1 = this.#now();
      for (const x of f) {
        x.s.push(event(b, {
          event: {
            $case: "responseEnd",
            value: {
              id: x.id,
              sinceRequestInit: duration(t1 - t0),
              sinceResponseInit: undefined,
              responseBytes: 0n,
              eos: { end: resetCode(e) },
              trailers: undefined,
            },
          },
        }));
        x.s.ended();
      }
      throw e;
    });
  }
}

interface Followed {
  s: TapSession;
  id: { base: number; stream: bigint };
}

type BaseEvent = Omit<TapEvent, "event">;
type Eos = { $case: "grpcStatusCode"; value: number } | { $case: "resetErrorCode"; value: number };

function endOf(
  x: Followed,
  b: BaseEvent,
  t0: number,
  t1: number,
  t2: number,
  bytes: number,
  eos: Eos | undefined,
  trailers: HeaderList | undefined,
): void {
  x.s.push(event(b, {
    event: {
      $case: "responseEnd",
      value: {
        id: x.id,
        sinceRequestInit: duration(t2 - t0),
        sinceResponseInit: duration(t2 - t1),
        responseBytes: BigInt(bytes),
        eos: { end: eos },
        trailers: trailers ? headersOf([], trailers) : undefined,
      },
    },
  }));
  x.s.ended();
}

function event(base: BaseEvent, http: TapEvent_Http): TapEvent {
  return { ...base, event: { $case: "http", value: http } };
}

function baseEvent(ctx: TapContext): BaseEvent {
  return {
    proxyDirection: ctx.direction === "inbound"
      ? TapEvent_ProxyDirection.INBOUND
      : TapEvent_ProxyDirection.OUTBOUND,
    source: ctx.source ? toTcpAddress(ctx.source.ip, ctx.source.port) : undefined,
    sourceMeta: { labels: { ...ctx.sourceLabels } },
    destination: ctx.destination ? toTcpAddress(ctx.destination.ip, ctx.destination.port) : undefined,
    destinationMeta: { labels: { ...ctx.destinationMeta } },
    routeMeta: ctx.routeLabels ? { labels: { ...ctx.routeLabels } } : undefined,
  };
}

function schemeOf(s: string) {
  const l = s.toLowerCase();
  return l === "http"
    ? { type: { $case: "registered" as const, value: 0 } }
    : l === "https"
    ? { type: { $case: "registered" as const, value: 1 } }
    : { type: { $case: "unregistered" as const, value: s } };
}

const enc = new TextEncoder();

function headersOf(pseudo: [string, string][], h: HeaderList): HttpHeaders {
  const out: HttpHeaders = { headers: [] };
  for (const [name, value] of pseudo) out.headers.push({ name, value: enc.encode(value) });
  for (const [name, value] of h.entries()) out.headers.push({ name, value: enc.encode(value) });
  return out;
}

/** HTTP/2 requests list their pseudo-headers first, as Linkerd's tap does. */
function requestHeaders(req: HttpRequest): HttpHeaders {
  return headersOf(
    req.version === "HTTP/2"
      ? [[":method", req.method], [":scheme", req.scheme ?? ""], [":authority", req.authority], [
        ":path",
        req.path,
      ]]
      : [],
    req.headers,
  );
}

function responseHeaders(res: HttpResponse): HttpHeaders {
  return headersOf([[":status", String(res.status)]], res.headers);
}

function numberOr(v: string | undefined): number | undefined {
  if (v === undefined) return undefined;
  const n = Number(v);
  return Number.isInteger(n) && n >= 0 ? n : undefined;
}

/** An HTTP/2 reset's code when the failure was one (else no end code, as Linkerd). */
function resetCode(e: unknown): Eos | undefined {
  if (e instanceof Http2StreamReset) return { $case: "resetErrorCode", value: e.code };
  if (e instanceof Http2ClientError && e.code !== undefined) {
    return { $case: "resetErrorCode", value: e.code };
  }
  return undefined;
}

function duration(ms: number) {
  const ns = Math.max(0, Math.round(ms * 1e6));
  return { seconds: BigInt(Math.floor(ns / 1e9)), nanos: ns % 1e9 };
}

/**
 * A response body passed through while its length is summed; `done` is called once with the
 * bytes, the trailers, and the error when it failed or was cancelled.
 */
class TappedBody implements Body {
  readonly #inner: Body;
  readonly #done: (bytes: number, trailers: HeaderList | undefined, error: unknown) => void;
  #bytes = 0;
  #over = false;

  constructor(inner: Body, done: (bytes: number, trailers: HeaderList | undefined, error: unknown) => void) {
    this.#inner = inner;
    this.#done = done;
  }

  get length(): number | undefined {
    return this.#inner.length;
  }

  get trailers(): HeaderList | undefined {
    return this.#inner.trailers;
  }

  async read(): Promise<Uint8Array | null> {
    let c: Uint8Array | null;
    try {
      c = await this.#inner.read();
    } catch (e) {
      this.#end(e ?? new Error("body failed"));
      throw e;
    }
    return this.#seen(c);
  }

  readNow(): Uint8Array | null | undefined {
    let c: Uint8Array | null | undefined;
    try {
      c = this.#inner.readNow?.();
    } catch (e) {
      this.#end(e ?? new Error("body failed"));
      throw e;
    }
    return c === undefined ? undefined : this.#seen(c);
  }

  cancel(reason?: Error): void {
    this.#end(reason ?? new Http2StreamReset("the reader cancelled the body", 8));
    this.#inner.cancel(reason);
  }

  #seen(c: Uint8Array | null): Uint8Array | null {
    if (c === null) this.#end(undefined);
    else this.#bytes += c.length;
    return c;
  }

  #end(error: unknown): void {
    if (this.#over) return;
    this.#over = true;
    this.#done(this.#bytes, error === undefined ? this.#inner.trailers : undefined, error);
  }
}
