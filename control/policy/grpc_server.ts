/**
 * The policy gRPC API on one grpc-js server: `InboundServerPolicies.{WatchPort,GetPort}` and
 * `OutboundPolicies.{Watch,Get}`. Requests are decoded and checked here, errors become statuses
 * only here (`toServiceError`), and streamed messages are encoded once per change by the hub,
 * so the service definitions below pass pre-encoded bytes through unchanged.
 */
import * as grpc from "@grpc/grpc-js";
import { Counter, Gauge, type Registry } from "prom-client";
import { InboundServerPoliciesService, type PortSpec, Server } from "../../proto/gen/inbound.ts";
import { OutboundPoliciesService, OutboundPolicy, type TrafficSpec } from "../../proto/gen/outbound.ts";
import { GrpcServerMetrics } from "../grpc/server_metrics.ts";
import { type ControlServerLimits, controlServerOptions } from "../grpc/server_options.ts";
import { RequestError, toServiceError } from "../grpc/request_error.ts";
import { checkStreamLimits, DEFAULT_STREAM_SEND_TIMEOUT_MS, StreamSink } from "../grpc/stream_sink.ts";
import type { PolicyConfig } from "./config.ts";
import { checkPort, inboundPolicy, parseWorkload } from "./inbound_index.ts";
import { externalWorkloadInboundPolicy } from "./external_workload_policy.ts";
import { outboundPolicy } from "./outbound_index.ts";
import type { PolicyStore } from "./store.ts";
import { PolicyHub } from "./watch_hub.ts";

type Encoded<T> = T | Uint8Array;

function passthrough<T>(encode: (v: T) => Uint8Array) {
  return (v: Encoded<T>): Buffer => {
    const bytes = v instanceof Uint8Array ? v : encode(v);
    return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  };
}

const inboundDefinition = {
  getPort: {
    ...InboundServerPoliciesService.getPort,
    responseSerialize: passthrough((v: Server) => Server.encode(v).finish()),
  },
  watchPort: {
    ...InboundServerPoliciesService.watchPort,
    responseSerialize: passthrough((v: Server) => Server.encode(v).finish()),
  },
} as unknown as grpc.ServiceDefinition;

const outboundDefinition = {
  get: {
    ...OutboundPoliciesService.get,
    responseSerialize: passthrough((v: OutboundPolicy) => OutboundPolicy.encode(v).finish()),
  },
  watch: {
    ...OutboundPoliciesService.watch,
    responseSerialize: passthrough((v: OutboundPolicy) => OutboundPolicy.encode(v).finish()),
  },
} as unknown as grpc.ServiceDefinition;

export interface PolicyServerOptions {
  store: PolicyStore;
  config: PolicyConfig;
  registry: Registry;
  /** Updates a stream may have waiting while its transport is backed up, before it is reset. */
  streamQueueCapacity?: number;
  /** How long a stream's transport may stay backed up (the client not reading) before it is reset. */
  streamSendTimeoutMs?: number;
  /** Tests shrink the shared control-plane server limits to reach them cheaply. */
  limits?: Partial<ControlServerLimits>;
  /** How long the watch hub gathers a burst of store changes before one flush (default 5 ms). */
  coalesceWindowMs?: number;
}

export class PolicyGrpcServer {
  readonly server: grpc.Server;
  readonly hub: PolicyHub;
  readonly #sinks = new Set<StreamSink>();
  readonly #overflow: Counter;
  readonly #sendTimeouts: Counter;
  readonly #streams: Gauge;

  constructor(opts: PolicyServerOptions) {
    const { store, config, registry } = opts;
    const capacity = opts.streamQueueCapacity ?? 16;
    const sendTimeoutMs = opts.streamSendTimeoutMs ?? DEFAULT_STREAM_SEND_TIMEOUT_MS;
    checkStreamLimits("policy", capacity, sendTimeoutMs);
    this.hub = new PolicyHub(store, config, { coalesceWindowMs: opts.coalesceWindowMs });
    const metrics = new GrpcServerMetrics(registry);
    this.#overflow = new Counter({
      name: "policy_updates_queue_overflow_total",
      help: "Policy streams reset because their update queue overflowed.",
      labelNames: ["direction"],
      registers: [registry],
    });
    this.#sendTimeouts = new Counter({
      name: "policy_stream_send_timeouts_total",
      help: "Policy streams reset because the client did not take updates within the send timeout.",
      labelNames: ["direction"],
      registers: [registry],
    });
    this.#streams = new Gauge({
      name: "policy_watch_streams",
      help: "Open policy watch streams.",
      labelNames: ["direction"],
      registers: [registry],
    });
    this.server = new grpc.Server(controlServerOptions("policy", [metrics.interceptor], opts.limits));

    const stream = (
      direction: "inbound" | "outbound",
      call: grpc.ServerWritableStream<unknown, unknown>,
      subscribe: (sink: StreamSink, sub: { send(b: Uint8Array): void; fail(e: unknown): void }) => () => void,
    ) => {
      const sink = new StreamSink(call, {
        name: `policy ${direction} watch`,
        capacity,
        sendTimeoutMs,
        onReset: (reason) => {
          if (reason === "overflow") this.#overflow.inc({ direction });
          else this.#sendTimeouts.inc({ direction });
          done();
        },
      });
      let unsubscribe: (() => void) | undefined;
      const done = () => {
        if (!this.#sinks.delete(sink)) return;
        this.#streams.dec({ direction });
        sink.detach();
        unsubscribe?.();
      };
      this.#sinks.add(sink);
      this.#streams.inc({ direction });
      call.on("cancelled", done);
      call.on("close", done);
      call.on("finish", done);
      try {
        unsubscribe = subscribe(sink, {
          send: (b) => sink.push(b),
          fail: (e) => {
            const err = toServiceError(e);
            sink.fail(err.code ?? grpc.status.INTERNAL, err.details ?? err.message);
            done();
          },
        });
      } catch (e) {
        this.#sinks.delete(sink);
        this.#streams.dec({ direction });
        sink.detach();
        call.emit("error", toServiceError(e));
      }
    };

    this.server.addService(inboundDefinition, {
      getPort: (call: grpc.ServerUnaryCall<PortSpec, Server>, cb: grpc.sendUnaryData<Server>) => {
        try {
          const w = parseWorkload(call.request.workload);
          checkPort(call.request.port);
          cb(
            null,
            "pod" in w
              ? inboundPolicy(store, config, w.namespace, w.pod, call.request.port)
              : externalWorkloadInboundPolicy(
                store,
                config,
                w.namespace,
                w.externalWorkload,
                call.request.port,
              ),
          );
        } catch (e) {
          cb(toServiceError(e));
        }
      },
      watchPort: (call: grpc.ServerWritableStream<PortSpec, Server>) => {
        stream("inbound", call as grpc.ServerWritableStream<unknown, unknown>, (_sink, sub) => {
          const w = parseWorkload(call.request.workload);
          checkPort(call.request.port);
          return "pod" in w
            ? this.hub.watchInbound(w.namespace, w.pod, call.request.port, sub)
            : this.hub.watchInboundExternal(w.namespace, w.externalWorkload, call.request.port, sub);
        });
      },
    });
    const getOutbound = (
      call: grpc.ServerUnaryCall<TrafficSpec, OutboundPolicy>,
      cb: grpc.sendUnaryData<OutboundPolicy>,
    ) => {
      try {
        cb(null, outboundPolicy(store, config, call.request));
      } catch (e) {
        cb(toServiceError(e));
      }
    };
    this.server.addService(outboundDefinition, {
      get: getOutbound,
      watch: (call: grpc.ServerWritableStream<TrafficSpec, OutboundPolicy>) => {
        stream("outbound", call as grpc.ServerWritableStream<unknown, unknown>, (_sink, sub) => {
          if (!call.request.target) throw new RequestError("invalid_argument", "TrafficSpec has no target");
          return this.hub.watchOutbound(call.request, sub);
        });
      },
    });
  }

  /** Binds plaintext on `host:port` (port 0 picks one); resolves to the bound port. */
  listen(host: string, port: number): Promise<number> {
    return new Promise((resolve, reject) => {
      const addr = host.includes(":") ? `[${host}]:${port}` : `${host}:${port}`;
      this.server.bindAsync(addr, grpc.ServerCredentials.createInsecure(), (err, bound) => {
        if (err) reject(new Error(`cannot listen on ${addr}: ${err.message}`));
        else resolve(bound);
      });
    });
  }

  get openStreams(): number {
    return this.#sinks.size;
  }

  /** Ends every stream (proxies reconnect elsewhere) and stops the server. */
  async shutdown(): Promise<void> {
    for (const s of [...this.#sinks]) s.end();
    this.hub.close();
    await new Promise<void>((resolve) => this.server.tryShutdown(() => resolve()));
  }

  forceShutdown(): void {
    this.hub.close();
    this.server.forceShutdown();
  }
}
