/**
 * In-process control-plane test servers (real grpc-js) for the data-path tests: Destination.Get,
 * InboundServerPolicies.WatchPort and OutboundPolicies.Watch, answered from tables the test sets.
 * They listen on unix sockets, which relays inside each pod's namespace expose on 127.0.0.1,
 * so proxies see a loopback (plaintext) control plane as in Linkerd's control-plane pods.
 * `stop()`/`start()` simulate the control plane going away and coming back; `setEndpoints`,
 * `setOutbound` and `setServer` change the tables and push the change to open streams.
 *
 * Outbound policies: per-target entries in `tables.outbound`, else Linkerd's fallback (`detect`,
 * forwarding to the original destination). Profiles: per-target entries, else an empty profile.
 */
import * as grpc from "@grpc/grpc-js";
import {
  type DestinationProfile,
  DestinationService,
  type Update,
  type WeightedAddr,
} from "../../proto/gen/destination.ts";
import { InboundServerPoliciesService, type PortSpec, type Server } from "../../proto/gen/inbound.ts";
import {
  type Backend,
  type FailureAccrual,
  type HttpRoute,
  type HttpRoute_Rule,
  OutboundPoliciesService,
  type OutboundPolicy,
  type TrafficSpec,
} from "../../proto/gen/outbound.ts";
import type { GetDestination } from "../../proto/gen/destination.ts";
import { fromIpAddress, toIpAddress } from "../../proto/ip.ts";
import { msDuration } from "../core/duration.ts";

export interface TestControlPlaneTables {
  /** Destination.Get path → endpoints; unknown paths get no_endpoints{exists:false}. */
  endpoints: Map<string, WeightedAddr[]>;
  /** `workload|port` → Server; unknown ports never get a message (the proxy keeps its default). */
  servers: Map<string, Server>;
  /** `ip:port` → outbound policy; unknown targets get `fallbackPolicy`. */
  outbound: Map<string, OutboundPolicy>;
  /** GetProfile path (`ip:port` or a name) → profile; unknown paths get an empty profile. */
  profiles: Map<string, DestinationProfile>;
}

function addrKey(ip: string, port: number): string {
  return ip.includes(":") ? `[${ip}]:${port}` : `${ip}:${port}`;
}

function emptyProfile(): DestinationProfile {
  return {
    routes: [],
    retryBudget: undefined,
    dstOverrides: [],
    opaqueProtocol: false,
    fullyQualifiedName: "",
    endpoint: undefined,
    parentRef: undefined,
    profileRef: undefined,
  };
}

export class TestControlPlane {
  readonly tables: TestControlPlaneTables = {
    endpoints: new Map(),
    servers: new Map(),
    outbound: new Map(),
    profiles: new Map(),
  };
  readonly calls = { get: 0, watchPort: 0, outbound: 0 };
  #server: grpc.Server | undefined;
  #open = new Set<grpc.ServerWritableStream<unknown, unknown>>();

  constructor(readonly dstSocket: string, readonly policySocket: string) {}

  /** Sends `server` to every open WatchPort stream for that key, and remembers it. */
  setServer(workload: string, port: number, server: Server): void {
    this.tables.servers.set(`${workload}|${port}`, server);
    for (const s of this.#open) {
      const req = s.request as PortSpec;
      if (
        (s as unknown as { kind: string }).kind === "watchPort" && req.workload === workload &&
        req.port === port
      ) {
        s.write(server);
      }
    }
  }

  #streams(kind: string): grpc.ServerWritableStream<unknown, unknown>[] {
    return [...this.#open].filter((s) => (s as unknown as { kind: string }).kind === kind);
  }

  /** Replaces a Destination path's endpoints; open Get streams see the removals, then the additions. */
  setEndpoints(path: string, eps: WeightedAddr[]): void {
    const before = this.tables.endpoints.get(path) ?? [];
    this.tables.endpoints.set(path, eps);
    const key = (w: WeightedAddr) => `${w.addr?.ip ? fromIpAddress(w.addr.ip) : ""}:${w.addr?.port}`;
    const keep = new Set(eps.map(key));
    const removed = before.filter((w) => !keep.has(key(w))).map((w) => w.addr!);
    for (const s of this.#streams("get")) {
      if ((s.request as GetDestination).path !== path) continue;
      if (removed.length > 0) s.write({ update: { $case: "remove", value: { addrs: removed } } });
      if (eps.length > 0) s.write({ update: { $case: "add", value: { addrs: eps, metricLabels: {} } } });
      else s.write({ update: { $case: "noEndpoints", value: { exists: true } } });
    }
  }

  /** Sets the outbound policy of `ip:port` and sends it to open watches of that target. */
  setOutbound(ip: string, port: number, policy: OutboundPolicy): void {
    this.tables.outbound.set(addrKey(ip, port), policy);
    for (const s of this.#streams("outbound")) {
      const t = (s.request as TrafficSpec).target;
      if (t?.$case === "addr" && t.value.ip && fromIpAddress(t.value.ip) === ip && t.value.port === port) {
        s.write(policy);
      }
    }
  }

  async start(): Promise<void> {
    const server = new grpc.Server();
    const track = (kind: string, call: grpc.ServerWritableStream<unknown, unknown>) => {
      (call as unknown as { kind: string }).kind = kind;
      this.#open.add(call);
      call.on("cancelled", () => this.#open.delete(call));
      call.on("close", () => this.#open.delete(call));
    };
    server.addService(DestinationService, {
      get: (call: grpc.ServerWritableStream<GetDestination, Update>) => {
        this.calls.get++;
        track("get", call as grpc.ServerWritableStream<unknown, unknown>);
        const eps = this.tables.endpoints.get(call.request.path);
        call.write(
          eps
            ? { update: { $case: "add", value: { addrs: eps, metricLabels: {} } } }
            : { update: { $case: "noEndpoints", value: { exists: false } } },
        );
      },
      getProfile: (call: grpc.ServerWritableStream<GetDestination, DestinationProfile>) => {
        track("profile", call as grpc.ServerWritableStream<unknown, unknown>);
        call.write(this.tables.profiles.get(call.request.path) ?? emptyProfile());
      },
    });
    server.addService(InboundServerPoliciesService, {
      getPort: (_call: unknown, cb: grpc.sendUnaryData<Server>) =>
        cb({ code: grpc.status.UNIMPLEMENTED, details: "diagnostics only" }),
      watchPort: (call: grpc.ServerWritableStream<PortSpec, Server>) => {
        this.calls.watchPort++;
        track("watchPort", call as grpc.ServerWritableStream<unknown, unknown>);
        const s = this.tables.servers.get(`${call.request.workload}|${call.request.port}`);
        if (s) call.write(s);
      },
    });
    server.addService(OutboundPoliciesService, {
      get: (_call: unknown, cb: grpc.sendUnaryData<OutboundPolicy>) =>
        cb({ code: grpc.status.UNIMPLEMENTED, details: "diagnostics only" }),
      watch: (call: grpc.ServerWritableStream<TrafficSpec, OutboundPolicy>) => {
        this.calls.outbound++;
        track("outbound", call as grpc.ServerWritableStream<unknown, unknown>);
        const t = call.request.target;
        if (t?.$case !== "addr" || !t.value.ip) {
          call.emit("error", { code: grpc.status.INVALID_ARGUMENT, details: "want an addr target" });
          return;
        }
        const ip = fromIpAddress(t.value.ip);
        call.write(this.tables.outbound.get(addrKey(ip, t.value.port)) ?? fallbackPolicy(ip, t.value.port));
      },
    });
    for (const path of [this.dstSocket, this.policySocket]) await Deno.remove(path).catch(() => {});
    await bind(server, `unix:${this.dstSocket}`);
    if (this.policySocket !== this.dstSocket) await bind(server, `unix:${this.policySocket}`);
    for (const path of [this.dstSocket, this.policySocket]) await Deno.chmod(path, 0o777);
    this.#server = server;
  }

  /** Stops answering: open streams end with UNAVAILABLE, new calls cannot connect. */
  stop(): void {
    this.#open.clear();
    this.#server?.forceShutdown();
    this.#server = undefined;
  }
}

function bind(server: grpc.Server, addr: string): Promise<void> {
  return new Promise((resolve, reject) =>
    server.bindAsync(addr, grpc.ServerCredentials.createInsecure(), (e) => e ? reject(e) : resolve())
  );
}

const META_DEFAULT = (value: string) => ({ kind: { $case: "default" as const, value } });
const QUEUE = { capacity: 100, failfastTimeout: { seconds: 3n, nanos: 0 } };

function forwardBackend(ip: string, port: number): Backend {
  return {
    metadata: META_DEFAULT("forward"),
    queue: QUEUE,
    kind: {
      $case: "forward",
      value: {
        addr: { ip: toIpAddress(ip), port },
        weight: 1,
        metricLabels: {},
        tlsIdentity: undefined,
        protocolHint: undefined,
        authorityOverride: undefined,
        http2: undefined,
        resourceRef: undefined,
      },
    },
  };
}

/**
 * A Destination-balanced backend (a Service), with a short failfast for tests and peak-EWMA
 * settings: a low default RTT, so endpoints without a sample yet are tried (on a real network
 * every RTT exceeds loopback's), and the decay time constant.
 */
export function balancerBackend(
  path: string,
  o: { failfastMs?: number; defaultRttMs?: number; decayMs?: number } = {},
): Backend {
  const failfastMs = o.failfastMs ?? 1000;
  return {
    metadata: {
      kind: {
        $case: "resource",
        value: {
          group: "core",
          kind: "Service",
          name: path.split(".")[0],
          namespace: "default",
          section: "",
          port: 0,
        },
      },
    },
    queue: { capacity: 100, failfastTimeout: msDuration(failfastMs) },
    kind: {
      $case: "balancer",
      value: {
        discovery: { kind: { $case: "dst", value: { path } } },
        load: {
          $case: "peakEwma",
          value: { defaultRtt: msDuration(o.defaultRttMs ?? 1), decay: msDuration(o.decayMs ?? 10_000) },
        },
      },
    },
  };
}

/** A rule sending everything to `backends` (weighted when more than one). */
export function httpRule(
  backends: { backend: Backend; weight: number }[],
  extra: Partial<HttpRoute_Rule> = {},
): HttpRoute_Rule {
  return {
    matches: [],
    filters: [],
    backends: backends.length === 1
      ? {
        kind: {
          $case: "firstAvailable",
          value: { backends: [{ backend: backends[0].backend, filters: [] }] },
        },
      }
      : {
        kind: {
          $case: "randomAvailable",
          value: {
            backends: backends.map((b) => ({
              backend: { backend: b.backend, filters: [] },
              weight: b.weight,
            })),
          },
        },
      },
    allowL5dRequestHeaders: false,
    ...extra,
  };
}

export function httpRouteOf(name: string, rules: HttpRoute_Rule[]): HttpRoute {
  return { metadata: META_DEFAULT(name), hosts: [], rules };
}

/** A `detect` policy: opaque traffic forwards to the destination, HTTP/1 and HTTP/2 use `routes`. */
export function detectPolicy(
  name: string,
  ip: string,
  port: number,
  routes: HttpRoute[],
  failureAccrual?: FailureAccrual,
): OutboundPolicy {
  return {
    metadata: META_DEFAULT(name),
    protocol: {
      kind: {
        $case: "detect",
        value: {
          timeout: { seconds: 10n, nanos: 0 },
          opaque: {
            routes: [{
              metadata: META_DEFAULT("default"),
              rules: [{
                filters: [],
                backends: {
                  kind: {
                    $case: "firstAvailable",
                    value: { backends: [{ filters: [], backend: forwardBackend(ip, port) }] },
                  },
                },
              }],
            }],
          },
          http1: { routes, failureAccrual },
          http2: { routes, failureAccrual },
        },
      },
    },
  };
}

/** Linkerd's fallback for an unknown target: detect, everything forwarded to the original destination. */
export function fallbackPolicy(ip: string, port: number): OutboundPolicy {
  const routes = [httpRouteOf("default", [httpRule([{ backend: forwardBackend(ip, port), weight: 1 }])])];
  return detectPolicy("egress-fallback", ip, port, routes);
}

/** A meshed endpoint as Linkerd's destination controller describes it. */
export function meshedEndpoint(ip: string, port: number, identity: string): WeightedAddr {
  return {
    addr: { ip: toIpAddress(ip), port },
    weight: 10000,
    metricLabels: {},
    tlsIdentity: {
      strategy: { $case: "dnsLikeIdentity", value: { name: identity } },
      serverName: { name: identity },
    },
    protocolHint: { protocol: { $case: "opaque", value: {} }, opaqueTransport: { inboundPort: 4143 } },
    authorityOverride: undefined,
    http2: undefined,
    resourceRef: undefined,
  };
}

/** A meshed endpoint on an HTTP port: `h2` hint with opaque transport (Linkerd's default for meshed pods). */
export function meshedHttpEndpoint(ip: string, port: number, identity: string, h2 = true): WeightedAddr {
  return {
    ...meshedEndpoint(ip, port, identity),
    protocolHint: {
      protocol: h2 ? { $case: "h2", value: {} } : undefined,
      opaqueTransport: { inboundPort: 4143 },
    },
  };
}
