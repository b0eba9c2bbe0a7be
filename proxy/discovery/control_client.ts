/**
 * gRPC channels to the control plane: plaintext h2c for loopback addresses (the control plane's
 * own sidecar terminates mesh TLS), TLS with SNI = the service's identity otherwise.
 */
import * as grpc from "@grpc/grpc-js";
import type { Backoff, ControlService } from "../config/config.ts";
import type { CertStore } from "../identity/cert_store.ts";
import type { StreamEnd } from "./shared_watch.ts";
import { CertStoreProvider } from "./cert_store_provider.ts";

export function controlTarget(svc: ControlService): string {
  const h = svc.addr.host.includes(":") ? `[${svc.addr.host}]` : svc.addr.host.replace(/\.$/, "");
  return `${h}:${svc.addr.port}`;
}

/**
 * Credentials are resolved per connection from the certificate store: a channel made before the
 * proxy is certified waits for the first certificate, and renewals apply to new connections.
 */
export function controlCredentials(svc: ControlService, store: CertStore): grpc.ChannelCredentials {
  if (svc.plaintext) return grpc.credentials.createInsecure();
  const provider = new CertStoreProvider(store);
  return grpc.experimental.createCertificateProviderChannelCredentials(provider, provider);
}

/**
 * grpc-js otherwise sends a DNS TXT query (for a gRPC service config) with every resolution of a
 * control-plane name, straight to the resolver; the control plane publishes none, as in Linkerd.
 */
export const NO_DNS_SERVICE_CONFIG = { "grpc.service_config_disable_resolution": 1 } as const;

export function controlChannelOptions(svc: ControlService, backoff: Backoff): grpc.ChannelOptions {
  const opts: grpc.ChannelOptions = {
    "grpc.keepalive_time_ms": 10_000,
    "grpc.keepalive_timeout_ms": 5_000,
    // Control-plane Services are headless: after a controller pod is replaced, the old address is
    // gone, so re-resolve soon after a failure instead of grpc-js's default of every 30 s.
    "grpc.dns_min_time_between_resolutions_ms": 1000,
    // The channel's own reconnect pacing follows the proxy's backoff settings.
    "grpc.initial_reconnect_backoff_ms": backoff.minMs,
    "grpc.max_reconnect_backoff_ms": backoff.maxMs,
    ...NO_DNS_SERVICE_CONFIG,
    // A headless Service resolves to every controller replica: spread the watches over all of
    // them and skip a dead one at once (grpc-js would otherwise use only the first address).
    "grpc.service_config": JSON.stringify({ loadBalancingConfig: [{ round_robin: {} }] }),
  };
  if (!svc.plaintext && svc.name) opts["grpc.ssl_target_name_override"] = svc.name;
  return opts;
}

/** Adapts a server-streaming call to the SharedWatch stream contract. */
export function runStream<M>(
  call: grpc.ClientReadableStream<M>,
  signal: AbortSignal,
  onMessage: (m: M) => void,
): Promise<StreamEnd> {
  return new Promise((resolve) => {
    const onAbort = () => call.cancel();
    signal.addEventListener("abort", onAbort, { once: true });
    call.on("data", onMessage);
    // 'error' always precedes 'status' for failed calls; 'status' carries the outcome.
    call.on("error", () => {});
    call.on("status", (s: grpc.StatusObject) => {
      signal.removeEventListener("abort", onAbort);
      resolve({ code: s.code, details: s.details });
    });
  });
}
