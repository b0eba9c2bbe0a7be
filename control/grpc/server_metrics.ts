/**
 * Standard gRPC server metrics (`grpc_server_started_total`, `grpc_server_handled_total`,
 * `grpc_server_msg_sent_total`, `grpc_server_handling_seconds`), recorded by a grpc-js server
 * interceptor so that every service of a component is counted the same way, including calls
 * that the client cancels.
 */
import * as grpc from "@grpc/grpc-js";
import { Counter, Histogram, type Registry } from "prom-client";

const CODE_NAMES: Record<number, string> = Object.fromEntries(
  Object.entries(grpc.status).filter(([, v]) => typeof v === "number").map(([k, v]) => [v as number, k]),
);

export function grpcCodeName(code: number): string {
  return CODE_NAMES[code] ?? `CODE_${code}`;
}

function methodType(def: { requestStream: boolean; responseStream: boolean }): string {
  if (def.requestStream) return def.responseStream ? "bidi_stream" : "client_stream";
  return def.responseStream ? "server_stream" : "unary";
}

/** Splits `/pkg.Service/Method` into its parts. */
function splitPath(path: string): [string, string] {
  const i = path.lastIndexOf("/");
  return [path.slice(1, i), path.slice(i + 1)];
}

/** Messages sent on one method since the last scrape. */
interface SentTally {
  labels: Record<string, string>;
  n: number;
}

export class GrpcServerMetrics {
  readonly started: Counter;
  readonly handled: Counter;
  readonly msgSent: Counter;
  readonly handling: Histogram;
  // A streaming controller sends to thousands of streams per change: a labelled inc (label hashing) per message
  // was measurable (issue 18). Sends are tallied per method and folded into the counter when it is read.
  readonly #sent = new Map<string, SentTally>();

  constructor(registry: Registry) {
    const sent = this.#sent;
    const labelNames = ["grpc_service", "grpc_method", "grpc_type"] as const;
    this.started = new Counter({
      name: "grpc_server_started_total",
      help: "RPCs started on the server.",
      labelNames,
      registers: [registry],
    });
    this.handled = new Counter({
      name: "grpc_server_handled_total",
      help: "RPCs completed on the server, by status code.",
      labelNames: [...labelNames, "grpc_code"],
      registers: [registry],
    });
    this.msgSent = new Counter({
      name: "grpc_server_msg_sent_total",
      help: "Messages sent by the server.",
      labelNames,
      registers: [registry],
      collect() {
        for (const t of sent.values()) {
          if (t.n === 0) continue;
          this.inc(t.labels, t.n);
          t.n = 0;
        }
      },
    });
    this.handling = new Histogram({
      name: "grpc_server_handling_seconds",
      help: "Time from the start of an RPC to its status.",
      labelNames,
      buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 60, 300, 3600],
      registers: [registry],
    });
  }

  /** The interceptor to pass in `new grpc.Server({ interceptors: [metrics.interceptor] })`. */
  readonly interceptor: grpc.ServerInterceptor = (def, call) => {
    const [service, method] = splitPath(def.path);
    const labels = { grpc_service: service, grpc_method: method, grpc_type: methodType(def) };
    let tally = this.#sent.get(def.path);
    if (!tally) {
      tally = { labels, n: 0 };
      this.#sent.set(def.path, tally);
    }
    const sentHere = tally;
    const begin = performance.now();
    let done = false;
    const finish = (code: number) => {
      if (done) return;
      done = true;
      this.handled.inc({ ...labels, grpc_code: grpcCodeName(code) });
      this.handling.observe(labels, (performance.now() - begin) / 1000);
    };
    this.started.inc(labels);
    return new grpc.ServerInterceptingCall(call, {
      start: (next) => {
        next({ onCancel: () => finish(grpc.status.CANCELLED) } as grpc.ServerListener);
      },
      sendMessage: (message, next) => {
        sentHere.n++;
        next(message);
      },
      sendStatus: (status, next) => {
        finish(status.code ?? grpc.status.UNKNOWN);
        next(status);
      },
    });
  };
}
