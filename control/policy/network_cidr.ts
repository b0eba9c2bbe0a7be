/**
 * Networks of authorization resources: parsing (a bare address is one host) and whether one
 * network contains another, used to check `except` entries the way Linkerd's admission does.
 */
import type { IPNetwork } from "../../proto/gen/net.ts";
import { toIpAddress, toIpNetwork } from "../../proto/ip.ts";

/**
 * Parses a resource's network: a CIDR, or a bare address meaning that one host (/32 or /128),
 * as Linkerd's resources allow.
 */
export function parseNetwork(text: string): IPNetwork {
  if (text.includes("/")) return toIpNetwork(text);
  const ip = toIpAddress(text);
  return { ip, prefixLen: ip.ip?.$case === "ipv6" ? 128 : 32 };
}

interface Span {
  bits: number;
  value: bigint;
  prefixLen: number;
}

function span(n: IPNetwork): Span {
  const ip = n.ip?.ip;
  if (ip?.$case === "ipv4") return { bits: 32, value: BigInt(ip.value >>> 0), prefixLen: n.prefixLen };
  if (ip?.$case === "ipv6") {
    const v = (BigInt.asUintN(64, ip.value.first) << 64n) | BigInt.asUintN(64, ip.value.last);
    return { bits: 128, value: v, prefixLen: n.prefixLen };
  }
  throw new Error("IPNetwork has no address");
}

/** True when every address of `inner` is in `outer` (an IPv4 network never contains IPv6). */
export function networkContains(outer: IPNetwork, inner: IPNetwork): boolean {
  const a = span(outer), b = span(inner);
  if (a.bits !== b.bits || a.prefixLen > b.prefixLen) return false;
  const shift = BigInt(a.bits - a.prefixLen);
  return (a.value >> shift) === (b.value >> shift);
}
