/**
 * In-process control-plane test servers (real grpc-js) for the data-path tests: Destination.Get,
 * InboundServerPolicies.WatchPort and OutboundPolicies.Watch, answered from tables the test sets.
 * They listen on unix sockets, which relays inside each pod's namespace expose on 127.0.0.1,
 * so proxies see a loopback (plaintext) control plane as in Linkerd's control-plane pods.
 * `stop()`/`start()` simulate the control plane going away and coming back.
 */
import * as grpc from "@grpc/grpc-js";
import { DestinationService, type Update, type WeightedAddr } from "../../proto/gen/destination.ts";
import { InboundServerPoliciesService, type PortSpec, type Server } from "../../proto/gen/inbound.ts";
import { OutboundPoliciesService, type OutboundPolicy, type TrafficSpec } from "../../proto/gen/outbound.ts";
import type { GetDestination } from "../../proto/gen/destination.ts";
import { fromIpAddress, toIpAddress } from "../../proto/ip.ts";

export interface TestControlPlaneTables {
  /** Destination.Get path → endpoints; unknown paths get no_endpoints{exists:false}. */
  endpoints: Map<string, WeightedAddr[]>;
  /** `workload|port` → Server; unknown ports never get a message (the proxy keeps its default). */
  servers: Map<string, Server>;
}

export class TestControlPlane {
  readonly tables: TestControlPlaneTables = { endpoints: new Map(), servers: new Map() };
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
      getProfile: (call: grpc.ServerWritableStream<GetDestination, unknown>) => {
        call.emit("error", { code: grpc.status.UNIMPLEMENTED, details: "not in this test server" });
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
        call.write(fallbackPolicy(fromIpAddress(t.value.ip), t.value.port));
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

/** Linkerd's fallback shape: opaque forward to the original destination, no TLS metadata. */
export function fallbackPolicy(ip: string, port: number): OutboundPolicy {
  return {
    metadata: { kind: { $case: "default", value: "egress-fallback" } },
    protocol: {
      kind: {
        $case: "opaque",
        value: {
          routes: [{
            metadata: { kind: { $case: "default", value: "default" } },
            rules: [{
              filters: [],
              backends: {
                kind: {
                  $case: "firstAvailable",
                  value: {
                    backends: [{
                      filters: [],
                      backend: {
                        metadata: { kind: { $case: "default", value: "forward" } },
                        queue: { capacity: 100, failfastTimeout: { seconds: 3n, nanos: 0 } },
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
                      },
                    }],
                  },
                },
              },
            }],
          }],
        },
      },
    },
  };
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
