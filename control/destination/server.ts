/**
 * The Destination gRPC service (Get, GetProfile) over the endpoint and profile indexes. Each
 * stream gets a bounded `StreamSink`; messages are encoded once per view and handed to grpc-js
 * as bytes, so the service definition below passes pre-encoded messages through unchanged.
 */
import * as grpc from "@grpc/grpc-js";
import { Counter, Gauge, type Registry } from "prom-client";
import {
  DestinationProfile,
  DestinationService,
  type GetDestination,
  Update,
} from "../../proto/gen/destination.ts";
import { GrpcServerMetrics } from "../grpc/server_metrics.ts";
import { type ControlServerLimits, controlServerOptions } from "../grpc/server_options.ts";
import { RequestError, toServiceError } from "../grpc/request_error.ts";
import { checkStreamLimits, StreamSink } from "../grpc/stream_sink.ts";
import type { ClusterState } from "./cluster_state.ts";
import type { DestinationConfig } from "./config.ts";
import type { ClusterStore } from "./cluster_store.ts";
import { EndpointIndex } from "./endpoint_index.ts";
import { MulticlusterEndpoints } from "./multicluster_endpoints.ts";
import { parseContextToken, parseTarget, serviceFqn } from "./path.ts";
import { ProfileIndex } from "./profile_index.ts";

function passBytes<T>(encode: (m: T) => Uint8Array) {
  return (value: T | Uint8Array): Buffer => {
    const bytes = value instanceof Uint8Array ? value : encode(value);
    return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  };
}

/** DestinationService whose responses may be pre-encoded bytes. */
export const DestinationBytesService = {
  get: { ...DestinationService.get, responseSerialize: passBytes((m: Update) => Update.encode(m).finish()) },
  getProfile: {
    ...DestinationService.getProfile,
    responseSerialize: passBytes((m: DestinationProfile) => DestinationProfile.encode(m).finish()),
  },
} as const;

export class DestinationMetrics {
  readonly streamsOpen: Gauge;
  readonly overflow: Counter;
  readonly profileOverflow: Counter;
  readonly sendTimeouts: Counter;
  readonly sent: Counter;
  /** Writes since the last scrape: a fan-out counts with a number, not a labelled increment each. */
  readonly #unsent = { get: 0, get_profile: 0 };

  constructor(registry: Registry) {
    const registers = [registry];
    const unsent = this.#unsent;
    this.streamsOpen = new Gauge({
      name: "destination_streams_open",
      help: "Open Destination streams.",
      labelNames: ["rpc"],
      registers,
    });
    this.overflow = new Counter({
      name: "endpoint_updates_queue_overflow",
      help: "Get streams reset because their update queue was full.",
      labelNames: ["service"],
      registers,
    });
    this.profileOverflow = new Counter({
      name: "profile_updates_queue_overflow",
      help: "GetProfile streams reset because their update queue was full.",
      registers,
    });
    this.sendTimeouts = new Counter({
      name: "destination_stream_send_timeouts_total",
      help: "Streams reset because the client did not take messages within the send timeout.",
      labelNames: ["rpc"],
      registers,
    });
    this.sent = new Counter({
      name: "destination_stream_messages_sent_total",
      help: "Messages written to Destination streams.",
      labelNames: ["rpc"],
      registers,
      collect() {
        for (const rpc of ["get", "get_profile"] as const) {
          if (unsent[rpc] > 0) this.inc({ rpc }, unsent[rpc]);
          unsent[rpc] = 0;
        }
      },
    });
  }

  countSent(rpc: "get" | "get_profile"): void {
    this.#unsent[rpc]++;
  }
}

export interface DestinationServiceDeps {
  state: ClusterState;
  config: DestinationConfig;
  registry: Registry;
  log?: (m: string) => void;
  /** Remote clusters for flat-mode mirrors and federated Services (none: such Gets are NotFound). */
  clusters?: ClusterStore;
  /** Stops the endpoint index's flush and fan-out timers (at shutdown). */
  signal?: AbortSignal;
}

export class Destination {
  readonly endpoints: EndpointIndex;
  readonly profiles: ProfileIndex;
  readonly multicluster: MulticlusterEndpoints;
  readonly metrics: DestinationMetrics;
  readonly #deps: DestinationServiceDeps;

  constructor(deps: DestinationServiceDeps) {
    this.#deps = deps;
    this.endpoints = new EndpointIndex(deps.state, deps.config, {
      registry: deps.registry,
      signal: deps.signal,
    });
    this.profiles = new ProfileIndex(deps.state, deps.config, deps.log);
    this.multicluster = new MulticlusterEndpoints(deps.state, this.endpoints, deps.clusters, deps.log);
    this.metrics = new DestinationMetrics(deps.registry);
  }

  /** Runs `body` once the caches are synced, unless the client went away first. */
  async #whenSynced(
    call: grpc.ServerWritableStream<GetDestination, unknown>,
    body: () => void,
  ): Promise<void> {
    if (!this.#deps.state.unsynced().length) return body();
    let gone = false;
    call.once("cancelled", () => gone = true);
    await this.#deps.state.synced;
    if (!gone) body();
  }

  #serve(
    rpc: "get" | "get_profile",
    call: grpc.ServerWritableStream<GetDestination, unknown>,
    subscribe: (sink: StreamSink) => () => void,
    overflowLabel: () => Record<string, string>,
  ): void {
    const m = this.metrics;
    let unsubscribe: (() => void) | undefined;
    const end = () => {
      sink.detach();
      if (unsubscribe) {
        unsubscribe();
        unsubscribe = undefined;
        m.streamsOpen.dec({ rpc });
      }
    };
    const sink = new StreamSink(call, {
      name: rpc === "get" ? "destination Get" : "destination GetProfile",
      capacity: this.#deps.config.streamQueueCapacity,
      sendTimeoutMs: this.#deps.config.streamSendTimeoutMs,
      onSent: () => m.countSent(rpc),
      onReset: (reason) => {
        if (reason === "overflow") {
          if (rpc === "get") m.overflow.inc(overflowLabel());
          else m.profileOverflow.inc();
        } else m.sendTimeouts.inc({ rpc });
        end();
      },
    });
    call.once("cancelled", end);
    call.once("close", end);
    try {
      unsubscribe = subscribe(sink);
      m.streamsOpen.inc({ rpc });
      if (sink.closed) end();
    } catch (e) {
      sink.detach();
      call.emit("error", toServiceError(e));
    }
  }

  readonly handlers: grpc.UntypedServiceImplementation = {
    get: (call: grpc.ServerWritableStream<GetDestination, unknown>) => {
      const cfg = this.#deps.config;
      let target;
      try {
        target = parseTarget(call.request.path, cfg.clusterDomain);
        if (target.kind === "ip") {
          throw new RequestError(
            "invalid_argument",
            `IP queries are not supported by Get: "${call.request.path}" (use GetProfile for IPs)`,
          );
        }
      } catch (e) {
        call.emit("error", toServiceError(e));
        return;
      }
      const t = target;
      const ctx = parseContextToken(call.request.contextToken);
      void this.#whenSynced(call, () =>
        this.#serve("get", call, (sink) => {
          const req = {
            service: t.service,
            namespace: t.namespace,
            port: t.port,
            hostname: t.hostname,
            nodeName: ctx.nodeName,
          };
          return this.multicluster.subscribe(req, sink) ?? this.endpoints.subscribe(req, sink);
        }, () => ({ service: `${serviceFqn(t.service, t.namespace, cfg.clusterDomain)}:${t.port}` })));
    },
    getProfile: (call: grpc.ServerWritableStream<GetDestination, unknown>) => {
      let target;
      try {
        target = parseTarget(call.request.path, this.#deps.config.clusterDomain);
      } catch (e) {
        call.emit("error", toServiceError(e));
        return;
      }
      const t = target;
      const ctx = parseContextToken(call.request.contextToken);
      void this.#whenSynced(
        call,
        () =>
          this.#serve("get_profile", call, (sink) => this.profiles.subscribe(t, ctx.ns, sink), () => ({})),
      );
    },
  };
}

export interface DestinationServerOptions extends DestinationServiceDeps {
  hostname: string;
  port: number;
  /** Tests shrink the shared control-plane server limits to reach them cheaply. */
  limits?: Partial<ControlServerLimits>;
}

/** Starts the gRPC server; resolves with the bound port and the Destination instance. */
export async function serveDestination(
  opts: DestinationServerOptions,
): Promise<{ server: grpc.Server; port: number; destination: Destination }> {
  checkStreamLimits("destination", opts.config.streamQueueCapacity, opts.config.streamSendTimeoutMs);
  const metrics = new GrpcServerMetrics(opts.registry);
  const server = new grpc.Server(controlServerOptions("destination", [metrics.interceptor], opts.limits));
  const destination = new Destination(opts);
  server.addService(DestinationBytesService as unknown as grpc.ServiceDefinition, destination.handlers);
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync(
      `${opts.hostname}:${opts.port}`,
      grpc.ServerCredentials.createInsecure(),
      (err, p) => err ? reject(err) : resolve(p),
    )
  );
  return { server, port, destination };
}
