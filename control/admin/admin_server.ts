/**
 * The admin HTTP server every control-plane component runs: `/live`, `/ready` and `/metrics`.
 * Readiness is a list of named checks so a component reports exactly what it still waits for.
 */
import type { Registry } from "prom-client";

export interface ReadinessCheck {
  name: string;
  /** undefined when ready, otherwise why not. */
  check(): string | undefined;
}

export interface AdminServerOptions {
  hostname: string;
  port: number;
  registry: Registry;
  readiness: ReadinessCheck[];
  signal: AbortSignal;
  onListen?: (addr: Deno.NetAddr) => void;
}

export interface AdminServer {
  addr: Deno.NetAddr;
  finished: Promise<void>;
}

export function notReady(checks: ReadinessCheck[]): string[] {
  const out: string[] = [];
  for (const c of checks) {
    const why = c.check();
    if (why !== undefined) out.push(`${c.name}: ${why}`);
  }
  return out;
}

export function serveAdmin(opts: AdminServerOptions): AdminServer {
  const server = Deno.serve({
    hostname: opts.hostname,
    port: opts.port,
    signal: opts.signal,
    onListen: () => {},
  }, async (req) => {
    const path = new URL(req.url).pathname;
    switch (path) {
      case "/live":
        return new Response("live\n");
      case "/ready": {
        const pending = notReady(opts.readiness);
        return pending.length === 0
          ? new Response("ready\n")
          : new Response(`not ready:\n${pending.join("\n")}\n`, { status: 503 });
      }
      case "/metrics":
        return new Response(await opts.registry.metrics(), {
          headers: { "content-type": opts.registry.contentType },
        });
      default:
        return new Response("not found\n", { status: 404 });
    }
  });
  const addr = server.addr as Deno.NetAddr;
  opts.onListen?.(addr);
  return { addr, finished: server.finished };
}
