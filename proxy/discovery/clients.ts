/**
 * The proxy's discovery clients, each a SharedWatch over one control-plane RPC:
 * InboundServerPolicies.WatchPort (per port), OutboundPolicies.Watch (per original destination)
 * Destination.Get (per path) and Destination.GetProfile (per original destination).
 */
import {
  type DestinationProfile,
  GET,
  GET_PROFILE,
  getProfileRequest,
  getRequest,
  type OutboundPolicy,
  outboundWatchRequest,
  type Server,
  type Update,
  WATCH_OUTBOUND,
  WATCH_PORT,
  watchPortRequest,
} from "./requests.ts";
import type { Clock } from "../../proto/support/clock.ts";
import { preciseClock } from "../core/clock.ts";
import { type OutboundView, outboundView } from "./outbound_view.ts";
import { type ProfileView, profileView } from "./profile_view.ts";
import { fromIpAddress } from "../../proto/ip.ts";
import { type Endpoint, endpointFromWire } from "../core/endpoint.ts";
import type { Backoff, ControlService } from "../config/config.ts";
import type { CertStore } from "../core/cert_store.ts";
import type { TrustStore } from "../core/trust_store.ts";
import { Registry } from "../metrics/registry.ts";
import { controlMetricsFor } from "../metrics/control_metrics.ts";
import {
  compileServer,
  invalidPolicy,
  type InvalidPolicyReason,
  PolicyError,
  type PortPolicy,
} from "../inbound/authorize.ts";
import { compileHttpServer, httpServerFromPort, type HttpServerPolicy } from "../inbound/http/authorize.ts";
import type { Log } from "../core/log.ts";
import { InboundPolicyMetrics } from "../metrics/policy_metrics.ts";
import type { GrpcChannel } from "../grpc/channel.ts";
import { Status as S } from "../grpc/status.ts";
import { controlChannel, runStream } from "./control_client.ts";
import { SharedWatch, type SharedWatchOptions } from "./shared_watch.ts";

const NO_RETRY = new Set([S.INVALID_ARGUMENT, S.FAILED_PRECONDITION]);
const OUTBOUND_NO_RETRY = new Set([S.INVALID_ARGUMENT, S.FAILED_PRECONDITION, S.NOT_FOUND, S.UNIMPLEMENTED]);

export interface DiscoveryOptions {
  store: CertStore;
  /** The live trust bundle the control-plane connections verify against (issue 21). */
  trust?: TrustStore;
  destination: ControlService;
  policy: ControlService;
  workload: string;
  contextToken: string;
  backoff: Backoff;
  inboundIdleMs: number;
  outboundIdleMs: number;
  onEvent?: SharedWatchOptions<unknown, unknown, unknown>["onEvent"];
  /** Where `inbound_policy_invalid*` are registered (a private registry when absent). */
  registry?: Registry;
  /** Invalid inbound policies are logged here (warn), and the recovery (info). */
  log?: Log;
  /** For compiled service profiles (retry budgets, sub-millisecond timing by default). */
  clock?: Clock;
}

/**
 * A port's Server policy, compiled once per update for both uses: connection-level authorization
 * (opaque/TCP) and per-route HTTP authorization. `invalid` is set on the deny-everything policy
 * that stands in for a message that could not be compiled.
 */
export type InboundPortPolicy = PortPolicy & {
  readonly http: HttpServerPolicy;
  readonly invalid?: { readonly reason: InvalidPolicyReason; readonly message: string };
};

/** Both compiled forms of a Server; throws PolicyError when the message is invalid. */
export function compileInboundPort(s: Server): InboundPortPolicy {
  return { ...compileServer(s), http: compileHttpServer(s) };
}

/**
 * Both compiled forms of a Server, or, when it cannot be compiled, a policy that denies every
 * connection and request (fail closed, as Linkerd's invalid server policy): never the previous,
 * possibly more permissive, policy and never the cluster default.
 */
export function compileInboundPortOrDeny(s: Server): InboundPortPolicy {
  try {
    return compileInboundPort(s);
  } catch (e) {
    const reason = e instanceof PolicyError ? e.reason : "malformed";
    const deny = invalidPolicy(s.protocol?.kind?.$case);
    return {
      ...deny,
      http: httpServerFromPort(deny),
      invalid: { reason, message: String((e as Error)?.message ?? e) },
    };
  }
}

/**
 * The inbound watch's reducer: each Server message compiled, or the deny policy when it cannot
 * be; an invalid message is counted and logged (warn) with its port and reason, and the first
 * valid one after it logged (info) as the recovery.
 */
export function inboundPolicyReducer(
  metrics: InboundPolicyMetrics,
  log: Log | undefined,
): (prev: InboundPortPolicy | undefined, msg: Server, port: number) => InboundPortPolicy {
  return (_prev, msg, port) => {
    const p = compileInboundPortOrDeny(msg);
    if (p.invalid) {
      metrics.rejected(port, p.invalid.reason);
      log?.(
        "warn",
        `inbound policy for port ${port} is invalid (${p.invalid.reason}): ${p.invalid.message}; ` +
          "denying every connection and request on the port until a valid policy arrives",
      );
    } else if (metrics.isInvalid(port)) {
      metrics.recovered(port);
      log?.("info", `inbound policy for port ${port} is valid again (server ${p.serverName})`);
    }
    return p;
  };
}

/** Endpoints of one Destination.Get path, by `ip:port`. */
export type EndpointSet = { exists: boolean; endpoints: Map<string, Endpoint> };

export function addrKey(ip: string, port: number): string {
  return ip.includes(":") ? `[${ip}]:${port}` : `${ip}:${port}`;
}

export function reduceDestination(prev: EndpointSet | undefined, u: Update): EndpointSet {
  const next: EndpointSet = { exists: prev?.exists ?? true, endpoints: new Map(prev?.endpoints) };
  switch (u.update?.$case) {
    case "add": {
      const set = u.update.value.metricLabels;
      for (const a of u.update.value.addrs) {
        const ep = endpointFromWire(a, set);
        if (ep) next.endpoints.set(addrKey(ep.ip, ep.port), ep);
      }
      next.exists = true;
      break;
    }
    case "remove":
      for (const a of u.update.value.addrs) {
        if (a.ip) next.endpoints.delete(addrKey(fromIpAddress(a.ip), a.port));
      }
      break;
    case "noEndpoints":
      next.endpoints.clear();
      next.exists = u.update.value.exists;
      break;
    default:
      throw new Error("update has no content");
  }
  return next;
}

export class Discovery {
  readonly inbound: SharedWatch<number, Server, InboundPortPolicy>;
  readonly outbound: SharedWatch<{ ip: string; port: number }, OutboundPolicy, OutboundView>;
  readonly destination: SharedWatch<string, Update, EndpointSet>;
  /** Keyed by `ip:port` of the original destination, as the proxy asks (each message replaces the last). */
  readonly profile: SharedWatch<string, DestinationProfile, ProfileView>;
  #channels: GrpcChannel[] = [];

  constructor(o: DiscoveryOptions) {
    // One channel per service: inbound and outbound policy watches share the policy connections.
    const ctl = { log: o.log, trust: o.trust, metrics: o.registry && controlMetricsFor(o.registry) };
    const policy = controlChannel(o.policy, o.store, o.backoff, ctl);
    const dst = controlChannel(o.destination, o.store, o.backoff, ctl);
    this.#channels.push(policy.channel, dst.channel);
    const policyMetrics = new InboundPolicyMetrics(o.registry ?? new Registry());
    const clock = o.clock ?? preciseClock;
    this.inbound = new SharedWatch({
      name: "inbound_policy",
      keyOf: (port) => String(port),
      open: (port, signal, on) =>
        runStream(policy.client, WATCH_PORT, watchPortRequest(o.workload, port), signal, on),
      reduce: inboundPolicyReducer(policyMetrics, o.log),
      terminalCodes: NO_RETRY,
      idleMs: o.inboundIdleMs,
      backoff: o.backoff,
      onEvent: o.onEvent,
    });
    this.outbound = new SharedWatch({
      name: "outbound_policy",
      keyOf: (t) => addrKey(t.ip, t.port),
      open: (t, signal, on) =>
        runStream(policy.client, WATCH_OUTBOUND, outboundWatchRequest(o.workload, t.ip, t.port), signal, on),
      reduce: (prev, msg, t) => {
        if (!msg.protocol?.kind || !msg.metadata) {
          throw new Error("outbound policy lacks protocol or metadata");
        }
        const v = outboundView(prev, msg);
        if (v.httpError !== undefined) {
          o.log?.(
            "warn",
            `outbound policy for ${
              addrKey(t.ip, t.port)
            } has invalid HTTP routes, keeping the previous ones: ${v.httpError}`,
          );
        }
        return v;
      },
      terminalCodes: OUTBOUND_NO_RETRY,
      idleMs: o.outboundIdleMs,
      backoff: o.backoff,
      onEvent: o.onEvent,
    });
    this.destination = new SharedWatch({
      name: "destination",
      keyOf: (p) => p,
      open: (path, signal, on) => runStream(dst.client, GET, getRequest(path, o.contextToken), signal, on),
      reduce: reduceDestination,
      terminalCodes: NO_RETRY,
      idleMs: o.outboundIdleMs,
      backoff: o.backoff,
      onEvent: o.onEvent,
    });
    this.profile = new SharedWatch({
      name: "profile",
      keyOf: (p) => p,
      open: (path, signal, on) =>
        runStream(dst.client, GET_PROFILE, getProfileRequest(path, o.contextToken), signal, on),
      reduce: (prev, msg) => {
        const v = profileView(prev, msg, clock);
        if (v.error !== undefined) {
          o.log?.("warn", `service profile ${msg.fullyQualifiedName} is invalid: ${v.error}`);
        }
        return v;
      },
      terminalCodes: NO_RETRY,
      idleMs: o.outboundIdleMs,
      backoff: o.backoff,
      onEvent: o.onEvent,
    });
  }

  close(): void {
    this.inbound.close();
    this.outbound.close();
    this.destination.close();
    this.profile.close();
    for (const c of this.#channels) void c.close();
  }
}
