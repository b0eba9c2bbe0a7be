/**
 * gRPC channels to the control plane, over the proxy's own HTTP/2 client (proxy/grpc/): plaintext
 * h2c for loopback addresses (the control plane's own sidecar terminates mesh TLS), otherwise mesh
 * TLS with SNI = the service's identity, presenting this proxy's certificate and requiring the
 * server's.
 */
import type * as net from "node:net";
import type { Backoff, ControlService } from "../config/config.ts";
import type { CertStore } from "../core/cert_store.ts";
import type { Log } from "../core/log.ts";
import { GrpcChannel } from "../grpc/channel.ts";
import { GrpcClient, type Method } from "../grpc/client.ts";
import { untilAborted } from "../grpc/abortable.ts";
import { dnsResolve, type Endpoint, type Resolve } from "../grpc/resolve.ts";
import { connectTcp } from "../transport/connect.ts";
import { type ConnectedTls, MeshTls } from "../transport/tls.ts";
import type { TrustStore } from "../core/trust_store.ts";
import type { ControlMetrics } from "../metrics/control_metrics.ts";
import type { StreamEnd } from "./shared_watch.ts";

export function controlTarget(svc: ControlService): string {
  const h = svc.addr.host.includes(":") ? `[${svc.addr.host}]` : svc.addr.host.replace(/\.$/, "");
  return `${h}:${svc.addr.port}`;
}

/** Bound on one connect (TCP, and the TLS handshake) to a controller. */
const CONNECT_TIMEOUT_MS = 10_000;

export interface ControlChannelDeps {
  /** Replaces DNS (tests: several controller replicas on one loopback). */
  resolve?: Resolve;
  log?: Log;
  /** The live trust bundle; without it, the anchors the certificate was issued with. */
  trust?: TrustStore;
  /** Counts every call (`control_request_total` and the families beside it). */
  metrics?: ControlMetrics;
}

/**
 * A channel to one control-plane service. With TLS, connecting waits for the proxy's first
 * certificate (instead of dialling without one and failing the server's client-certificate
 * check), and each new connection uses the current one, so renewals apply.
 */
export function controlChannel(
  svc: ControlService,
  store: CertStore,
  backoff: Backoff,
  deps: ControlChannelDeps = {},
): { channel: GrpcChannel; client: GrpcClient } {
  const name = controlTarget(svc);
  const resolve = deps.resolve ?? dnsResolve(svc.addr.host, svc.addr.port);
  let connect: (ep: Endpoint, signal: AbortSignal) => Promise<net.Socket>;
  let ready: ((signal: AbortSignal) => Promise<void>) | undefined;
  const serverName = svc.name;
  if (svc.plaintext || serverName === undefined) {
    connect = (ep) => connectTcp(ep.host, ep.port, CONNECT_TIMEOUT_MS);
  } else {
    const tls = new MeshTls(store, deps.trust);
    ready = (signal) => untilAborted(store.ready, signal);
    connect = (ep, signal) =>
      untilAborted(
        tls.connect({
          host: ep.host,
          port: ep.port,
          serverName,
          expectedIdentity: serverName,
          alpn: ["h2"],
          timeoutMs: CONNECT_TIMEOUT_MS,
        }),
        signal,
        (c: ConnectedTls) => c.socket.destroy(),
      ).then((c) => c.socket);
  }
  const channel = new GrpcChannel({
    name,
    resolve,
    connect,
    ready,
    // The reconnect pacing per controller address follows the proxy's backoff settings.
    backoff,
    reresolveMinMs: 1000,
    keepAlive: { intervalMs: 10_000, timeoutMs: 5_000 },
    connectTimeoutMs: CONNECT_TIMEOUT_MS,
    log: deps.log,
  });
  const labels = { addr: name, serverId: svc.plaintext ? undefined : serverName };
  const send = deps.metrics ? deps.metrics.wrap(channel.request, labels) : channel.request;
  const client = new GrpcClient(send, {
    authority: name,
    scheme: svc.plaintext ? "http" : "https",
  });
  return { channel, client };
}

/** Adapts a server-streaming call to the SharedWatch stream contract. */
export function runStream<Req, Res>(
  client: GrpcClient,
  method: Method<Req, Res>,
  req: Req,
  signal: AbortSignal,
  onMessage: (m: Res) => void,
): Promise<StreamEnd> {
  return client.serverStream(method, req, onMessage, { signal });
}
