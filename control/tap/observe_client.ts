/**
 * The tap API client: plain h2 gRPC to `podIP:4190`. In the cluster the component's own proxy takes
 * the connection (init redirects it) and originates mesh TLS to the pod's identity with this pod's
 * identity (`weft-tap`), which the target proxy requires; nothing here holds a key.
 */
import * as grpc from "@grpc/grpc-js";
import { Ports } from "../../proto/ports.ts";
import { type ObserveRequest, TapClient, type TapEvent } from "../../proto/tap_api.ts";
import type { Observe } from "./session.ts";
import type { TapTarget } from "./targets.ts";

export interface ObserveClientOptions {
  /** The proxies' control port (4190 unless the test runs them elsewhere). */
  port?: number;
}

function hostPort(ip: string, port: number): string {
  return ip.includes(":") ? `[${ip}]:${port}` : `${ip}:${port}`;
}

/** An `Observe` over grpc-js: one channel per stream, closed with it; `signal` cancels the call. */
export function grpcObserve(opts: ObserveClientOptions = {}): Observe {
  return async function* (target: TapTarget, req: ObserveRequest, signal: AbortSignal) {
    const client = new TapClient(
      hostPort(target.ip, opts.port ?? Ports.proxyControl),
      grpc.credentials.createInsecure(),
    );
    const call = client.observe(req);
    const cancel = () => call.cancel();
    signal.addEventListener("abort", cancel, { once: true });
    try {
      for await (const ev of call as AsyncIterable<TapEvent>) yield ev;
    } catch (e) {
      const err = e as grpc.ServiceError;
      if (signal.aborted && err.code === grpc.status.CANCELLED) return;
      throw new Error(
        err.code !== undefined ? `tap ${grpc.status[err.code]}: ${err.details || err.message}` : err.message,
      );
    } finally {
      signal.removeEventListener("abort", cancel);
      call.cancel();
      client.close();
    }
  };
}
