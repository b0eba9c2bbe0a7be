/**
 * proxy/identity: the proxy's workload certificate. proxy/config builds a ProxyIdentityConfig
 * from `LINKERD2_PROXY_IDENTITY_*`; proxy/main runs `new ProxyIdentity(config, { store, registry }).run(signal)`
 * and the TLS layer reads `store.current()` per handshake (`await store.ready` before listening).
 */
export { CertStore, type TlsCredentials } from "../core/cert_store.ts";
export { PROXY_IDENTITY_DEFAULTS, type ProxyIdentityConfig } from "./config.ts";
export { ProxyIdentity, type ProxyIdentityDeps } from "./proxy_identity.ts";
export { isLoopbackAddr } from "./certify_client.ts";
export { type Clock, systemClock } from "../../proto/support/clock.ts";
