/**
 * The HTTP client for one outbound endpoint, as Linkerd's proxy talks to it:
 * - meshed endpoints get mesh TLS to their identity; with opaque transport the connection goes to
 *   the peer's inbound port and starts with a transport header naming the port and the session
 *   protocol, else it goes to the port itself;
 * - an endpoint hinted `h2` gets one multiplexed HTTP/2 connection, and HTTP/1 requests travel over
 *   it marked with `l5d-orig-proto` (restored on the response);
 * - anything else speaks the request's own version (an HTTP/1 pool and an HTTP/2 connection).
 * Every request is recorded in the endpoint's outbound metrics (Linkerd's endpoint labels), and
 * every connection in the TCP metrics (`direction="outbound",peer="dst"`, as Linkerd counts the
 * connections that carry HTTP to an endpoint).
 *
 * HTTP/2 stays behind this one seam (and the inbound stack's), so it can be swapped wholesale.
 */
import type * as net from "node:net";
import type { Duplex } from "node:stream";
import type { Endpoint } from "../../core/endpoint.ts";
import type { SessionProtocol } from "../../../proto/gen_messages/transport_header.ts";
import { encodeTransportHeader, TRANSPORT_HEADER_ALPN } from "../../../proto/transport_header_frame.ts";
import type { Log } from "../../core/log.ts";
import type { ResponseClassifier } from "../../metrics/response_class.ts";
import { type HttpMetrics, instrumentResponse, type OutboundScope } from "../../metrics/http_metrics.ts";
import type { TcpMetrics } from "../../metrics/tcp_metrics.ts";
import { sortedPrefixed } from "../../metrics/http_labels.ts";
import { headerTarget, type Target } from "../resolve.ts";
import { connectTcp } from "../../transport/connect.ts";
import type { EndpointReachability } from "../reachability.ts";
import type { MeshTls } from "../../transport/tls.ts";
import { Http1Pool } from "../../http/h1/mod.ts";
import { Http2Connection } from "../../http/h2/client.ts";
import { Http2ClientError } from "../../http/h2/errors.ts";
import { type HttpRequest, type HttpResponse, isGrpc } from "../../http/message.ts";
import { clearResponseMark, markUpgraded } from "../../http/orig_proto.ts";
import type { TapContext, Taps } from "../../tap/taps.ts";

export interface EndpointClientDeps {
  tls: MeshTls;
  metrics: HttpMetrics;
  connectTimeoutMs: number;
  log: Log;
  /** Live taps: a request pays one check of `taps.active` while none is running. */
  taps?: Taps;
  /** The proxy's TCP metrics: each connection to an endpoint is counted (bytes read at scrape). */
  tcp?: TcpMetrics;
  /** Where failed connects (and HTTP/2 connections that stop answering PINGs) are reported. */
  reachability?: EndpointReachability;
}

/**
 * PINGs on an endpoint's HTTP/2 connection while it carries streams: a peer that vanished without a
 * FIN (a dead node) is noticed within interval + timeout, its endpoint leaves rotation, and its
 * streams fail instead of hanging until discovery drops it. The timeout leaves room for a loaded
 * peer's event loop; a false positive only costs a reconnect.
 */
const ENDPOINT_KEEPALIVE = { intervalMs: 2_000, timeoutMs: 3_000 };

/** Errors of connects that failed before any byte of a request was written (see `neverSent`). */
const connectFailures = new WeakSet<object>();

/**
 * True when a request failed because its connection could not be made, so nothing of it reached
 * the endpoint and sending it to another endpoint is safe whatever its method or body.
 */
export function neverSent(e: unknown): boolean {
  if (e instanceof Http2ClientError) return e.reason === "connect_failed";
  return typeof e === "object" && e !== null && connectFailures.has(e);
}

const HTTP1: SessionProtocol = { kind: { $case: "http1", value: {} } };
const HTTP2: SessionProtocol = { kind: { $case: "http2", value: {} } };

/** `ip:port` / `[v6]:port`. */
function addrText(ip: string, port: number): string {
  return ip.includes(":") ? `[${ip}]:${port}` : `${ip}:${port}`;
}

export class EndpointClient {
  readonly target: Target;
  readonly addr: string;
  /** HTTP/1 requests go over HTTP/2 (the endpoint's `h2` hint, meshed only). */
  readonly upgrade: boolean;
  readonly #deps: EndpointClientDeps;
  readonly #meta: Endpoint | undefined;
  readonly #scope: OutboundScope;
  readonly #tcpLabels: Record<string, string>;
  #h1: Http1Pool | undefined;
  #h2: Http2Connection | undefined;
  /** A transport opened ahead of the first HTTP/2 request (see `warm`). */
  #spare: Promise<net.Socket> | undefined;

  constructor(target: Target, meta: Endpoint | undefined, deps: EndpointClientDeps) {
    this.target = target;
    this.#meta = meta;
    this.#deps = deps;
    this.addr = addrText(target.ip, target.kind === "meshed" ? target.targetPort : target.port);
    this.upgrade = target.kind === "meshed" && meta?.h2 === true;
    const tls: Record<string, string> = target.kind === "meshed"
      ? { tls: "true", server_id: target.identity }
      : { tls: "no_identity", no_tls_reason: target.reason };
    this.#scope = deps.metrics.outboundScope({ targetAddr: this.addr, tls, dst: meta?.metricLabels });
    // As Linkerd's endpoint connection labels: the endpoint's Destination metric labels as dst_*.
    this.#tcpLabels = { direction: "outbound", peer: "dst", ...tls, target_addr: this.addr };
    sortedPrefixed(this.#tcpLabels, "dst_", meta?.metricLabels);
  }

  /** Same wire behaviour as `other` would have (so a discovery update can keep this client). */
  sameAs(target: Target, meta: Endpoint | undefined): boolean {
    const t = this.target;
    const upgrade = target.kind === "meshed" && meta?.h2 === true;
    if (upgrade !== this.upgrade || t.kind !== target.kind || t.ip !== target.ip) return false;
    if (t.kind === "plain" && target.kind === "plain") return t.port === target.port;
    if (t.kind === "meshed" && target.kind === "meshed") {
      return t.connectPort === target.connectPort && t.targetPort === target.targetPort &&
        t.identity === target.identity && t.serverName === target.serverName &&
        t.opaqueTransport === target.opaqueTransport && t.gateway?.name === target.gateway?.name &&
        t.gateway?.port === target.gateway?.port;
    }
    return false;
  }

  /** Counts a new connection to the endpoint until it closes (with its error code, if any). */
  #counted(socket: net.Socket): net.Socket {
    const tcp = this.#deps.tcp;
    if (tcp === undefined) return socket;
    const rec = tcp.open(this.#tcpLabels);
    rec.track(socket);
    let errno: string | undefined;
    socket.on("error", (e: Error & { code?: string }) => errno ??= e.code);
    socket.once("close", () => rec.close(errno));
    return socket;
  }

  /** Where a reachability probe connects: the port the endpoint's connections go to. */
  get connectPort(): number {
    const t = this.target;
    return t.kind === "meshed" ? t.connectPort : t.port;
  }

  async #connect(protocol: SessionProtocol, signal: AbortSignal): Promise<net.Socket> {
    const r = this.#deps.reachability;
    if (r === undefined) return await this.#dial(protocol, signal);
    let s: net.Socket;
    try {
      s = await this.#dial(protocol, signal);
    } catch (e) {
      // A connect given up by its caller says nothing about the endpoint.
      if (!signal.aborted) {
        r.failed(this.addr, this.target.ip, this.connectPort);
        if (typeof e === "object" && e !== null) connectFailures.add(e);
      }
      throw e;
    }
    r.succeeded(this.addr);
    return s;
  }

  async #dial(protocol: SessionProtocol, signal: AbortSignal): Promise<net.Socket> {
    const t = this.target;
    const d = this.#deps;
    signal.throwIfAborted();
    if (t.kind === "plain") return this.#counted(await connectTcp(t.ip, t.port, d.connectTimeoutMs));
    const { socket, alpn } = await d.tls.connect({
      host: t.ip,
      port: t.connectPort,
      serverName: t.serverName,
      expectedIdentity: t.identity,
      alpn: t.opaqueTransport ? [TRANSPORT_HEADER_ALPN] : undefined,
      timeoutMs: d.connectTimeoutMs,
    });
    if (t.opaqueTransport) {
      if (alpn !== TRANSPORT_HEADER_ALPN) {
        socket.destroy();
        throw new Error(`peer ${t.ip}:${t.connectPort} did not negotiate ${TRANSPORT_HEADER_ALPN}`);
      }
      socket.write(encodeTransportHeader({ ...headerTarget(t), sessionProtocol: protocol }));
    }
    return this.#counted(socket);
  }

  #pool(): Http1Pool {
    return this.#h1 ??= new Http1Pool({
      connect: (signal): Promise<Duplex> => this.#connect(HTTP1, signal),
      idleTimeoutMs: 60_000,
    });
  }

  /**
   * Opens the endpoint's HTTP/2 transport (TCP + mesh TLS + header) before any request needs it,
   * as Linkerd's balancer only routes to connected endpoints: otherwise the first request's RTT
   * would include the handshakes and peak-EWMA would shun a new endpoint for many seconds.
   */
  warm(): void {
    if (!this.upgrade || this.#h2 !== undefined || this.#spare !== undefined) return;
    const spare = this.#connect(HTTP2, AbortSignal.timeout(this.#deps.connectTimeoutMs + 1000));
    spare.catch(() => {});
    this.#spare = spare;
    this.#conn();
  }

  #connectH2 = async (signal: AbortSignal): Promise<net.Socket> => {
    const spare = this.#spare;
    this.#spare = undefined;
    if (spare) {
      const s = await spare.catch(() => undefined);
      if (s && !s.destroyed && s.readyState === "open") return s;
      s?.destroy();
    }
    return await this.#connect(HTTP2, signal);
  };

  #conn(): Http2Connection {
    return this.#h2 ??= new Http2Connection({
      connect: this.#connectH2,
      name: this.addr,
      connectTimeoutMs: this.#deps.connectTimeoutMs + 1000,
      keepAlive: ENDPOINT_KEEPALIVE,
      onKeepAliveTimeout: () => this.#deps.reachability?.failed(this.addr, this.target.ip, this.connectPort),
      log: this.#deps.log,
    });
  }

  /** Sends one request; `classifier` is the route's response classes (profile routes). */
  request(req: HttpRequest, signal: AbortSignal, classifier?: ResponseClassifier): Promise<HttpResponse> {
    const taps = this.#deps.taps;
    if (taps === undefined || taps.active === 0) return this.#send(req, signal, classifier);
    const ctx = this.#tap ??= this.#tapContext();
    const src = req.tapSource;
    return taps.exchange(req, src ? { ...ctx, source: src } : ctx, () => this.#send(req, signal, classifier));
  }

  #tap: TapContext | undefined;

  /**
   * Linkerd's outbound endpoint labels for tap: the endpoint's metadata with `tls`/`server_id`
   * (or why no TLS). The source is the application's address the logical layer put on the request.
   */
  #tapContext(): TapContext {
    const t = this.target;
    const labels = this.#meta?.metricLabels ?? {};
    return {
      direction: "outbound",
      source: undefined,
      destination: { ip: t.ip, port: t.kind === "meshed" ? t.targetPort : t.port },
      destinationLabels: labels,
      routeLabels: undefined,
      sourceLabels: { tls: "loopback" },
      destinationMeta: t.kind === "meshed"
        ? { ...labels, tls: "true", server_id: t.identity }
        : { ...labels, tls: t.reason },
    };
  }

  async #send(req: HttpRequest, signal: AbortSignal, classifier?: ResponseClassifier): Promise<HttpResponse> {
    const rec = this.#scope.get(req.authority).start(isGrpc(req.headers), classifier);
    const gw = this.target.kind === "meshed" ? this.target.gateway : undefined;
    // As Linkerd's proxy does for a gateway endpoint (authority override): the request names the
    // remote Service, so the target app and its routes' hostnames see their own name, not the mirror's.
    if (gw !== undefined) req = { ...req, authority: `${gw.name}:${gw.port}` };
    // Upgrade requests (WebSocket) stay HTTP/1: their connection is handed over after the 101.
    const upgraded = this.upgrade && req.version !== "HTTP/2" && !req.headers.has("upgrade");
    let res: HttpResponse;
    try {
      if (upgraded) {
        markUpgraded(req);
        res = await this.#conn().request(req, signal);
        clearResponseMark(res);
      } else if (req.version === "HTTP/2") {
        res = await this.#conn().request(req, signal);
      } else {
        res = await this.#pool().request(req, signal);
      }
    } catch (e) {
      rec.fail(e);
      throw e;
    }
    return instrumentResponse(rec, res);
  }

  close(graceMs: number): void {
    this.#spare?.then((s) => s.destroy(), () => {});
    this.#spare = undefined;
    this.#h1?.close();
    this.#h2?.close(graceMs).catch(() => {});
  }
}
