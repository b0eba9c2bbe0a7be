/**
 * CIDR arithmetic for authorization networks: whether one network contains another, used to
 * check a network's `except` entries the way Linkerd's admission does.
 */
import type { IPNetwork } from "../../proto/gen_messages/net.ts";

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
