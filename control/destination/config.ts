/** Resolved configuration of the destination service; only main.ts builds it from flags and env. */
import { DEFAULT_CONTROL_PLANE_NAMESPACE } from "../../proto/control_plane.ts";
import { DEFAULT_OPAQUE_PORTS, Ports } from "../../proto/ports.ts";
import { DEFAULT_STREAM_SEND_TIMEOUT_MS } from "../grpc/stream_sink.ts";

export interface DestinationConfig {
  clusterDomain: string;
  /** Namespace of this control plane: pods labelled with it get identities. */
  controlPlaneNamespace: string;
  trustDomain: string;
  /** Cluster-wide default opaque ports, used when neither pod nor namespace annotate them. */
  defaultOpaquePorts: readonly number[];
  /** Sent as `protocol_hint.h2` to meshed endpoints on non-opaque ports. */
  enableH2Upgrade: boolean;
  /** Send `opaque_transport` (transport header mode) to meshed endpoints, as Linkerd's default. */
  forceOpaqueTransport: boolean;
  /** Serve IPv6 endpoint addresses too (IPv4 only otherwise). */
  enableIPv6: boolean;
  /** Messages a stream may have queued before it is reset. */
  streamQueueCapacity: number;
  /** A stream whose transport stays full this long is reset. */
  streamSendTimeoutMs: number;
  /**
   * After a flush, endpoint changes within this many ms are merged into one recompute and one
   * diff per view at the window's end (a change after a quiet window goes out at once; 0: merge
   * only within one turn of the event loop). It bounds the latency it adds.
   */
  coalesceWindowMs: number;
}

export function defaultConfig(overrides: Partial<DestinationConfig> = {}): DestinationConfig {
  return {
    clusterDomain: "cluster.local",
    controlPlaneNamespace: DEFAULT_CONTROL_PLANE_NAMESPACE,
    trustDomain: "cluster.local",
    defaultOpaquePorts: DEFAULT_OPAQUE_PORTS,
    enableH2Upgrade: true,
    forceOpaqueTransport: true,
    enableIPv6: false,
    streamQueueCapacity: 100,
    streamSendTimeoutMs: DEFAULT_STREAM_SEND_TIMEOUT_MS,
    coalesceWindowMs: DEFAULT_COALESCE_WINDOW_MS,
    ...overrides,
  };
}

/** Long enough to merge a rollout's pod and slice events, short against the 100 ms propagation goal. */
export const DEFAULT_COALESCE_WINDOW_MS = 5;

export const DEFAULT_INBOUND_PORT = Ports.proxyInbound;
