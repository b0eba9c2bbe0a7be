/**
 * Where the proxy's identity client plugs in. The client (proxy/identity/, written separately)
 * certifies this proxy with the Identity service and keeps the CertStore current; the rest of
 * the proxy only reads the store. `runProxy` takes an `IdentityStarter` so tests and the real
 * client are interchangeable.
 */
import type { Registry } from "./metrics/registry.ts";
import type { ProxyConfig } from "./config/config.ts";
import type { CertStore } from "./core/cert_store.ts";
import type { TrustStore } from "./core/trust_store.ts";
import type { Log } from "./core/log.ts";

export interface IdentityStartOptions {
  config: ProxyConfig;
  store: CertStore;
  /** The live trust bundle the TLS layer verifies peers against (the starter keeps it current). */
  trust: TrustStore;
  registry: Registry;
  log: Log;
  signal: AbortSignal;
}

/** Starts keeping `store` certified; resolves once started (not once certified). */
export type IdentityStarter = (o: IdentityStartOptions) => Promise<void>;
