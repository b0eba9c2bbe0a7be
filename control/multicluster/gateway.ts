/**
 * The gateway's addresses from a Link's `gatewayAddress`: comma-separated IPs or DNS names, as in
 * Linkerd; names are resolved (A and AAAA) and the result kept for `ttlMs`, so reconciling many
 * Services does not query DNS for each.
 */
import { isIP } from "node:net";

export type Resolver = (name: string, type: "A" | "AAAA") => Promise<string[]>;

export const dnsResolver: Resolver = (name, type) => Deno.resolveDns(name, type);

export async function resolveGatewayIps(address: string, resolve: Resolver = dnsResolver): Promise<string[]> {
  const out: string[] = [];
  for (const part of address.split(",").map((s) => s.trim()).filter((s) => s !== "")) {
    if (isIP(part)) {
      out.push(part);
      continue;
    }
    const found = [
      ...await resolve(part, "A").catch(() => [] as string[]),
      ...await resolve(part, "AAAA").catch(() => [] as string[]),
    ];
    if (found.length === 0) throw new Error(`gateway address ${part} does not resolve`);
    out.push(...found);
  }
  return [...new Set(out)].sort();
}

/** `resolveGatewayIps` with a cache per address for `ttlMs`. */
export function cachedGatewayIps(
  ttlMs: number,
  resolve: Resolver = dnsResolver,
  now: () => number = Date.now,
): (address: string) => Promise<string[]> {
  let cached: { address: string; at: number; ips: string[] } | undefined;
  return async (address) => {
    if (cached && cached.address === address && now() - cached.at < ttlMs) return cached.ips;
    const ips = await resolveGatewayIps(address, resolve);
    cached = { address, at: now(), ips };
    return ips;
  };
}
