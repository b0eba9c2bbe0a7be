/**
 * The addresses behind a control-plane target. Control-plane Services are headless, so a name
 * resolves to every controller replica; the channel spreads its calls over all of them. An IP
 * literal is its own single address. No DNS TXT (service config) lookups: the control plane
 * publishes none, as in Linkerd.
 */
import { lookup } from "node:dns/promises";
import { isIP } from "node:net";

export interface Endpoint {
  host: string;
  port: number;
}

/** Current addresses of a target; rejects when none can be had. */
export type Resolve = (signal: AbortSignal) => Promise<Endpoint[]>;

export function endpointKey(e: Endpoint): string {
  return e.host.includes(":") ? `[${e.host}]:${e.port}` : `${e.host}:${e.port}`;
}

/** A host name or IP and port, resolved with the system resolver (A and AAAA, /etc/hosts). */
export function dnsResolve(host: string, port: number): Resolve {
  const bare = host.startsWith("[") && host.endsWith("]") ? host.slice(1, -1) : host;
  // `localhost.` is loopback by definition (the proxy's config accepts it as such); resolvers that
  // match /etc/hosts literally do not know it with the dot.
  const literal = bare === "localhost." ? "127.0.0.1" : bare;
  if (isIP(literal)) {
    const fixed = [{ host: literal, port }];
    return () => Promise.resolve(fixed);
  }
  return async () => {
    let found: { address: string }[];
    try {
      found = await lookup(bare, { all: true, verbatim: true });
    } catch (e) {
      throw new Error(`cannot resolve ${bare}: ${(e as Error).message}`);
    }
    if (found.length === 0) throw new Error(`${bare} has no addresses`);
    return [...new Set(found.map((a) => a.address))].map((a) => ({ host: a, port }));
  };
}
