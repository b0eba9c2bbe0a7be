/**
 * Conversions between textual IP addresses and the `io.linkerd.proxy.net` wire forms: IPv4 as a
 * fixed32 whose most significant byte is the first octet, IPv6 as two fixed64 halves (first = the
 * high 8 octets, big-endian).
 */
import type { IPAddress, IPNetwork, TcpAddress } from "./gen_messages/net.ts";

export class IpParseError extends Error {
  override name = "IpParseError";
}

/** Parses a dotted IPv4 address into its 32-bit value. */
export function parseIpv4(text: string): number {
  const parts = text.split(".");
  if (parts.length !== 4) {
    throw new IpParseError(`"${text}" is not an IPv4 address: want 4 octets, got ${parts.length}`);
  }
  let value = 0;
  for (const part of parts) {
    if (!/^(0|[1-9][0-9]{0,2})$/.test(part) || Number(part) > 255) {
      throw new IpParseError(`"${text}" is not an IPv4 address: bad octet "${part}"`);
    }
    value = value * 256 + Number(part);
  }
  return value;
}

export function formatIpv4(value: number): string {
  return [value >>> 24, (value >>> 16) & 0xff, (value >>> 8) & 0xff, value & 0xff].join(".");
}

/** Parses an IPv6 address (with `::` compression and an optional embedded IPv4 tail) into 16 bytes. */
export function parseIpv6Bytes(text: string): Uint8Array {
  const fail = (why: string) => new IpParseError(`"${text}" is not an IPv6 address: ${why}`);
  let body = text;
  if (body.startsWith("[") && body.endsWith("]")) body = body.slice(1, -1);
  if (body.includes("%")) throw fail("zone identifiers are not supported");
  const halves = body.split("::");
  if (halves.length > 2) throw fail("more than one '::'");
  const groups = (s: string): number[] => {
    if (s === "") return [];
    const out: number[] = [];
    const items = s.split(":");
    items.forEach((item, i) => {
      if (i === items.length - 1 && item.includes(".")) {
        const v4 = parseIpv4(item);
        out.push(v4 >>> 16, v4 & 0xffff);
      } else {
        if (!/^[0-9a-fA-F]{1,4}$/.test(item)) throw fail(`bad group "${item}"`);
        out.push(parseInt(item, 16));
      }
    });
    return out;
  };
  const head = groups(halves[0]);
  const tail = halves.length === 2 ? groups(halves[1]) : [];
  let all: number[];
  if (halves.length === 2) {
    if (head.length + tail.length > 7) throw fail("too many groups around '::'");
    all = [...head, ...new Array(8 - head.length - tail.length).fill(0), ...tail];
  } else {
    if (head.length !== 8) throw fail(`want 8 groups, got ${head.length}`);
    all = head;
  }
  const bytes = new Uint8Array(16);
  all.forEach((g, i) => {
    bytes[2 * i] = g >> 8;
    bytes[2 * i + 1] = g & 0xff;
  });
  return bytes;
}

function bytesToBigint(bytes: Uint8Array, start: number): bigint {
  let v = 0n;
  for (let i = start; i < start + 8; i++) v = (v << 8n) | BigInt(bytes[i]);
  return v;
}

/** Formats 16 bytes as a canonical (RFC 5952) IPv6 address. */
export function formatIpv6Bytes(bytes: Uint8Array): string {
  const groups: number[] = [];
  for (let i = 0; i < 16; i += 2) groups.push((bytes[i] << 8) | bytes[i + 1]);
  // Longest run of two or more zero groups is compressed; the first wins a tie.
  let best = -1, bestLen = 1;
  for (let i = 0; i < 8;) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLen) [best, bestLen] = [i, j - i];
    i = j;
  }
  const hex = (gs: number[]) => gs.map((g) => g.toString(16)).join(":");
  if (best < 0) return hex(groups);
  return `${hex(groups.slice(0, best))}::${hex(groups.slice(best + bestLen))}`;
}

/** Parses an IPv4 or IPv6 address into the wire message. */
export function toIpAddress(text: string): IPAddress {
  if (text.includes(":")) {
    const bytes = parseIpv6Bytes(text);
    return {
      ip: { $case: "ipv6", value: { first: bytesToBigint(bytes, 0), last: bytesToBigint(bytes, 8) } },
    };
  }
  return { ip: { $case: "ipv4", value: parseIpv4(text) } };
}

/** Formats the wire message as text; throws when the oneof is unset. */
export function fromIpAddress(addr: IPAddress): string {
  switch (addr.ip?.$case) {
    case "ipv4":
      return formatIpv4(addr.ip.value);
    case "ipv6": {
      const bytes = new Uint8Array(16);
      const view = new DataView(bytes.buffer);
      view.setBigUint64(0, BigInt.asUintN(64, addr.ip.value.first));
      view.setBigUint64(8, BigInt.asUintN(64, addr.ip.value.last));
      return formatIpv6Bytes(bytes);
    }
    default:
      throw new IpParseError("IPAddress has neither ipv4 nor ipv6 set");
  }
}

export function toTcpAddress(ip: string, port: number): TcpAddress {
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw new IpParseError(`port ${port} is out of range`);
  }
  return { ip: toIpAddress(ip), port };
}

/** Formats a TcpAddress as `ip:port` (IPv6 in brackets). */
export function fromTcpAddress(addr: TcpAddress): string {
  if (!addr.ip) throw new IpParseError("TcpAddress has no ip");
  const ip = fromIpAddress(addr.ip);
  return ip.includes(":") ? `[${ip}]:${addr.port}` : `${ip}:${addr.port}`;
}

/** Parses `a.b.c.d/n` or `v6/n` into an IPNetwork. */
export function toIpNetwork(cidr: string): IPNetwork {
  const slash = cidr.lastIndexOf("/");
  if (slash < 0) throw new IpParseError(`"${cidr}" is not a CIDR: missing "/<prefix length>"`);
  const ip = toIpAddress(cidr.slice(0, slash));
  const lenText = cidr.slice(slash + 1);
  const max = ip.ip?.$case === "ipv6" ? 128 : 32;
  if (!/^[0-9]{1,3}$/.test(lenText) || Number(lenText) > max) {
    throw new IpParseError(`"${cidr}" is not a CIDR: prefix length "${lenText}" is not in 0..${max}`);
  }
  return { ip, prefixLen: Number(lenText) };
}
