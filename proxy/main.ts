/**
 * `deno run -A proxy/main.ts`: the proxy sidecar, configured by LINKERD2_PROXY_* variables
 * (reference: linkerd2-proxy's env). Exits 2 with a message naming the variable when one is bad.
 *
 * Identity: the identity client (proxy/identity/, ProxyIdentity) certifies the proxy and keeps
 * the CertStore current; it is passed to runProxy as an IdentityStarter so tests can swap it.
 */
import { ProxyEnv } from "../proto/env.ts";
import { resolveProxyConfig } from "./config/config.ts";
import { ConfigError } from "./config/parse.ts";
import type { IdentityStarter } from "./identity_seam.ts";
import { PROXY_IDENTITY_DEFAULTS, ProxyIdentity } from "./identity/mod.ts";
import { TrustMetrics } from "./identity/metrics.ts";
import { TrustRootsWatch } from "./identity/trust_roots_watch.ts";
import { makeLog } from "./core/log.ts";
import { runProxy } from "./run.ts";
import { LinuxOrigDst } from "./transport/orig_dst.ts";

/** Identity.Certify with renewal, from proxy/identity/. */
export const IDENTITY_CLIENT: IdentityStarter = async ({ config, store, trust, registry, log, signal }) => {
  const trustMetrics = new TrustMetrics(registry, trust, store);
  const svc = config.identitySvc.addr;
  const identity = new ProxyIdentity({
    localName: config.identity.localName,
    trustAnchorsPem: config.identity.trustAnchorsPem,
    tokenFile: config.identity.tokenFile,
    svcAddr: svc.host.includes(":") ? `[${svc.host}]:${svc.port}` : `${svc.host}:${svc.port}`,
    svcName: config.identitySvc.name,
    minRefreshMs: config.identity.minRefreshMs,
    maxRefreshMs: config.identity.maxRefreshMs,
    backoff: config.controlBackoff,
    certifyTimeoutMs: PROXY_IDENTITY_DEFAULTS.certifyTimeoutMs,
  }, { store, trust, registry, log: (line) => log("info", `identity: ${line}`) });
  const dir = config.identity.trustRootsDir;
  if (dir !== undefined) {
    const watch = new TrustRootsWatch(dir, {
      trust,
      reloads: trustMetrics.reloads,
      onRenewBefore: (at) => identity.renewIfIssuedBefore(at),
      log: (level, line) => log(level, `identity: ${line}`),
    });
    // Read before the first Certify, so the leaf is checked against the mounted bundle.
    await watch.reload().catch((e) => log("warn", `identity: trust roots: ${(e as Error).message}`));
    watch.run(signal).catch((e) => log("error", `trust roots watch stopped: ${(e as Error).message}`));
  }
  identity.run(signal).catch((e) => log("error", `identity client stopped: ${(e as Error).message}`));
};

export async function main(_args: string[], identity: IdentityStarter = IDENTITY_CLIENT): Promise<void> {
  let config;
  try {
    config = resolveProxyConfig((n) => Deno.env.get(n));
  } catch (e) {
    if (e instanceof ConfigError) {
      console.error(`proxy: invalid configuration: ${e.message}`);
      Deno.exit(2);
    }
    throw e;
  }
  const log = makeLog(Deno.env.get(ProxyEnv.log));
  const proxy = runProxy(config, { identity, origDst: new LinuxOrigDst(), log });
  const onSignal = () => void proxy.shutdown("SIGTERM");
  Deno.addSignalListener("SIGTERM", onSignal);
  Deno.addSignalListener("SIGINT", onSignal);
  await proxy.finished;
  Deno.removeSignalListener("SIGTERM", onSignal);
  Deno.removeSignalListener("SIGINT", onSignal);
  Deno.exit(0);
}

if (import.meta.main) await main(Deno.args);
