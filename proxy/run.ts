/**
 * Assembles a proxy from its resolved configuration: admin first, then identity, eager policy
 * watches, and — once identity is certified — the inbound and outbound listeners (Linkerd's
 * order). `shutdown()` stops accepting, drains open connections up to the grace period and closes
 * the rest.
 */
import { Registry } from "./metrics/registry.ts";
import { L4RouteMetrics } from "./metrics/l4_route_metrics.ts";
import { HttpRouteMetrics } from "./metrics/http_route_metrics.ts";
import { BalancerMetrics } from "./metrics/balancer_metrics.ts";
import { Ports } from "../proto/ports.ts";
import { type ProxyConfig, proxyOwnPorts } from "./config/config.ts";
import { CertStore } from "./core/cert_store.ts";
import { buildTrustBundle, TrustStore } from "./core/trust_store.ts";
import type { IdentityStarter } from "./identity_seam.ts";
import type { Log } from "./core/log.ts";
import { serveProxyAdmin } from "./admin/admin.ts";
import { Discovery } from "./discovery/clients.ts";
import type { WatchHandle } from "./discovery/shared_watch.ts";
import { Inbound } from "./inbound/inbound.ts";
import type { InboundPortPolicy } from "./discovery/clients.ts";
import { InboundHttp } from "./inbound/http/stack.ts";
import { AccessLog, type LineWriter } from "./inbound/http/access_log.ts";
import { OutboundHttp } from "./outbound/http/logical.ts";
import { HttpMetrics } from "./metrics/http_metrics.ts";
import { Outbound } from "./outbound/outbound.ts";
import { EndpointReachability } from "./outbound/reachability.ts";
import { connectTcp } from "./transport/connect.ts";
import { TcpMetrics } from "./metrics/tcp_metrics.ts";
import { GatewayMetrics } from "./metrics/gateway_metrics.ts";
import { Gateway } from "./inbound/gateway.ts";
import { ConnTracker } from "./transport/conn_tracker.ts";
import { listenAll, type Listener } from "./transport/listen.ts";
import { normalizeIp, type OrigDst } from "./transport/orig_dst.ts";
import { MeshTls } from "./transport/tls.ts";
import { Taps } from "./tap/taps.ts";
import { serveTap, type TapServer } from "./tap/server.ts";

export interface ProxyDeps {
  identity: IdentityStarter;
  origDst: OrigDst;
  log: Log;
  store?: CertStore;
  /** Where the HTTP access log goes (default: stderr, as Linkerd's proxy writes it). */
  accessLogWriter?: LineWriter;
}

export interface RunningProxy {
  store: CertStore;
  trust: TrustStore;
  registry: Registry;
  adminAddr: Deno.NetAddr;
  /** Resolves when the data-plane listeners are up (after identity is certified). */
  serving: Promise<{ inbound: Listener; outbound: Listener[]; tap: TapServer | undefined }>;
  /** The live taps the stacks report to. */
  taps: Taps;
  /** Stop accepting, drain, close; resolves when done. Idempotent. */
  shutdown(reason: string): Promise<void>;
  /** Resolves after shutdown completes. */
  finished: Promise<void>;
}

export function runProxy(config: ProxyConfig, deps: ProxyDeps): RunningProxy {
  const { log } = deps;
  const store = deps.store ?? new CertStore();
  // The configured anchors until the identity starter reads the trust-roots directory (if any).
  const trust = new TrustStore(buildTrustBundle(config.identity.trustAnchorsPem).bundle);
  const registry = new Registry();
  const metrics = new TcpMetrics(registry);
  const httpMetrics = new HttpMetrics(registry);
  const abort = new AbortController();
  const tracker = new ConnTracker();
  const tls = new MeshTls(store, trust);
  const discovery = new Discovery({
    store,
    trust,
    destination: config.destination,
    policy: config.policy,
    workload: config.policyWorkload,
    contextToken: config.destinationContext,
    backoff: config.controlBackoff,
    inboundIdleMs: config.inboundDiscoveryIdleTimeoutMs,
    outboundIdleMs: config.outboundDiscoveryIdleTimeoutMs,
    onEvent: (ev, key, detail) => log("debug", `discovery ${ev} ${key}${detail ? `: ${detail}` : ""}`),
    registry,
    log,
  });

  let stopping: Promise<void> | undefined;
  let resolveFinished!: () => void;
  const finished = new Promise<void>((r) => resolveFinished = r);
  const listeners: Listener[] = [];

  const admin = serveProxyAdmin({
    hostname: config.adminListen.ip,
    port: config.adminListen.port,
    registry,
    notReady: () =>
      stopping
        ? "shutting down"
        : store.current() === undefined
        ? "identity is not certified yet"
        : undefined,
    onShutdown: config.shutdownEndpointEnabled ? () => void shutdown("shutdown endpoint") : undefined,
    signal: abort.signal,
    log,
  });

  // Eager policy watches: the configured inbound ports and the admin port, held for the proxy's life.
  const eager: WatchHandle<InboundPortPolicy>[] = [];
  // In gateway mode the inbound port's own policy authorizes gateway callers (Linkerd watches it too).
  const gatewayPorts = config.gateway ? [config.inboundListen.port] : [];
  for (
    const p of new Set([...config.inboundPorts, config.adminListen.port || Ports.proxyAdmin, ...gatewayPorts])
  ) {
    eager.push(discovery.inbound.subscribe(p));
  }

  deps.identity({ config, store, trust, registry, log, signal: abort.signal }).catch((e) =>
    log("error", `identity client failed to start: ${(e as Error).message}`)
  );

  // Aborted when draining starts, so kept-alive HTTP connections close after their current request.
  const drain = new AbortController();
  const taps = new Taps();
  let tapServer: TapServer | undefined;
  const inboundHttp = new InboundHttp({
    taps,
    drain: drain.signal,
    metrics: httpMetrics,
    accessLog: config.accessLog === undefined
      ? undefined
      : new AccessLog(config.accessLog, deps.accessLogWriter ?? Deno.stderr, { registry }),
    connectTimeoutMs: config.inboundConnectTimeoutMs,
    log,
  });
  // Endpoints whose connects fail leave rotation (HTTP balancers and the TCP path) until a probe
  // connects again, with Linkerd's outbound connect backoff (LINKERD2_PROXY_OUTBOUND_CONNECT_EXP_BACKOFF_*).
  const reachability = new EndpointReachability({
    backoff: config.controlBackoff,
    probe: (ip, port) =>
      connectTcp(ip, port, config.outboundConnectTimeoutMs).then((s) => (s.destroy(), true), () => false),
    log: (m) => log("debug", m),
  });
  const outboundHttp = new OutboundHttp({
    reachability,
    taps,
    drain: drain.signal,
    discovery,
    tls,
    metrics: httpMetrics,
    connectTimeoutMs: config.outboundConnectTimeoutMs,
    discoveryTimeoutMs: 3000,
    idleMs: Math.max(config.outboundDiscoveryIdleTimeoutMs, 10_000),
    localIps: new Set(config.inboundIps ?? []),
    log,
    routeMetrics: new HttpRouteMetrics(registry),
    balancerMetrics: new BalancerMetrics(registry),
    tcp: metrics,
  });
  const gatewayMetrics = new GatewayMetrics(registry);
  const inboundPolicy = (port: number) => inbound.policy(port);
  const gateway = config.gateway === undefined ? undefined : new Gateway({
    suffixes: config.gateway.suffixes,
    inboundPort: config.inboundListen.port,
    policy: inboundPolicy,
    discovery,
    tls,
    gatewayIdentities: config.trustedGatewayIdentities,
    connectTimeoutMs: config.outboundConnectTimeoutMs,
    discoveryTimeoutMs: 3000,
    metrics: gatewayMetrics,
    tcp: metrics,
    tracker,
    log,
    reachability,
  });
  const inbound: Inbound = new Inbound({
    inboundPort: config.inboundListen.port,
    defaultPolicy: config.inboundDefaultPolicy,
    clusterNetworks: config.clusterNetworks,
    opaquePorts: config.opaquePorts,
    detectTimeoutMs: config.inboundDetectTimeoutMs,
    connectTimeoutMs: config.inboundConnectTimeoutMs,
    policyWaitMs: Math.min(1000, config.inboundDetectTimeoutMs),
    discovery,
    origDst: deps.origDst,
    tls,
    metrics,
    http: inboundHttp,
    tracker,
    log,
    ownPorts: proxyOwnPorts(config),
    podIps: config.inboundIps === undefined ? undefined : new Set(config.inboundIps.map(normalizeIp)),
    gateway,
    trustedGateways: config.trustedGatewayIdentities,
    gatewayMetrics,
  });
  const outbound = new Outbound({
    reachability,
    listenPorts: new Set([
      config.inboundListen.port,
      ...config.outboundListen.map((a) => a.port),
      config.adminListen.port,
    ]),
    connectTimeoutMs: config.outboundConnectTimeoutMs,
    discoveryTimeoutMs: 3000,
    detectTimeoutMs: config.outboundDetectTimeoutMs,
    discovery,
    http: outboundHttp,
    origDst: deps.origDst,
    tls,
    metrics,
    routeMetrics: new L4RouteMetrics(registry),
    tracker,
    log,
  });

  const serving = (async () => {
    const waiting = setInterval(() => log("info", "Waiting for identity to be initialized..."), 15_000);
    try {
      await Promise.race([
        store.ready,
        new Promise((_, reject) =>
          abort.signal.addEventListener(
            "abort",
            () => reject(new Error("shut down before identity was certified")),
          )
        ),
      ]);
    } finally {
      clearInterval(waiting);
    }
    log("info", `Certified identity: ${store.current()?.localName}`);
    const warn = (line: string) => log("warn", line);
    const [inL] = await listenAll([config.inboundListen], inbound.handle, warn);
    listeners.push(inL);
    const outL = await listenAll(config.outboundListen, outbound.handle, warn);
    listeners.push(...outL);
    log(
      "info",
      `inbound on ${inL.addr.ip}:${inL.addr.port}, outbound on ${
        outL.map((l) => `${l.addr.ip}:${l.addr.port}`).join(", ")
      }`,
    );
    // The tap server only with a tap identity to authorize (LINKERD2_PROXY_TAP_SVC_NAME), after
    // identity: it serves with the proxy's own certificate.
    if (config.controlListen !== undefined && config.tapSvcName !== undefined) {
      // A port it cannot bind costs tap, not the data path.
      tapServer = await serveTap({
        listen: config.controlListen,
        tls,
        tapName: config.tapSvcName,
        taps,
        log,
        registry,
      }).catch((e) => {
        log("error", `tap server failed to start: ${(e as Error).message}`);
        return undefined;
      });
    } else log("info", "no tap server: LINKERD2_PROXY_TAP_SVC_NAME is not set");
    return { inbound: inL, outbound: outL, tap: tapServer };
  })();
  serving.catch(() => {});

  function shutdown(reason: string): Promise<void> {
    if (stopping) return stopping;
    stopping = (async () => {
      log(
        "info",
        `shutting down (${reason}): draining ${tracker.size} connection(s) for up to ${config.shutdownGracePeriodMs}ms`,
      );
      await Promise.all(listeners.map((l) => l.close()));
      await tapServer?.close();
      drain.abort();
      const clean = await tracker.drain(config.shutdownGracePeriodMs);
      if (!clean) log("warn", "grace period over: closed the remaining connections");
      for (const h of eager) h.release();
      inboundHttp.close();
      outboundHttp.close();
      reachability.close();
      discovery.close();
      abort.abort();
      await admin.finished.catch(() => {});
      resolveFinished();
    })();
    return stopping;
  }

  return { store, trust, registry, adminAddr: admin.addr, serving, taps, shutdown, finished };
}
