/**
 * `weft-await`: the helper the injector's classic-mode hooks run inside the proxy container
 * (the image has no shell or coreutils).
 *
 *   weft-await [--port=4191] [--path=/ready] [--timeout=120s]
 *       postStart: returns once the proxy's admin server answers 200 on /ready, so the kubelet
 *       starts the app containers only after the proxy has its identity; exits 1 on timeout
 *       (the kubelet then restarts the proxy container).
 *   weft-await sleep <seconds>
 *       preStop: keeps the proxy up while endpoints are withdrawn (wait-before-exit-seconds).
 *
 * It imports only the dependency-free duration parser and port table, so `deno run --cached-only`
 * needs nothing from a registry. It speaks HTTP/1.1 over a plain socket to 127.0.0.1, so no HTTP(S)_PROXY
 * setting can send the probe elsewhere.
 */
import { DurationError, parseDurationMs } from "../../proto/go_duration.ts";
import { Ports } from "../../proto/ports.ts";

export interface AwaitOptions {
  port: number;
  path: string;
  timeoutMs: number;
  intervalMs: number;
}

export class UsageError extends Error {
  override name = "UsageError";
}

const USAGE =
  `usage: weft-await [--port=${Ports.proxyAdmin}] [--path=/ready] [--timeout=120s] | weft-await sleep <seconds>`;

function durationMs(text: string, what: string): number {
  try {
    return parseDurationMs(text, what);
  } catch (e) {
    if (e instanceof DurationError) throw new UsageError(`${e.message}\n${USAGE}`);
    throw e;
  }
}

export type AwaitCommand = { kind: "await"; opts: AwaitOptions } | { kind: "sleep"; ms: number };

export function parseAwaitArgs(args: string[]): AwaitCommand {
  if (args[0] === "sleep") {
    if (args.length !== 2 || !/^\d+$/.test(args[1])) throw new UsageError(USAGE);
    return { kind: "sleep", ms: Number(args[1]) * 1000 };
  }
  const opts: AwaitOptions = { port: Ports.proxyAdmin, path: "/ready", timeoutMs: 120_000, intervalMs: 200 };
  for (const a of args) {
    const m = /^--(port|path|timeout)=(.+)$/.exec(a);
    if (!m) throw new UsageError(`unexpected argument "${a}"\n${USAGE}`);
    if (m[1] === "port") {
      if (!/^\d{1,5}$/.test(m[2]) || Number(m[2]) < 1 || Number(m[2]) > 65535) {
        throw new UsageError(`--port: "${m[2]}" is not a port`);
      }
      opts.port = Number(m[2]);
    } else if (m[1] === "path") {
      if (!m[2].startsWith("/")) throw new UsageError(`--path: "${m[2]}" does not start with /`);
      opts.path = m[2];
    } else opts.timeoutMs = durationMs(m[2], "--timeout");
  }
  return { kind: "await", opts };
}

/** One GET to 127.0.0.1; resolves to the status code, or a description of why there is none. */
async function probe(port: number, path: string, signal: AbortSignal): Promise<number | string> {
  let conn: Deno.TcpConn;
  try {
    conn = await Deno.connect({ hostname: "127.0.0.1", port });
  } catch (e) {
    return (e as Error).message;
  }
  const onAbort = () => conn.close();
  signal.addEventListener("abort", onAbort, { once: true });
  try {
    await conn.write(
      new TextEncoder().encode(
        `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: close\r\n\r\n`,
      ),
    );
    const buf = new Uint8Array(64);
    let n = 0;
    while (n < 12) {
      const r = await conn.read(buf.subarray(n));
      if (r === null) break;
      n += r;
    }
    const m = /^HTTP\/1\.[01] (\d{3})/.exec(new TextDecoder().decode(buf.subarray(0, n)));
    return m ? Number(m[1]) : "not an HTTP response";
  } catch (e) {
    return (e as Error).message;
  } finally {
    signal.removeEventListener("abort", onAbort);
    try {
      conn.close();
    } catch {
      // Already closed by the abort.
    }
  }
}

/** Polls until the endpoint answers 200; rejects naming the last answer when the time is up. */
export async function awaitReady(opts: AwaitOptions, signal?: AbortSignal): Promise<void> {
  const deadline = Date.now() + opts.timeoutMs;
  const ac = new AbortController();
  const timer = setTimeout(() => ac.abort(), opts.timeoutMs);
  signal?.addEventListener("abort", () => ac.abort(), { once: true });
  let last: number | string = "no answer";
  try {
    while (!ac.signal.aborted) {
      last = await probe(opts.port, opts.path, ac.signal);
      if (last === 200) return;
      const wait = Math.min(opts.intervalMs, deadline - Date.now());
      if (wait <= 0) break;
      await new Promise((r) => setTimeout(r, wait));
    }
  } finally {
    clearTimeout(timer);
  }
  throw new Error(
    `http://127.0.0.1:${opts.port}${opts.path} not ready after ${opts.timeoutMs}ms (last: ${
      typeof last === "number" ? `HTTP ${last}` : last
    })`,
  );
}

if (import.meta.main) {
  try {
    const cmd = parseAwaitArgs(Deno.args);
    if (cmd.kind === "sleep") await new Promise((r) => setTimeout(r, cmd.ms));
    else await awaitReady(cmd.opts);
  } catch (e) {
    console.error(`weft-await: ${(e as Error).message}`);
    Deno.exit(e instanceof UsageError ? 2 : 1);
  }
}
