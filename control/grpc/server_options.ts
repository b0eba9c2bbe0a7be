/**
 * The limits every control-plane gRPC server applies (destination 8086, policy 8090, identity 8080),
 * in one place, so that no client on the pod network can make a controller hold unbounded state for
 * one connection or one message.
 *
 * What grpc-js 1.14 enforces on a server, and so what is set here: HTTP/2 SETTINGS_MAX_CONCURRENT_STREAMS
 * (`grpc.max_concurrent_streams`), message sizes in both directions, server keepalive pings that
 * close connections whose peer vanished. grpc-js servers have no client ping policy
 * (`grpc.http2.min_ping_interval_without_data_ms` and `grpc.keepalive_permit_without_calls` are read
 * only by grpc-js channels), so nothing here can punish the proxies' own pings: weft's proxies ping
 * every 10 s (proxy/discovery/control_client.ts), linkerd2-proxy's control clients likewise.
 * No connection age or idle limit either: both end connections with GOAWAY, which Deno's node:http2
 * clients (our proxies' grpc-js channels) did not survive with streams open.
 */
import type * as grpc from "@grpc/grpc-js";

export type ControlApi = "destination" | "policy" | "identity";

export interface ControlServerLimits {
  /** Streams one connection may have open at once; more are refused by HTTP/2 itself. */
  maxConcurrentStreams: number;
  /** Largest request message; a larger one ends that call with RESOURCE_EXHAUSTED. */
  maxReceiveMessageBytes: number;
  /** Largest response message. */
  maxSendMessageBytes: number;
  /** Idle time after which the server pings a connection, and how long it waits for the ack. */
  keepaliveTimeMs: number;
  keepaliveTimeoutMs: number;
}

const KIB = 1024;
const MIB = 1024 * KIB;

/**
 * Requests of the watch APIs are a few hundred bytes: GetDestination is a DNS name (≤ 253 bytes) plus
 * port and a small JSON context token; PortSpec is a workload JSON and a port; TrafficSpec a workload
 * and an address or authority. 16 KiB leaves 30× headroom. Certify carries an identity name, a
 * projected ServiceAccount token (a JWT, typically 1-2 KiB) and a P-256 CSR (~0.4 KiB): 64 KiB
 * allows tokens with large claim sets. grpc-js's default would be 4 MiB for all of them.
 *
 * Responses are bounded at 4 MiB, the receive limit of grpc-js channels and tonic clients (weft's and
 * Linkerd's proxies), so nothing is sent that the proxy would refuse anyway; a destination Update that
 * large is ~13,000 endpoints.
 *
 * A proxy multiplexes all of its watches on one connection per controller replica, one stream per
 * target it is actively talking to (idle ones are closed): 2,000 streams covers a proxy or ingress
 * talking to 1,000 services at once with Get and GetProfile each, and bounds what one connection can
 * pin. A compliant client over the limit waits for a free stream (HTTP/2 queues it; grpc-js over
 * Deno does) rather than failing; a client that ignores the limit loses its connection. The bound
 * is per connection: it does not limit how many connections a pod opens. Identity serves only
 * unary Certify, once per proxy start and renewal: 16 is ample.
 */
export const CONTROL_SERVER_LIMITS: Record<ControlApi, ControlServerLimits> = {
  destination: {
    maxConcurrentStreams: 2000,
    maxReceiveMessageBytes: 16 * KIB,
    maxSendMessageBytes: 4 * MIB,
    keepaliveTimeMs: 30_000,
    keepaliveTimeoutMs: 10_000,
  },
  policy: {
    maxConcurrentStreams: 2000,
    maxReceiveMessageBytes: 16 * KIB,
    maxSendMessageBytes: 4 * MIB,
    keepaliveTimeMs: 30_000,
    keepaliveTimeoutMs: 10_000,
  },
  identity: {
    maxConcurrentStreams: 16,
    maxReceiveMessageBytes: 64 * KIB,
    maxSendMessageBytes: 64 * KIB,
    keepaliveTimeMs: 30_000,
    keepaliveTimeoutMs: 10_000,
  },
};

/** grpc-js server options for `api`; `overrides` lets tests shrink a limit to reach it cheaply. */
export function controlServerOptions(
  api: ControlApi,
  interceptors: grpc.ServerInterceptor[],
  overrides: Partial<ControlServerLimits> = {},
): grpc.ServerOptions {
  const l = { ...CONTROL_SERVER_LIMITS[api], ...overrides };
  for (const [k, v] of Object.entries(l)) {
    if (!Number.isInteger(v) || v <= 0) {
      throw new Error(`control server limit ${api}.${k} must be a positive integer, got ${v}`);
    }
  }
  return {
    interceptors,
    "grpc.max_concurrent_streams": l.maxConcurrentStreams,
    "grpc.max_receive_message_length": l.maxReceiveMessageBytes,
    "grpc.max_send_message_length": l.maxSendMessageBytes,
    "grpc.keepalive_time_ms": l.keepaliveTimeMs,
    "grpc.keepalive_timeout_ms": l.keepaliveTimeoutMs,
  };
}
