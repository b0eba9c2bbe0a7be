/**
 * The inbound listener (4143). Connections redirected from other ports are detected (mesh TLS
 * for our own name is terminated, anything else passes as it is) and authorized under that port's
 * policy; connections addressed to 4143 itself are the "direct" mesh path, which requires mTLS
 * with a client identity and a transport header naming the real port. Allowed connections are
 * forwarded to the pod address the client dialled (the original destination; on the direct path
 * its IP with the header's port), never to 127.0.0.1: an app port bound to loopback only stays
 * private. Targets that are the proxy's own ports, or not an address of this pod, are refused
 * before authorization (`inbound_tcp_errors_total{error="forbidden_port"|"forbidden_ip"}`).
 *
 * Gateway mode (multicluster, inbound/gateway.ts): a direct connection whose header names a
 * target Service is authorized under the inbound port's policy and forwarded to the target's
 * proxy with the caller's identity in the header's `forwarded_client_id`. A proxy believes that
 * field only from a trusted gateway identity (then it is the client identity for policy, metrics,
 * tap and `l5d-client-id`); from any other peer the connection is refused.
 *
 * HTTP: unless the port is opaque (or `tls`), the first bytes are detected (a transport header's
 * session protocol, or an http2/grpc port, says it without detection; an http1 port is HTTP/1
 * whatever detection finds, unless it finds HTTP/2); HTTP connections go to the HTTP stack, which
 * authorizes per request and route. Everything else is authorized per connection and forwarded
 * as TCP.
 */
import type * as net from "node:net";
import { parseTransportHeader, TRANSPORT_HEADER_ALPN } from "../../proto/transport_header_frame.ts";
import type { Header } from "../../proto/gen_messages/transport_header.ts";
import type { DefaultInboundPolicy } from "../../proto/env.ts";
import type { Cidr } from "../config/parse.ts";
import type { Discovery, InboundPortPolicy } from "../discovery/clients.ts";
import { DetectError, type Detection, detectProtocol } from "../http/detect.ts";
import type { InboundHttp } from "./http/stack.ts";
import type { Log } from "../core/log.ts";
import type { TcpMetrics } from "../metrics/tcp_metrics.ts";
import { connectTcp } from "../transport/connect.ts";
import type { ConnTracker } from "../transport/conn_tracker.ts";
import { MAX_HELLO_BYTES, parseClientHello } from "../transport/client_hello.ts";
import { forward } from "../transport/forward.ts";
import { normalizeIp, type OrigDst } from "../transport/orig_dst.ts";
import { peek } from "../transport/peek.ts";
import { type MeshTls, MeshTlsError } from "../transport/tls.ts";
import { authorize, defaultPolicy, type PortProtocol } from "./authorize.ts";
import { httpServerFromPort } from "./http/authorize.ts";
import type { Gateway } from "./gateway.ts";
import type { GatewayMetrics } from "../metrics/gateway_metrics.ts";

/** A DNS-like identity name (what a certificate's SAN can hold): a forwarded one must be one. */
const IDENTITY_NAME = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)+$/;

export interface InboundOptions {
  inboundPort: number;
  defaultPolicy: DefaultInboundPolicy;
  clusterNetworks: Cidr[];
  opaquePorts: Set<number>;
  detectTimeoutMs: number;
  connectTimeoutMs: number;
  /** How long a connection to a port whose policy was never fetched waits for the first one. */
  policyWaitMs: number;
  discovery: Discovery;
  origDst: OrigDst;
  tls: MeshTls;
  metrics: TcpMetrics;
  /** The HTTP stack for connections detected (or declared) as HTTP. */
  http: InboundHttp;
  tracker: ConnTracker;
  log: Log;
  /** The proxy's own ports (inbound, outbound, admin, control): never a forwarding target. */
  ownPorts: ReadonlySet<number>;
  /** The pod's addresses (LINKERD2_PROXY_INBOUND_IPS), when known; normalized. */
  podIps?: ReadonlySet<string>;
  /** Gateway mode (multicluster): direct connections naming a target are forwarded by this. */
  gateway?: Gateway;
  /**
   * Peers allowed to send a forwarded client identity (the transport header's weft extension):
   * from them, the forwarded identity is the client's; from anyone else it is refused.
   */
  trustedGateways?: ReadonlySet<string>;
  /** Counts connections whose identity a gateway forwarded (with the gateway's identity). */
  gatewayMetrics?: GatewayMetrics;
}

/** Reads and consumes the transport header from the start of a (TLS) socket. */
async function readHeader(sock: net.Socket, timeoutMs: number): Promise<Header> {
  let parsed: ReturnType<typeof parseTransportHeader> | undefined;
  let error: Error | undefined;
  const p = await peek(
    sock,
    (bytes) => {
      try {
        parsed = parseTransportHeader(bytes);
        return parsed.kind === "complete";
      } catch (e) {
        error = e as Error;
        return true;
      }
    },
    64 * 1024 + 64,
    timeoutMs,
  );
  if (error) throw error;
  if (parsed?.kind !== "complete") {
    throw new Error(
      p.timedOut ? "timed out reading the transport header" : "connection ended before the transport header",
    );
  }
  sock.read(parsed.consumed);
  return parsed.header;
}

export class Inbound {
  #o: InboundOptions;
  /** Default policies (opaque / not), compiled once. */
  #defaults: [InboundPortPolicy | undefined, InboundPortPolicy | undefined] = [undefined, undefined];

  constructor(o: InboundOptions) {
    this.#o = o;
  }

  #default(port: number): InboundPortPolicy {
    const opaque = this.#o.opaquePorts.has(port);
    const i = opaque ? 1 : 0;
    let d = this.#defaults[i];
    if (!d) {
      const p = defaultPolicy(this.#o.defaultPolicy, this.#o.clusterNetworks, opaque);
      d = this.#defaults[i] = { ...p, http: httpServerFromPort(p) };
    }
    return d;
  }

  /** The port's policy now (waiting briefly for a just-opened watch), else the default policy. */
  policy(port: number): Promise<InboundPortPolicy> {
    return this.#policy(port);
  }

  async #policy(port: number): Promise<InboundPortPolicy> {
    const h = this.#o.discovery.inbound.subscribe(port);
    try {
      let v = h.current();
      // Only a just-opened watch is waited for (briefly): if the control plane never answers,
      // later connections must not each pay the wait.
      const left = h.openedAt + this.#o.policyWaitMs - Date.now();
      if (v.state === undefined && v.status === "pending" && left > 0) v = await h.ready(left);
      return v.state ?? this.#default(port);
    } finally {
      h.release();
    }
  }

  /**
   * Why the proxy must not dial `ip:port` for this client, or undefined when it may. The proxy's
   * own ports would let a remote peer reach the admin or outbound listener as a local client;
   * an address that is not the pod's own would make the proxy (whose UID the outbound redirect
   * exempts) a relay to anywhere for a peer that routes packets for other addresses to this pod.
   */
  #forbidden(sock: net.Socket, ip: string, port: number): { error: string; message: string } | undefined {
    if (this.#o.ownPorts.has(port)) {
      return { error: "forbidden_port", message: `port ${port} is one of the proxy's own ports` };
    }
    // A redirect delivers to the receiving interface's address, which is the pod's; a client that
    // dialled an address of this pod gets exactly that address as its original destination.
    const local = normalizeIp(sock.localAddress ?? "");
    if (ip !== local && !this.#o.podIps?.has(ip)) {
      return { error: "forbidden_ip", message: `${ip} is not an address of this pod` };
    }
    return undefined;
  }

  /**
   * How a connection is served: "http1"/"http2", undefined for opaque TCP (authorized per
   * connection), null when the client closed before sending anything (the socket is destroyed).
   * A port whose policy declares HTTP is always served as HTTP, so route authorization, 404s,
   * rate limits and `l5d-client-id` cannot be skipped: `http2`/`grpc` without detection; `http1`
   * detects only to find a proxy's HTTP/2 upgrade, and a timeout or bytes that are not HTTP go to
   * the HTTP/1 server (which answers 400), as Linkerd serves a timed-out `http1` port. A `detect`
   * port detects; a client silent through the timeout is opaque, as in Linkerd. On the direct
   * path a transport header without a session protocol keeps a `detect` port opaque.
   */
  async #httpVersion(
    sock: net.Socket,
    protocol: PortProtocol,
    direct: boolean,
    silent: boolean,
    target: string,
  ): Promise<"http1" | "http2" | undefined | null> {
    if (protocol === "http2" || protocol === "grpc") return "http2";
    if (protocol === "opaque" || protocol === "tls" || (direct && protocol === "detect")) return undefined;
    let d: Detection | undefined;
    if (!silent) {
      try {
        d = await detectProtocol(sock, this.#o.detectTimeoutMs);
      } catch (e) {
        if (!(e instanceof DetectError)) throw e;
        sock.destroy();
        return null;
      }
    }
    if (d === undefined || d.timedOut) {
      this.#o.metrics.inboundErrors.inc({ error: "detect_timeout", target_addr: target });
    }
    if (protocol === "http1") return d?.protocol === "http2" ? "http2" : "http1";
    return d === undefined || d.protocol === "opaque" ? undefined : d.protocol;
  }

  #fail(sock: net.Socket, error: string, target: string, message: string): void {
    this.#o.metrics.inboundErrors.inc({ error, target_addr: target });
    this.#o.log("info", `inbound ${sock.remoteAddress}:${sock.remotePort} → ${target} refused: ${message}`);
    sock.destroy();
  }

  handle = (sock: net.Socket): void => {
    sock.on("error", () => {});
    this.#o.tracker.add(sock);
    this.#handle(sock).catch((e) => {
      this.#o.log("warn", `inbound connection failed: ${(e as Error).message}`);
      sock.destroy();
    });
  };

  async #handle(sock: net.Socket): Promise<void> {
    const o = this.#o;
    let dst;
    try {
      dst = o.origDst.lookup(sock);
    } catch (e) {
      this.#fail(sock, "orig_dst", "unknown", (e as Error).message);
      return;
    }
    const clientIp = normalizeIp(sock.remoteAddress ?? "");
    let downstream: net.Socket = sock;
    let clientTls: { clientId: string | undefined } | undefined;
    let port = dst.port;
    let target = `${dst.ip}:${dst.port}`;
    let httpVersion: "http1" | "http2" | undefined;

    if (dst.port === o.inboundPort) {
      // Direct: only mutually authenticated mesh peers, which say where they are going.
      let accepted;
      try {
        accepted = await o.tls.accept(sock, [TRANSPORT_HEADER_ALPN], o.detectTimeoutMs);
      } catch (e) {
        const kind = e instanceof MeshTlsError ? e.kind : "handshake";
        this.#fail(sock, `tls_${kind}`, target, (e as Error).message);
        return;
      }
      downstream = accepted.socket;
      o.tracker.add(downstream);
      // Closing the TLS layer must also close the TCP connection under it.
      downstream.once("close", () => sock.destroy());
      if (accepted.clientId === undefined) {
        this.#fail(
          downstream,
          "direct_unauthenticated",
          target,
          "direct connections must be mutually authenticated",
        );
        return;
      }
      let header;
      try {
        header = await readHeader(downstream, o.detectTimeoutMs);
      } catch (e) {
        this.#fail(downstream, "transport_header", target, (e as Error).message);
        return;
      }
      if (header.name !== "") {
        if (o.gateway === undefined) {
          this.#fail(
            downstream,
            "gateway_unsupported",
            target,
            `gateway forwarding to ${header.name} is not supported (the proxy is not in gateway mode)`,
          );
          return;
        }
        await o.gateway.serve(downstream, header, { clientIp, clientId: accepted.clientId });
        return;
      }
      let clientId = accepted.clientId;
      if (header.forwardedClientId !== "") {
        // Only a trusted gateway may speak for another client; anyone else is impersonating one.
        if (!o.trustedGateways?.has(accepted.clientId)) {
          this.#fail(
            downstream,
            "forwarded_identity_untrusted",
            target,
            `${accepted.clientId} sent a forwarded client identity (forwarded_client_id) but is not a trusted gateway`,
          );
          return;
        }
        if (!IDENTITY_NAME.test(header.forwardedClientId)) {
          this.#fail(
            downstream,
            "forwarded_identity_invalid",
            target,
            `gateway ${accepted.clientId} forwarded an invalid identity`,
          );
          return;
        }
        clientId = header.forwardedClientId;
        o.gatewayMetrics?.forwardedIdentity.inc({ gateway_id: accepted.clientId, client_id: clientId });
        o.log(
          "debug",
          `inbound ${clientIp} → ${dst.ip}:${header.port}: ${clientId} via gateway ${accepted.clientId}`,
        );
      }
      port = header.port;
      httpVersion = header.sessionProtocol?.kind?.$case;
      target = `${dst.ip}:${port}`;
      clientTls = { clientId };
    }

    const forbidden = this.#forbidden(sock, dst.ip, port);
    if (forbidden) {
      this.#fail(downstream, forbidden.error, target, forbidden.message);
      return;
    }

    const policy = await this.#policy(port);
    // The client sent nothing while the TLS check waited the detect timeout.
    let silent = false;
    if (dst.port !== o.inboundPort && policy.protocol !== "opaque") {
      const p = await peek(
        sock,
        (b) => parseClientHello(b).kind !== "incomplete",
        MAX_HELLO_BYTES,
        o.detectTimeoutMs,
      );
      const hello = parseClientHello(p.bytes);
      silent = p.timedOut && p.bytes.length === 0;
      const own = o.tls.localName();
      if (hello.kind === "tls" && own !== undefined && hello.sni === own) {
        try {
          const accepted = await o.tls.accept(sock, [], o.detectTimeoutMs);
          downstream = accepted.socket;
          o.tracker.add(downstream);
          downstream.once("close", () => sock.destroy());
          clientTls = { clientId: accepted.clientId };
        } catch (e) {
          const kind = e instanceof MeshTlsError ? e.kind : "handshake";
          this.#fail(sock, `tls_${kind}`, target, (e as Error).message);
          return;
        }
      }
    }
    if (httpVersion === undefined) {
      const v = await this.#httpVersion(
        downstream,
        policy.protocol,
        dst.port === o.inboundPort,
        silent,
        target,
      );
      if (v === null) return;
      httpVersion = v;
    }

    const tlsLabels: Record<string, string> = clientTls?.clientId !== undefined
      ? { tls: "true", client_id: clientTls.clientId }
      : clientTls
      ? { tls: "true", client_id: "" }
      : { tls: "no_identity", no_tls_reason: "no_tls_from_remote" };
    if (httpVersion !== undefined) {
      // Held for the connection's life: requests read the port's policy as it is now.
      const h = o.discovery.inbound.subscribe(port);
      const initial = policy;
      // Connection-level metrics for HTTP too; bytes are read from the socket at scrape and close.
      const conn = o.metrics.open({
        direction: "inbound",
        peer: "src",
        ...tlsLabels,
        srv_kind: policy.serverKind,
        srv_name: policy.serverName,
        target_addr: target,
      });
      conn.track(downstream);
      try {
        await o.http.serve(downstream, httpVersion, {
          ip: dst.ip,
          port,
          targetAddr: target,
          conn: { clientIp, tls: clientTls },
          clientAddr: clientIp.includes(":")
            ? `[${clientIp}]:${sock.remotePort}`
            : `${clientIp}:${sock.remotePort}`,
          tls: tlsLabels,
          policy: () => (h.current().state ?? initial).http,
        });
      } finally {
        h.release();
        conn.close(undefined);
        downstream.destroy();
      }
      return;
    }
    const decision = authorize(policy, { clientIp, tls: clientTls });
    const srv = { srv_kind: policy.serverKind, srv_name: policy.serverName };
    if (!decision.allow) {
      o.metrics.authzDeny.inc({
        ...srv,
        tls: tlsLabels.tls,
        client_id: tlsLabels.client_id ?? "",
        target_addr: target,
      });
      this.#fail(downstream, "unauthorized", target, decision.reason);
      return;
    }
    o.metrics.authzAllow.inc({
      ...srv,
      authz_kind: decision.authzKind,
      authz_name: decision.authzName,
      tls: tlsLabels.tls,
      client_id: tlsLabels.client_id ?? "",
      target_addr: target,
    });
    if (decision.audited) {
      o.log("info", `inbound ${clientIp} → ${target} allowed by audit (no authorization matched)`);
    }
    let upstream: net.Socket;
    try {
      upstream = await connectTcp(dst.ip, port, o.connectTimeoutMs);
    } catch (e) {
      this.#fail(downstream, "connect", target, (e as Error).message);
      return;
    }
    const rec = o.metrics.open({
      direction: "inbound",
      peer: "src",
      ...tlsLabels,
      ...srv,
      authz_kind: decision.authzKind,
      authz_name: decision.authzName,
      target_addr: target,
    });
    // As in Linkerd: an established connection that the port's policy no longer permits (a
    // changed or uncompilable Server) is closed, so no stale permission outlives an update.
    const watch = o.discovery.inbound.subscribe(port);
    watch.onChange((now) => {
      if (authorize(now, { clientIp, tls: clientTls }).allow) return;
      o.metrics.authzTerminate.inc({
        srv_kind: now.serverKind,
        srv_name: now.serverName,
        tls: tlsLabels.tls,
        client_id: tlsLabels.client_id ?? "",
        target_addr: target,
      });
      o.log("info", `inbound ${clientIp} → ${target} closed: server ${now.serverName} no longer permits it`);
      downstream.destroy();
      upstream.destroy();
    });
    downstream.resume();
    forward(downstream, upstream, {
      aToB: rec.read,
      bToA: rec.write,
      closed: (e) => {
        watch.release();
        rec.close(e?.code);
      },
    });
  }
}
