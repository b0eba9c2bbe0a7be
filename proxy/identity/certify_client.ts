/**
 * The gRPC client for Identity/Certify. Like linkerd2-proxy: plaintext h2 when the address is
 * loopback (the control plane is in this pod), otherwise TLS with SNI = the identity service's
 * name, verifying its certificate against the trust anchors and its SAN against that name.
 */
import { GrpcChannel } from "../grpc/channel.ts";
import { GrpcClient, methodOf } from "../grpc/client.ts";
import { dnsResolve } from "../grpc/resolve.ts";
import { connectTcp } from "../transport/connect.ts";
import { connectServerAuthTls } from "../transport/tls.ts";
import { untilAborted } from "../grpc/abortable.ts";
import type { ControlMetrics } from "../metrics/control_metrics.ts";
import {
  type CertifyRequest,
  type CertifyResponse,
  IdentityDefinition,
} from "../../proto/gen_messages/identity.ts";

const CERTIFY = methodOf(IdentityDefinition, "certify");
const CONNECT_TIMEOUT_MS = 10_000;

/** 127.0.0.0/8, ::1, or exactly `localhost.` (with the dot), as the proxy's `is_loopback`. */
export function isLoopbackAddr(addr: string): boolean {
  const host = hostOf(addr);
  if (host === "localhost.") return true;
  if (host === "::1" || host === "0:0:0:0:0:0:0:1") return true;
  const m = /^127\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(host);
  return m !== null && m.slice(1).every((o) => Number(o) <= 255);
}

function hostOf(addr: string): string {
  const bracket = /^\[([^\]]+)\]:\d+$/.exec(addr);
  if (bracket) return bracket[1];
  const i = addr.lastIndexOf(":");
  if (i <= 0) throw new Error(`identity address "${addr}" is not host:port`);
  return addr.slice(0, i);
}

export type CertifyFn = (req: CertifyRequest, timeoutMs: number) => Promise<CertifyResponse>;

export interface CertifyClient {
  certify: CertifyFn;
  close(): void;
}

export function createCertifyClient(
  /** `trustAnchorsPem` is read per connection when a function (the live trust bundle). */
  opts: {
    svcAddr: string;
    svcName?: string;
    trustAnchorsPem: string | (() => string);
    /** Counts each Certify in `control_*` (Linkerd's control-plane client metrics). */
    metrics?: ControlMetrics;
  },
): CertifyClient {
  const loopback = isLoopbackAddr(opts.svcAddr);
  const name = opts.svcName;
  if (!loopback && !name) {
    throw new Error(`identity address "${opts.svcAddr}" is not loopback, so it needs the service name`);
  }
  const host = hostOf(opts.svcAddr);
  const port = Number(opts.svcAddr.slice(opts.svcAddr.lastIndexOf(":") + 1));
  const channel = new GrpcChannel({
    name: `identity ${opts.svcAddr}`,
    resolve: dnsResolve(host, port),
    connect: loopback
      ? (ep) => connectTcp(ep.host, ep.port, CONNECT_TIMEOUT_MS)
      : (ep, signal) =>
        untilAborted(
          connectServerAuthTls(
            typeof opts.trustAnchorsPem === "string" ? opts.trustAnchorsPem : opts.trustAnchorsPem(),
            {
              host: ep.host,
              port: ep.port,
              serverName: name!,
              expectedIdentity: name!,
              alpn: ["h2"],
              timeoutMs: CONNECT_TIMEOUT_MS,
            },
          ),
          signal,
          (c) => c.socket.destroy(),
        ).then((c) => c.socket),
    // The identity pod can be replaced: re-resolve soon after a failure and keep reconnects quick.
    backoff: { minMs: 200, maxMs: 5000, jitter: 0.2 },
    reresolveMinMs: 1000,
    connectTimeoutMs: CONNECT_TIMEOUT_MS,
  });
  const labels = { addr: opts.svcAddr, serverId: loopback ? undefined : name };
  const send = opts.metrics ? opts.metrics.wrap(channel.request, labels) : channel.request;
  const client = new GrpcClient(send, {
    authority: loopback ? opts.svcAddr : name!,
    scheme: loopback ? "http" : "https",
  });
  return {
    certify: (req, timeoutMs) => client.unary(CERTIFY, req, { timeoutMs }),
    close: () => void channel.close(),
  };
}
