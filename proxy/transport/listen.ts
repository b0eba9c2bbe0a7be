/** TCP listeners for the proxy's inbound and outbound ports. */
import * as net from "node:net";
import type { ListenAddr } from "../config/parse.ts";

export interface Listener {
  addr: { ip: string; port: number };
  /** Stops accepting; established connections are left alone (the drain closes them). */
  close(): Promise<void>;
}

export function listenTcp(addr: ListenAddr, onConn: (sock: net.Socket) => void): Promise<Listener> {
  return new Promise((resolve, reject) => {
    const server = net.createServer({ noDelay: true, allowHalfOpen: true }, onConn);
    server.once("error", reject);
    server.listen({ host: addr.ip, port: addr.port, backlog: 1024 }, () => {
      server.off("error", reject);
      const a = server.address() as net.AddressInfo;
      resolve({
        addr: { ip: a.address, port: a.port },
        // server.close() stops accepting at once; its callback would wait for every connection
        // to end, which is the drain's job (waiting here kept shutdown from starting the drain).
        close: () => {
          server.close();
          return Promise.resolve();
        },
      });
    });
  });
}

/** Errors that mean "this pod has no such IPv6 address" (loopback IPv6 disabled, or no IPv6 at all). */
const NO_IPV6 = new Set(["EADDRNOTAVAIL", "EAFNOSUPPORT", "EINVAL"]);

/**
 * Listens on every address, tolerating a pod without IPv6: the injector's dual-stack default asks
 * for `[::1]` and `[::]`, but a pod whose loopback has IPv6 disabled cannot bind `::1`, and a kernel
 * without IPv6 cannot bind `::`. Such a pod has no IPv6 traffic to proxy, so an IPv6 address that
 * fails that way is skipped (a wildcard falls back to `0.0.0.0`) with a warning, rather than
 * leaving the proxy with no listener at all. Any other failure, or no listener left, is an error.
 */
export async function listenAll(
  addrs: ListenAddr[],
  onConn: (sock: net.Socket) => void,
  warn: (line: string) => void,
  listen: typeof listenTcp = listenTcp,
): Promise<Listener[]> {
  const out: Listener[] = [];
  const bound = new Set<string>();
  const bind = async (addr: ListenAddr) => {
    const key = `${addr.ip}:${addr.port}`;
    if (bound.has(key)) return;
    out.push(await listen(addr, onConn));
    bound.add(key);
  };
  let skipped: unknown;
  try {
    for (const a of addrs) {
      try {
        await bind(a);
      } catch (e) {
        const code = (e as { code?: string }).code ?? "";
        if (!a.ip.includes(":") || !NO_IPV6.has(code)) throw e;
        skipped ??= e;
        if (a.ip === "::") {
          warn(
            `cannot listen on [::]:${a.port} (${code}): no IPv6 in this pod, listening on 0.0.0.0 instead`,
          );
          await bind({ ip: "0.0.0.0", port: a.port });
        } else {
          warn(
            `cannot listen on [${a.ip}]:${a.port} (${code}): no IPv6 on this address in this pod, skipped`,
          );
        }
      }
    }
    if (out.length === 0) throw skipped ?? new Error("no listen address configured");
  } catch (e) {
    for (const l of out) await l.close();
    throw e;
  }
  return out;
}
