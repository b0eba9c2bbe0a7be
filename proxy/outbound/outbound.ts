/**
 * The outbound listener (4140): reads where the app was connecting, resolves it, and forwards
 * either over mesh TLS to the peer proxy (with the transport header when the endpoint asks for
 * opaque transport) or as plain TCP to the original destination.
 *
 * The outbound policy decides first: `detect` reads the first bytes (HTTP/1 or HTTP/2 go to the
 * HTTP stack; opaque, TLS or a detect timeout stay TCP), `http1`/`http2`/`grpc` go to the HTTP
 * stack at once, `opaque`/`tls` are TCP.
 */
import type * as net from "node:net";
import { encodeTransportHeader, TRANSPORT_HEADER_ALPN } from "../../proto/transport_header_frame.ts";
import type { OutboundView } from "../discovery/outbound_view.ts";
import { addrKey, type Discovery } from "../discovery/clients.ts";
import { DetectError, detectProtocol } from "../http/detect.ts";
import type { OutboundHttp } from "./http/logical.ts";
import type { Log } from "../core/log.ts";
import type { TcpMetrics } from "../metrics/tcp_metrics.ts";
import { connectTcp } from "../transport/connect.ts";
import type { ConnTracker } from "../transport/conn_tracker.ts";
import { forward } from "../transport/forward.ts";
import type { OrigDst } from "../transport/orig_dst.ts";
import type { MeshTls } from "../transport/tls.ts";
import { endpointTarget, headerTarget, resolveOutbound, type Target, viaDestination } from "./resolve.ts";
import { chooseL4Backend, type L4Policy, selectL4Route } from "../route/l4.ts";
import { l4RouteLabels, type L4RouteMetrics } from "../metrics/l4_route_metrics.ts";
import { MAX_HELLO_BYTES, parseClientHello } from "../transport/client_hello.ts";
import { peek } from "../transport/peek.ts";
import { type Rng, systemRng } from "../core/rng.ts";
import type { EndpointReachability } from "./reachability.ts";

/** How long a new destination's first connection waits for its ServiceProfile. */
const PROFILE_WAIT_MS = 1000;

export interface OutboundOptions {
  /** Our own listener ports: a connection whose original destination is one of them would loop. */
  listenPorts: Set<number>;
  connectTimeoutMs: number;
  discoveryTimeoutMs: number;
  /** Detect timeout when the policy's is missing or invalid. */
  detectTimeoutMs: number;
  discovery: Discovery;
  http: OutboundHttp;
  origDst: OrigDst;
  tls: MeshTls;
  metrics: TcpMetrics;
  tracker: ConnTracker;
  log: Log;
  /** Per-route connection metrics of opaque and TLS routes (`outbound_{tcp,tls}_route_*`). */
  routeMetrics?: L4RouteMetrics;
  rng?: Rng;
  /** Endpoints whose connects fail (shared with the HTTP balancers): skipped while others remain. */
  reachability?: EndpointReachability;
}

export class Outbound {
  #o: OutboundOptions;

  constructor(o: OutboundOptions) {
    this.#o = o;
  }

  #fail(sock: net.Socket, error: string, target: string, message: string): void {
    this.#o.metrics.outboundErrors.inc({ error, target_addr: target });
    this.#o.log("info", `outbound ${sock.remoteAddress}:${sock.remotePort} → ${target} failed: ${message}`);
    sock.destroy();
  }

  handle = (sock: net.Socket): void => {
    sock.on("error", () => {});
    sock.pause();
    this.#o.tracker.add(sock);
    this.#handle(sock).catch((e) => {
      this.#o.log("warn", `outbound connection failed: ${(e as Error).message}`);
      sock.destroy();
    });
  };

  #isDown = (key: string): boolean => this.#o.reachability?.isDown(key) ?? false;

  /** Connects to the target; a meshed endpoint's failure or success goes to the reachability registry. */
  async #connect(t: Target): Promise<{ socket: net.Socket; labels: Record<string, string> }> {
    const r = this.#o.reachability;
    if (r === undefined || t.kind !== "meshed") return await this.#dial(t);
    const key = addrKey(t.ip, t.targetPort);
    try {
      const out = await this.#dial(t);
      r.succeeded(key);
      return out;
    } catch (e) {
      r.failed(key, t.ip, t.connectPort);
      throw e;
    }
  }

  async #dial(t: Target): Promise<{ socket: net.Socket; labels: Record<string, string> }> {
    const o = this.#o;
    if (t.kind === "plain") {
      return {
        socket: await connectTcp(t.ip, t.port, o.connectTimeoutMs),
        labels: { tls: "no_identity", no_tls_reason: t.reason },
      };
    }
    const { socket, alpn } = await o.tls.connect({
      host: t.ip,
      port: t.connectPort,
      serverName: t.serverName,
      expectedIdentity: t.identity,
      alpn: t.opaqueTransport ? [TRANSPORT_HEADER_ALPN] : undefined,
      timeoutMs: o.connectTimeoutMs,
    });
    if (t.opaqueTransport) {
      if (alpn !== TRANSPORT_HEADER_ALPN) {
        socket.destroy();
        throw new Error(`peer ${t.ip}:${t.connectPort} did not negotiate ${TRANSPORT_HEADER_ALPN}`);
      }
      socket.write(encodeTransportHeader({ ...headerTarget(t), sessionProtocol: undefined }));
    }
    return { socket, labels: { tls: "true", server_id: t.identity } };
  }

  /** The HTTP version to serve the connection with (undefined for TCP), and the policy it came from. */
  async #httpProtocol(
    sock: net.Socket,
    dst: { ip: string; port: number },
    target: string,
  ): Promise<{ http: "http1" | "http2" | undefined; policy?: OutboundView }> {
    const o = this.#o;
    const h = o.discovery.outbound.subscribe({ ip: dst.ip, port: dst.port });
    const p = o.discovery.profile.subscribe(addrKey(dst.ip, dst.port));
    let policy: OutboundView | undefined;
    try {
      // Both lookups run in parallel; a profile that never comes (a control plane without
      // profiles) is waited for only while its watch is new, so later connections do not pay.
      const profileWait = p.openedAt + PROFILE_WAIT_MS - Date.now();
      const [pv, fv] = await Promise.all([
        h.ready(o.discoveryTimeoutMs),
        profileWait > 0 ? p.ready(profileWait) : p.current(),
      ]);
      // The profile's opaque_protocol wins over the policy (Linkerd's order).
      if (fv.state?.opaqueProtocol) return { http: undefined };
      policy = pv.state;
    } finally {
      h.release();
      p.release();
    }
    switch (policy?.protocol) {
      case "http1":
        return { http: "http1", policy };
      case "http2":
      case "grpc":
        return { http: "http2", policy };
      case "detect": {
        const d = await detectProtocol(sock, policy.detectTimeoutMs ?? o.detectTimeoutMs);
        if (d.timedOut) {
          o.metrics.outboundErrors.inc({ error: "detect_timeout", target_addr: target });
          o.log(
            "debug",
            `outbound ${addrKey(dst.ip, dst.port)}: protocol detection timed out, forwarding as TCP`,
          );
        }
        return { http: d.protocol === "opaque" ? undefined : d.protocol, policy };
      }
      default:
        return { http: undefined, policy };
    }
  }

  /**
   * A TCP connection under the policy's opaque or TLS routes: the route (TLS: by SNI), its refusal
   * (an EgressNetwork's Deny is a `forbidden` route: the connection is closed, as Linkerd refuses
   * it), then its backend. Returns the target to connect to and the route's close counter, or
   * undefined when the connection was refused (and closed here).
   */
  async #viaRoutes(
    sock: net.Socket,
    dst: { ip: string; port: number },
    target: string,
    l4: L4Policy,
  ): Promise<{ resolved: Target; done: (error?: string) => void } | undefined> {
    const o = this.#o;
    let sni: string | undefined;
    if (l4.protocol === "tls") {
      const p = await peek(
        sock,
        (b) => parseClientHello(b).kind !== "incomplete",
        MAX_HELLO_BYTES,
        o.detectTimeoutMs,
      );
      const h = parseClientHello(p.bytes);
      sni = h.kind === "tls" ? h.sni : undefined;
    }
    const route = selectL4Route(l4, sni);
    if (!route) {
      this.#fail(sock, "no_route", target, `no ${l4.protocol} route matches${sni ? ` SNI ${sni}` : ""}`);
      return undefined;
    }
    const labels = l4RouteLabels(l4.parent, route.meta, l4.protocol === "tls" ? sni ?? "" : undefined);
    const done = o.routeMetrics?.open(l4.protocol, labels) ?? (() => {});
    const routeName = `${route.meta.kind} ${
      route.meta.namespace ? `${route.meta.namespace}/` : ""
    }${route.meta.name}`;
    if (route.refused) {
      const error = route.refused === "forbidden" ? "forbidden" : "invalid_backend";
      done(error);
      this.#fail(sock, error, target, `refused by ${routeName} (${route.refused})`);
      return undefined;
    }
    const b = chooseL4Backend(route, o.rng ?? systemRng);
    const why = !b
      ? "the route has no backends"
      : b.refused ?? (b.target.kind === "invalid" ? b.target.message : undefined);
    if (!b || why) {
      done("invalid_backend");
      this.#fail(sock, "invalid_backend", target, `${routeName}: ${why}`);
      return undefined;
    }
    let resolved: Target;
    try {
      const t = b.target;
      if (t.kind === "balancer") {
        resolved = await viaDestination(o.discovery, t.path, dst, o.discoveryTimeoutMs, this.#isDown);
      } else if (t.kind === "forward" && t.endpoint.identity) resolved = endpointTarget(t.endpoint);
      else if (t.kind === "forward" && l4.parent.kind === "EgressNetwork") {
        // Egress leaves the cluster: nothing there is meshed, so connect to the address as is.
        resolved = { kind: "plain", ip: t.endpoint.ip, port: t.endpoint.port, reason: "egress" };
      } else {
        resolved = await viaDestination(
          o.discovery,
          addrKey(dst.ip, dst.port),
          dst,
          o.discoveryTimeoutMs,
          this.#isDown,
        );
      }
    } catch (e) {
      done("discovery");
      this.#fail(sock, "discovery", target, (e as Error).message);
      return undefined;
    }
    return { resolved, done };
  }

  /**
   * The application's connection in the TCP families as Linkerd's outbound server counts it
   * (`peer="src"`, plaintext from loopback); its bytes are read from the socket at scrape and close.
   */
  #countAccepted(sock: net.Socket, target: string): void {
    const rec = this.#o.metrics.open({
      direction: "outbound",
      peer: "src",
      tls: "no_identity",
      no_tls_reason: "loopback",
      target_addr: target,
    });
    rec.track(sock);
    let errno: string | undefined;
    sock.on("error", (e: Error & { code?: string }) => errno ??= e.code);
    sock.once("close", () => rec.close(errno));
  }

  async #handle(sock: net.Socket): Promise<void> {
    const o = this.#o;
    let dst;
    try {
      dst = o.origDst.lookup(sock);
    } catch (e) {
      this.#fail(sock, "orig_dst", "unknown", (e as Error).message);
      return;
    }
    const target = dst.ip.includes(":") ? `[${dst.ip}]:${dst.port}` : `${dst.ip}:${dst.port}`;
    if (o.listenPorts.has(dst.port) && (dst.ip.startsWith("127.") || dst.ip === "::1")) {
      this.#fail(sock, "loop", target, "connection addressed to the proxy itself");
      return;
    }
    this.#countAccepted(sock, target);
    let http: "http1" | "http2" | undefined;
    let policy: OutboundView | undefined;
    try {
      ({ http, policy } = await this.#httpProtocol(sock, dst, target));
    } catch (e) {
      if (e instanceof DetectError) {
        sock.destroy();
        return;
      }
      throw e;
    }
    if (http !== undefined) {
      try {
        await o.http.serve(sock, dst, http);
      } finally {
        sock.destroy();
      }
      return;
    }
    let resolved: Target;
    let done: (error?: string) => void = () => {};
    if (policy?.l4Routes) {
      const r = await this.#viaRoutes(sock, dst, target, policy.l4Routes);
      if (!r) return;
      ({ resolved, done } = r);
    } else {
      try {
        resolved = await resolveOutbound(o.discovery, dst, o.discoveryTimeoutMs, this.#isDown);
      } catch (e) {
        this.#fail(sock, "discovery", target, (e as Error).message);
        return;
      }
    }
    let up;
    try {
      up = await this.#connect(resolved);
    } catch (e) {
      const error = resolved.kind === "meshed" ? "tls_connect" : "connect";
      done(error);
      this.#fail(sock, error, target, (e as Error).message);
      return;
    }
    o.tracker.add(up.socket);
    const rec = o.metrics.open({ direction: "outbound", peer: "dst", ...up.labels, target_addr: target });
    sock.resume();
    forward(sock, up.socket, {
      aToB: rec.write,
      bToA: rec.read,
      closed: (e) => {
        rec.close(e?.code);
        done(e?.code);
      },
    });
  }
}
