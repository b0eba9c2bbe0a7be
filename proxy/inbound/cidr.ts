/** IP networks as bigint ranges, for per-connection authorization without string work. */
import { parseIpv4, parseIpv6Bytes } from "../../proto/ip.ts";

export interface Net {
  v6: boolean;
  base: bigint;
  mask: bigint;
}

export function ipToBigint(ip: string): { v6: boolean; value: bigint } {
  const lower = ip.toLowerCase();
  if (lower.startsWith("::ffff:") && lower.includes(".")) {
    return { v6: false, value: BigInt(parseIpv4(lower.slice(7))) };
  }
  if (!ip.includes(":")) return { v6: false, value: BigInt(parseIpv4(ip)) };
  let v = 0n;
  for (const b of parseIpv6Bytes(ip)) v = (v << 8n) | BigInt(b);
  return { v6: true, value: v };
}

export function makeNet(ip: string, prefix: number): Net {
  const { v6, value } = ipToBigint(ip);
  const bits = v6 ? 128n : 32n;
  const all = (1n << bits) - 1n;
  const mask = prefix === 0 ? 0n : (all >> (bits - BigInt(prefix))) << (bits - BigInt(prefix));
  return { v6, base: value & mask, mask };
}

export function netContains(net: Net, ip: { v6: boolean; value: bigint }): boolean {
  return net.v6 === ip.v6 && (ip.value & net.mask) === net.base;
}

export function isLoopbackIp(ip: string): boolean {
  const lower = ip.toLowerCase();
  return lower === "::1" || lower.startsWith("127.") || lower.startsWith("::ffff:127.");
}
