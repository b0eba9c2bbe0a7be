/**
 * The four discovery requests the proxy sends, built in one place so that `weft diagnostics`
 * asks the control plane exactly what a proxy asks: the workload and context token are the
 * strings the proxy was configured with (sent unchanged), Get and GetProfile carry an empty
 * scheme, and an outbound policy is looked up by the original destination address.
 */
import {
  DestinationDefinition,
  type DestinationProfile,
  type GetDestination,
  type Update,
} from "../../proto/gen_messages/destination.ts";
import {
  InboundServerPoliciesDefinition,
  type PortSpec,
  type Server,
} from "../../proto/gen_messages/inbound.ts";
import {
  OutboundPoliciesDefinition,
  type OutboundPolicy,
  type TrafficSpec,
} from "../../proto/gen_messages/outbound.ts";
import { toTcpAddress } from "../../proto/ip.ts";
import { methodOf } from "../grpc/client.ts";

export type { DestinationProfile, OutboundPolicy, Server, Update };

export const WATCH_PORT = methodOf(InboundServerPoliciesDefinition, "watchPort");
export const WATCH_OUTBOUND = methodOf(OutboundPoliciesDefinition, "watch");
export const GET = methodOf(DestinationDefinition, "get");
export const GET_PROFILE = methodOf(DestinationDefinition, "getProfile");

/** InboundServerPolicies.WatchPort: the proxy's own workload and one of its inbound ports. */
export function watchPortRequest(workload: string, port: number): PortSpec {
  return { workload, port };
}

/** OutboundPolicies.Watch: the original destination address the application connected to. */
export function outboundWatchRequest(workload: string, ip: string, port: number): TrafficSpec {
  return { sourceWorkload: workload, target: { $case: "addr", value: toTcpAddress(ip, port) } };
}

/** Destination.Get: the authority (or `ip:port`) of a backend. */
export function getRequest(path: string, contextToken: string): GetDestination {
  return { scheme: "", path, contextToken };
}

/** Destination.GetProfile: the proxy asks by original destination (`ip:port`) or by name. */
export function getProfileRequest(path: string, contextToken: string): GetDestination {
  return { scheme: "", path, contextToken };
}
