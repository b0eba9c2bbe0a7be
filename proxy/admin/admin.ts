/**
 * The proxy's admin server (4191): `/live`, `/ready` (only once identity is certified),
 * `/metrics`, and `POST /shutdown` when LINKERD2_PROXY_SHUTDOWN_ENDPOINT_ENABLED=true.
 *
 * The admin port is exempt from the inbound redirect and the injector binds it to 0.0.0.0 so
 * the kubelet and Prometheus can reach `/live`, `/ready` and `/metrics` from outside the pod.
 * `/shutdown` is therefore answered only for a loopback peer (a container of the same pod, as
 * in Linkerd); any other peer gets 403, counted in `proxy_admin_shutdown_forbidden_total`.
 */
import { type Registry } from "../metrics/registry.ts";
import { Counter } from "../metrics/instruments.ts";
import { registerProcessMetrics } from "../metrics/process_metrics.ts";
import { isLoopbackIp } from "../inbound/cidr.ts";
import type { Log } from "../core/log.ts";

/** At most one log line per this period for refused /shutdown requests (the counter has them all). */
const REFUSAL_LOG_PERIOD_MS = 10_000;

export interface ProxyAdminOptions {
  hostname: string;
  port: number;
  registry: Registry;
  /** undefined when ready, otherwise why not. */
  notReady: () => string | undefined;
  /** Set when the shutdown endpoint is enabled. */
  onShutdown?: () => void;
  signal: AbortSignal;
  log?: Log;
  now?: () => number;
}

export interface ProxyAdmin {
  addr: Deno.NetAddr;
  finished: Promise<void>;
}

export function serveProxyAdmin(o: ProxyAdminOptions): ProxyAdmin {
  const now = o.now ?? Date.now;
  // The process's own CPU and memory, read at scrape time (what `weft resources` sizes the proxy from).
  registerProcessMetrics(o.registry);
  const forbidden = new Counter({
    name: "proxy_admin_shutdown_forbidden_total",
    help: "POST /shutdown requests refused because they did not come from inside the pod (loopback)",
    registers: [o.registry],
  });
  let lastLog = -Infinity;
  let unlogged = 0;
  const refuse = (peer: string): Response => {
    forbidden.inc();
    unlogged++;
    // Logged at a bounded rate: a flood of refused requests must not become a flood of log lines.
    if (now() - lastLog >= REFUSAL_LOG_PERIOD_MS) {
      o.log?.(
        "warn",
        `admin: refused ${unlogged} /shutdown request(s) from outside the pod (latest from ${peer})`,
      );
      lastLog = now();
      unlogged = 0;
    }
    return new Response(
      `forbidden: /shutdown is accepted only from inside the pod (loopback), not from ${peer}\n`,
      { status: 403 },
    );
  };

  const server = Deno.serve(
    { hostname: o.hostname, port: o.port, signal: o.signal, onListen: () => {} },
    async (req, info) => {
      const path = new URL(req.url).pathname;
      switch (path) {
        case "/live":
          return new Response("live\n");
        case "/ready": {
          const why = o.notReady();
          return why === undefined
            ? new Response("ready\n")
            : new Response(`not ready: ${why}\n`, { status: 503 });
        }
        case "/metrics":
          return new Response(await o.registry.metrics(), {
            headers: { "content-type": o.registry.contentType },
          });
        case "/shutdown": {
          if (!o.onShutdown) return new Response("shutdown endpoint is disabled\n", { status: 404 });
          const peer = (info.remoteAddr as Deno.NetAddr).hostname;
          if (!isLoopbackIp(peer)) return refuse(peer);
          if (req.method !== "POST") return new Response("use POST\n", { status: 405 });
          queueMicrotask(o.onShutdown);
          return new Response("shutdown\n");
        }
        default:
          return new Response("not found\n", { status: 404 });
      }
    },
  );
  return { addr: server.addr as Deno.NetAddr, finished: server.finished };
}
