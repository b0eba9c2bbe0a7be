/**
 * The inbound HTTP stack: serves one accepted (possibly mesh-TLS) connection as HTTP/1 or HTTP/2
 * and, per request, authorizes it against its route of the port's Server policy (403 / gRPC
 * PERMISSION_DENIED, 404 for no route), replaces `l5d-client-id` with the mTLS client identity,
 * undoes the outbound proxy's HTTP/2 upgrade (`l5d-orig-proto`), and forwards to the application
 * at the address the client dialled (the pod's own ip:port rather than 127.0.0.1, so a port the
 * app bound to loopback only stays private) — one HTTP/1 pool and one HTTP/2 connection per
 * ip:port, shared by all clients.
 * Every request is counted in the inbound HTTP metrics with its server, route and authorization.
 */
import type * as net from "node:net";
import type { Duplex } from "node:stream";
import type { Log } from "../../core/log.ts";
import type { ConnMeta } from "../authorize.ts";
import {
  denialResponse,
  HttpAuthorizer,
  type HttpServerPolicy,
  type InboundDenial,
  type InboundPermit,
} from "./authorize.ts";
import {
  type CounterHandle,
  httpErrorKind,
  type HttpMetrics,
  type InboundScope,
  instrumentResponse,
  type RequestRecorder,
  type TlsLabels,
} from "../../metrics/http_metrics.ts";
import { connectTcp } from "../../transport/connect.ts";
import { type Rng, systemRng } from "../../core/rng.ts";
import { setClientId } from "../../http/client_id_header.ts";
import { Http1Pool, serveHttp1 } from "../../http/h1/mod.ts";
import { Http2Connection } from "../../http/h2/client.ts";
import { serveHttp2 } from "../../http/h2/server.ts";
import { type HttpResponse, type HttpService, isGrpc } from "../../http/message.ts";
import { markDowngradedResponse, takeOrigProto } from "../../http/orig_proto.ts";
import type { AccessLog } from "./access_log.ts";
import type { TapContext, Taps } from "../../tap/taps.ts";

/** `ip:port`, with brackets around an IPv6 address. */
function addrKey(ip: string, port: number): string {
  return ip.includes(":") ? `[${ip}]:${port}` : `${ip}:${port}`;
}

export interface InboundHttpDeps {
  metrics: HttpMetrics;
  connectTimeoutMs: number;
  log: Log;
  /** Aborted when the proxy starts draining: connections finish their requests and close. */
  drain?: AbortSignal;
  rng?: Rng;
  /** LINKERD2_PROXY_ACCESS_LOG: one line per request; absent, requests cost nothing extra. */
  accessLog?: AccessLog;
  /** Live taps: a request pays one check of `taps.active` while none is running. */
  taps?: Taps;
}

export interface InboundHttpConn {
  /** The application address requests go to: the pod address the client dialled. */
  ip: string;
  /** The application port requests go to. */
  port: number;
  /** Original destination, for `target_addr`. */
  targetAddr: string;
  conn: ConnMeta;
  /** The client's `ip:port`, for the access log (the IP alone when absent). */
  clientAddr?: string;
  tls: TlsLabels;
  /** The port's current HTTP policy (read per request, so policy updates apply to open connections). */
  policy: () => HttpServerPolicy;
}

export class InboundHttp {
  readonly #deps: InboundHttpDeps;
  // Keyed by ip:port: a pod with several addresses gets one pool per address.
  readonly #h1 = new Map<string, Http1Pool>();
  readonly #h2 = new Map<string, Http2Connection>();
  /** Bumped by `close()`: services drop the upstreams they looked up before. */
  #generation = 0;

  constructor(deps: InboundHttpDeps) {
    this.#deps = deps;
  }

  #pool(ip: string, port: number): Http1Pool {
    const key = addrKey(ip, port);
    let p = this.#h1.get(key);
    if (!p) {
      const timeout = this.#deps.connectTimeoutMs;
      p = new Http1Pool({ connect: (): Promise<Duplex> => connectTcp(ip, port, timeout) });
      this.#h1.set(key, p);
    }
    return p;
  }

  #conn(ip: string, port: number): Http2Connection {
    const key = addrKey(ip, port);
    let c = this.#h2.get(key);
    if (!c) {
      const timeout = this.#deps.connectTimeoutMs;
      c = new Http2Connection({
        connect: () => connectTcp(ip, port, timeout),
        name: key,
        connectTimeoutMs: timeout,
        log: this.#deps.log,
      });
      this.#h2.set(key, c);
    }
    return c;
  }

  /** The per-connection service (exported for tests of the stack without sockets). */
  service(c: InboundHttpConn): HttpService {
    return this.#service(c, false);
  }

  /**
   * `countErrors`: requests the proxy fails itself (e.g. the application refused the connection)
   * are counted in the inbound error metric (by `serve`, in the same function rather than in a
   * wrapper with a promise and a closure per request).
   */
  #service(c: InboundHttpConn, countErrors: boolean): HttpService {
    const m = this.#deps.metrics;
    const rng = this.#deps.rng ?? systemRng;
    const authorizer = new HttpAuthorizer(c.conn);
    // Decisions are cached per connection and route, so their objects key the counters.
    const counters = new WeakMap<InboundPermit | InboundDenial, CounterHandle>();
    let scope: InboundScope | undefined;
    let scopeServer: unknown;
    // The connection's upstreams, looked up once instead of by an ip:port string per request;
    // `close()` bumps the generation so a later request looks them up again as it did before.
    let pool: Http1Pool | undefined;
    let h2: Http2Connection | undefined;
    let generation = this.#generation;
    const countAllowed = (permit: InboundPermit): void => {
      let h = counters.get(permit);
      if (!h) {
        h = m.authzAllow({
          targetAddr: c.targetAddr,
          tls: c.tls,
          server: permit.server,
          route: permit.route,
          authz: permit.authz,
        });
        counters.set(permit, h);
      }
      h.inc();
    };
    const count = (e: unknown): void => {
      if (countErrors) m.inboundError(httpErrorKind(e)).inc();
    };
    const failed = (e: unknown): never => {
      count(e);
      throw e;
    };
    // Not an async function: its frame was the largest allocation of the inbound request path;
    // the response is finished in two callbacks on the upstream's promise instead.
    return (req, signal) => {
      let rec: RequestRecorder | undefined;
      try {
        const grpc = isGrpc(req.headers);
        const d = authorizer.authorize(c.policy(), req, rng);
        if (!d.allow) {
          // A rate-limited request was authorized first: counted as allowed, then as limited (as Linkerd).
          if (d.limited) countAllowed(d.limited.permit);
          let h = counters.get(d);
          if (!h) {
            h = d.reason === "route_not_found"
              ? m.routeNotFound({ targetAddr: c.targetAddr, tls: c.tls, server: d.server })
              : d.limited
              ? m.localRateLimit({
                targetAddr: c.targetAddr,
                tls: c.tls,
                server: d.server,
                policy: d.limited.policy,
                scope: d.limited.scope,
              })
              : m.authzDeny({ targetAddr: c.targetAddr, tls: c.tls, server: d.server, route: d.route! });
            counters.set(d, h);
          }
          h.inc();
          return Promise.resolve(denialResponse(d, grpc));
        }
        const permit = "permit" in d ? d.permit : d;
        countAllowed(permit);
        if ("response" in d) return Promise.resolve(d.response);
        setClientId(req.headers, authorizer.clientId);
        const orig = takeOrigProto(req);
        if (scope === undefined || scopeServer !== permit.server) {
          scope = m.inboundScope({ targetAddr: c.targetAddr, tls: c.tls, server: permit.server });
          scopeServer = permit.server;
        }
        const r = rec = scope.get(req.authority, permit.route, permit.authz).start(grpc);
        if (generation !== this.#generation) {
          pool = h2 = undefined;
          generation = this.#generation;
        }
        let sent: Promise<HttpResponse>;
        if (orig !== undefined) {
          req.version = orig;
          sent = (pool ??= this.#pool(c.ip, c.port)).request(req, signal);
        } else if (req.version === "HTTP/2") {
          sent = (h2 ??= this.#conn(c.ip, c.port)).request(req, signal);
        } else {
          sent = (pool ??= this.#pool(c.ip, c.port)).request(req, signal);
        }
        return sent.then((res) => {
          try {
            if (orig !== undefined) markDowngradedResponse(res, orig);
          } catch (e) {
            r.fail(e);
            return failed(e);
          }
          try {
            return instrumentResponse(r, res);
          } catch (e) {
            return failed(e);
          }
        }, (e) => {
          r.fail(e);
          return failed(e);
        });
      } catch (e) {
        rec?.fail(e);
        count(e);
        return Promise.reject(e);
      }
    };
  }

  /** Serves the connection until it closes. */
  async serve(sock: net.Socket, version: "http1" | "http2", c: InboundHttpConn): Promise<void> {
    let svc = this.#service(c, true);
    const accessLog = this.#deps.accessLog;
    if (accessLog !== undefined) {
      svc = accessLog.wrap(svc, {
        clientAddr: c.clientAddr ?? c.conn.clientIp,
        clientId: c.conn.tls?.clientId,
      });
    }
    const taps = this.#deps.taps;
    if (taps !== undefined) svc = tapInbound(taps, svc, c);
    const drain = this.#deps.drain;
    if (version === "http2") {
      await serveHttp2(sock, svc, { log: this.#deps.log, drain }).closed;
    } else {
      await serveHttp1(sock, svc, {
        signal: drain,
        // A client may half-close (FIN, or TLS close_notify) once its request is sent and still
        // wait for the answer; aborting on it lost responses the app was about to give.
        halfClose: true,
        onError: (e) => this.#deps.log("debug", `inbound http ${c.targetAddr}: ${e.message}`),
      });
    }
  }

  close(): void {
    this.#generation++;
    for (const p of this.#h1.values()) p.close();
    for (const c of this.#h2.values()) c.close(1000).catch(() => {});
    this.#h1.clear();
    this.#h2.clear();
  }
}

/** `ip:port` / `[v6]:port` split (undefined when it is not one). */
function splitAddr(a: string | undefined): { ip: string; port: number } | undefined {
  if (a === undefined) return undefined;
  const i = a.lastIndexOf(":");
  if (i < 0) return undefined;
  const ip = a.slice(0, i).replace(/^\[|\]$/g, "");
  const port = Number(a.slice(i + 1));
  return Number.isInteger(port) ? { ip, port } : undefined;
}

/**
 * Reports the connection's requests to live taps, with Linkerd's inbound labels: the client's
 * `tls`/`client_id` (or why there is no TLS), `tls=loopback` toward the application.
 */
function tapInbound(taps: Taps, inner: HttpService, c: InboundHttpConn): HttpService {
  let ctx: TapContext | undefined;
  return (req, signal) => {
    if (taps.active === 0) return inner(req, signal);
    ctx ??= {
      direction: "inbound",
      source: splitAddr(c.clientAddr) ?? { ip: c.conn.clientIp, port: 0 },
      destination: splitAddr(c.targetAddr),
      destinationLabels: undefined,
      routeLabels: undefined,
      sourceLabels: c.conn.tls
        ? { tls: "true", client_id: c.conn.tls.clientId ?? "" }
        : { tls: "no_tls_from_remote" },
      destinationMeta: { tls: "loopback" },
    };
    return taps.exchange(req, ctx, () => inner(req, signal));
  };
}
