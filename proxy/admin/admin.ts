/**
 * The proxy's admin server (4191): `/live`, `/ready` (only once identity is certified),
 * `/metrics`, and `POST /shutdown` when LINKERD2_PROXY_SHUTDOWN_ENDPOINT_ENABLED=true.
 */
import type { Registry } from "prom-client";

export interface ProxyAdminOptions {
  hostname: string;
  port: number;
  registry: Registry;
  /** undefined when ready, otherwise why not. */
  notReady: () => string | undefined;
  /** Set when the shutdown endpoint is enabled. */
  onShutdown?: () => void;
  signal: AbortSignal;
}

export interface ProxyAdmin {
  addr: Deno.NetAddr;
  finished: Promise<void>;
}

export function serveProxyAdmin(o: ProxyAdminOptions): ProxyAdmin {
  const server = Deno.serve(
    { hostname: o.hostname, port: o.port, signal: o.signal, onListen: () => {} },
    async (req) => {
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
        case "/shutdown":
          if (!o.onShutdown) return new Response("shutdown endpoint is disabled\n", { status: 404 });
          if (req.method !== "POST") return new Response("use POST\n", { status: 405 });
          queueMicrotask(o.onShutdown);
          return new Response("shutdown\n");
        default:
          return new Response("not found\n", { status: 404 });
      }
    },
  );
  return { addr: server.addr as Deno.NetAddr, finished: server.finished };
}
