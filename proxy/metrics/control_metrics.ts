/**
 * The proxy's control-plane client metrics, as linkerd2-proxy exports them (its `ControlHttp`
 * requests reported under the `control` prefix): `control_request_total`,
 * `control_response_latency_ms` and `control_response_total`, labelled with the controller's
 * address and the connection's TLS (`addr`, then `tls="true",server_id=…` or
 * `tls="no_identity",no_tls_reason="loopback"`); responses add `status_code`, `classification`,
 * `grpc_status` (or `error` for a stream that failed). A streaming call (Get, GetProfile,
 * WatchPort, Watch) counts its response when the stream ends, as Linkerd does.
 *
 * One family set per registry: the destination, policy and identity clients are built in
 * different places and share it through `controlMetricsFor`.
 */
import type { HttpService } from "../http/message.ts";
import { RequestFamilies, type RequestMetrics } from "./http_families.ts";
import { recordRequests } from "./http_recorder.ts";
import type { Registry } from "./registry.ts";

export interface ControlLabels {
  /** The controller address as configured (`host:port`). */
  addr: string;
  /** The identity the connection requires of the server; undefined for plaintext (loopback). */
  serverId: string | undefined;
}

export class ControlMetrics {
  readonly #families: RequestFamilies;

  constructor(registry: Registry, now: () => number = () => performance.now()) {
    // Never idle-evicted. Linkerd drops an idle series only when no stack holds its handle, and
    // these handles (one per configured controller) are held for the proxy's life. Evicted, the
    // identity client's series (one Certify a day) vanished from the exposition, and its next
    // Certify brought back its start-up failures with it, which read as new failures.
    this.#families = new RequestFamilies(registry, "control_", true, now, Infinity);
  }

  /** The handle for one controller (built once per client, not per call). */
  handle(l: ControlLabels): RequestMetrics {
    const labels: Record<string, string> = l.serverId !== undefined
      ? { addr: l.addr, tls: "true", server_id: l.serverId }
      : { addr: l.addr, tls: "no_identity", no_tls_reason: "loopback" };
    return this.#families.get(labels);
  }

  /** Wraps a gRPC client's transport so every call is counted and classified. */
  wrap(send: HttpService, l: ControlLabels): HttpService {
    const h = this.handle(l);
    // A watch the proxy drops (idle, or the proxy stopping) ends as Linkerd counts a dropped
    // response body: without trailers, so a gRPC call is `success` with grpc_status 0.
    return recordRequests(send, () => h, undefined, { callerDrops: true });
  }
}

const byRegistry = new WeakMap<Registry, ControlMetrics>();

/** The registry's control-plane client metrics, registered on first use. */
export function controlMetricsFor(registry: Registry): ControlMetrics {
  let m = byRegistry.get(registry);
  if (!m) byRegistry.set(registry, m = new ControlMetrics(registry));
  return m;
}
