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
import { resolveOutbound, type Target } from "./resolve.ts";

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

  async #connect(t: Target): Promise<{ socket: net.Socket; labels: Record<string, string> }> {
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
      socket.write(encodeTransportHeader({ port: t.targetPort, name: "", sessionProtocol: undefined }));
    }
    return { socket, labels: { tls: "true", server_id: t.identity } };
  }

  /** The HTTP version to serve the connection with, or undefined for TCP. */
  async #httpProtocol(
    sock: net.Socket,
    dst: { ip: string; port: number },
    target: string,
  ): Promise<"http1" | "http2" | undefined> {
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
      if (fv.state?.opaqueProtocol) return undefined;
      policy = pv.state;
    } finally {
      h.release();
      p.release();
    }
    switch (policy?.protocol) {
      case "http1":
        return "http1";
      case "http2":
      case "grpc":
        return "http2";
      case "detect": {
        const d = await detectProtocol(sock, policy.detectTimeoutMs ?? o.detectTimeoutMs);
        if (d.timedOut) {
          o.metrics.outboundErrors.inc({ error: "detect_timeout", target_addr: target });
          o.log(
            "debug",
            `outbound ${addrKey(dst.ip, dst.port)}: protocol detection timed out, forwarding as TCP`,
          );
        }
        return d.protocol === "opaque" ? undefined : d.protocol;
      }
      default:
        return undefined;
    }
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
    let http: "http1" | "http2" | undefined;
    try {
      http = await this.#httpProtocol(sock, dst, target);
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
    try {
      resolved = await resolveOutbound(o.discovery, dst, o.discoveryTimeoutMs);
    } catch (e) {
      this.#fail(sock, "discovery", target, (e as Error).message);
      return;
    }
    let up;
    try {
      up = await this.#connect(resolved);
    } catch (e) {
      this.#fail(sock, resolved.kind === "meshed" ? "tls_connect" : "connect", target, (e as Error).message);
      return;
    }
    o.tracker.add(up.socket);
    const rec = o.metrics.open({ direction: "outbound", peer: "dst", ...up.labels, target_addr: target });
    sock.resume();
    forward(sock, up.socket, {
      aToB: rec.write,
      bToA: rec.read,
      closed: (e) => rec.close(e?.code),
    });
  }
}
