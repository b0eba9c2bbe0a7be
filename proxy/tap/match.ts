/**
 * An ObserveRequest's match tree, checked and compiled once per tap into plain predicates, as
 * linkerd2-proxy's tap matches requests: all/any/not, source and destination networks or port
 * ranges, destination and route labels, HTTP scheme, method, authority and path (exact or prefix;
 * the path without its query). Hostile trees are refused with a message naming the node: deeper
 * than `MAX_MATCH_DEPTH` or with more than `MAX_MATCH_NODES` nodes, a network whose prefix length
 * does not fit its family, a port over 65535, an empty label.
 */
import {
  HttpMethod_Registered,
  type ObserveRequest_Match,
  type ObserveRequest_Match_Http,
  type ObserveRequest_Match_Http_StringMatch,
  type ObserveRequest_Match_Tcp,
  Scheme_Registered,
} from "../../proto/tap_messages.ts";
import { formatIpv4, parseIpv4, parseIpv6Bytes } from "../../proto/ip.ts";
import type { HttpRequest } from "../http/message.ts";

export const MAX_MATCH_DEPTH = 16;
export const MAX_MATCH_NODES = 256;

/** What a request looks like to a tap: its connection's addresses and labels. */
export interface TapEndpoints {
  /** `ip:port` / `[v6]:port` of the client (undefined when unknown). */
  source: { ip: string; port: number } | undefined;
  destination: { ip: string; port: number } | undefined;
  /** Destination labels (endpoint metadata from Destination, outbound). */
  destinationLabels: Readonly<Record<string, string>> | undefined;
  routeLabels: Readonly<Record<string, string>> | undefined;
}

export type Matcher = (req: HttpRequest, at: TapEndpoints) => boolean;

export class InvalidMatch extends Error {
  override name = "InvalidMatch";
}

const METHODS: Record<number, string> = {
  [HttpMethod_Registered.GET]: "GET",
  [HttpMethod_Registered.POST]: "POST",
  [HttpMethod_Registered.PUT]: "PUT",
  [HttpMethod_Registered.DELETE]: "DELETE",
  [HttpMethod_Registered.PATCH]: "PATCH",
  [HttpMethod_Registered.OPTIONS]: "OPTIONS",
  [HttpMethod_Registered.CONNECT]: "CONNECT",
  [HttpMethod_Registered.HEAD]: "HEAD",
  [HttpMethod_Registered.TRACE]: "TRACE",
};

/** RFC 9110 token characters (method names). */
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** RFC 3986 scheme. */
const SCHEME = /^[A-Za-z][A-Za-z0-9+\-.]*$/;

/** Compiles `m`; throws InvalidMatch naming the offending node. An absent tree is refused, as Linkerd does. */
export function compileMatch(m: ObserveRequest_Match | undefined): Matcher {
  const budget = { nodes: 0 };
  if (m?.match === undefined) throw new InvalidMatch("match: missing required field");
  return compile(m, "match", 1, budget);
}

function compile(m: ObserveRequest_Match, at: string, depth: number, budget: { nodes: number }): Matcher {
  if (depth > MAX_MATCH_DEPTH) {
    throw new InvalidMatch(`${at}: the match tree is deeper than ${MAX_MATCH_DEPTH} levels`);
  }
  if (++budget.nodes > MAX_MATCH_NODES) {
    throw new InvalidMatch(`${at}: the match tree has more than ${MAX_MATCH_NODES} nodes`);
  }
  const v = m.match;
  switch (v?.$case) {
    case undefined:
      throw new InvalidMatch(`${at}: missing required field`);
    case "all":
    case "any": {
      // Empty members are skipped, as Linkerd does.
      const parts = v.value.matches
        .map((c, i) => [c, i] as const)
        .filter(([c]) => c.match !== undefined)
        .map(([c, i]) => compile(c, `${at}.${v.$case}[${i}]`, depth + 1, budget));
      return v.$case === "all" ? (r, e) => parts.every((p) => p(r, e)) : (r, e) => parts.some((p) => p(r, e));
    }
    case "not": {
      const inner = compile(v.value, `${at}.not`, depth + 1, budget);
      return (r, e) => !inner(r, e);
    }
    case "source": {
      const t = tcp(v.value, `${at}.source`);
      return (_r, e) => e.source !== undefined && t(e.source.ip, e.source.port);
    }
    case "destination": {
      const t = tcp(v.value, `${at}.destination`);
      return (_r, e) => e.destination !== undefined && t(e.destination.ip, e.destination.port);
    }
    case "destinationLabel":
    case "routeLabel": {
      const { key, value } = v.value;
      if (key === "" || value === "") throw new InvalidMatch(`${at}.${v.$case}: key and value must be set`);
      return v.$case === "destinationLabel"
        ? (_r, e) => e.destinationLabels?.[key] === value
        : (_r, e) => e.routeLabels?.[key] === value;
    }
    case "http":
      return http(v.value, `${at}.http`);
  }
}

type AddrTest = (ip: string, port: number) => boolean;

function tcp(t: ObserveRequest_Match_Tcp, at: string): AddrTest {
  const v = t.match;
  switch (v?.$case) {
    case "ports": {
      // A missing bound means a single port.
      const min = v.value.min === 0 ? v.value.max : v.value.min;
      const max = v.value.max === 0 ? v.value.min : v.value.max;
      if (min === 0) throw new InvalidMatch(`${at}.ports: min or max must be set`);
      if (min > 65535 || max > 65535) {
        throw new InvalidMatch(`${at}.ports: ${min}-${max} is not a port range`);
      }
      if (min > max) throw new InvalidMatch(`${at}.ports: min ${min} is over max ${max}`);
      return (_ip, port) => min <= port && port <= max;
    }
    case "netmask": {
      const ip = v.value.ip?.ip;
      const mask = v.value.mask;
      if (ip === undefined) throw new InvalidMatch(`${at}.netmask: ip must be set`);
      const bits = ip.$case === "ipv4" ? 32 : 128;
      if (mask === 0 || mask > bits) {
        throw new InvalidMatch(
          `${at}.netmask: prefix length ${mask} is not in 1..${bits} for ${
            ip.$case === "ipv4" ? formatIpv4(ip.value) : "an IPv6 network"
          }`,
        );
      }
      if (ip.$case === "ipv4") {
        const m = mask === 32 ? 0xffffffff : ~(0xffffffff >>> mask) >>> 0;
        const net = (ip.value & m) >>> 0;
        return (addr) => {
          const v4 = ipv4Of(addr);
          return v4 !== undefined && ((v4 & m) >>> 0) === net;
        };
      }
      const want = v6Bytes(ip.value.first, ip.value.last);
      return (addr) => {
        const got = ipv6Of(addr);
        return got !== undefined && prefixEqual(got, want, mask);
      };
    }
    default:
      throw new InvalidMatch(`${at}: missing required field`);
  }
}

function http(h: ObserveRequest_Match_Http, at: string): Matcher {
  const v = h.match;
  switch (v?.$case) {
    case "scheme": {
      const s = v.value.type;
      let want: string;
      if (s?.$case === "registered") {
        if (s.value === Scheme_Registered.HTTP) want = "http";
        else if (s.value === Scheme_Registered.HTTPS) want = "https";
        else throw new InvalidMatch(`${at}.scheme: registered scheme ${s.value} is unknown`);
      } else if (s?.$case === "unregistered") {
        if (!SCHEME.test(s.value)) throw new InvalidMatch(`${at}.scheme: "${s.value}" is not a scheme`);
        want = s.value.toLowerCase();
      } else throw new InvalidMatch(`${at}.scheme: missing required field`);
      return (r) => (r.scheme ?? "http").toLowerCase() === want;
    }
    case "method": {
      const t = v.value.type;
      let want: string;
      if (t?.$case === "registered") {
        const name = METHODS[t.value];
        if (name === undefined) {
          throw new InvalidMatch(`${at}.method: registered method ${t.value} is unknown`);
        }
        want = name;
      } else if (t?.$case === "unregistered") {
        if (t.value.length > 64 || !TOKEN.test(t.value)) {
          throw new InvalidMatch(`${at}.method: "${t.value.slice(0, 64)}" is not a method`);
        }
        want = t.value;
      } else throw new InvalidMatch(`${at}.method: missing required field`);
      return (r) => r.method === want;
    }
    case "authority": {
      const s = str(v.value, `${at}.authority`);
      return (r) => s(r.authority);
    }
    case "path": {
      const s = str(v.value, `${at}.path`);
      return (r) => {
        const q = r.path.indexOf("?");
        return s(q < 0 ? r.path : r.path.slice(0, q));
      };
    }
    default:
      throw new InvalidMatch(`${at}: missing required field`);
  }
}

function str(m: ObserveRequest_Match_Http_StringMatch, at: string): (s: string) => boolean {
  const v = m.match;
  if (v?.$case === "exact") return (s) => s === v.value;
  if (v?.$case === "prefix") return (s) => s.startsWith(v.value);
  throw new InvalidMatch(`${at}: missing required field`);
}

/** An IPv4 address as a number (also from its IPv4-mapped IPv6 form), else undefined. */
function ipv4Of(text: string): number | undefined {
  if (text.includes(":") && !text.startsWith("::ffff:")) return undefined;
  try {
    return parseIpv4(text.startsWith("::ffff:") ? text.slice(7) : text);
  } catch {
    return undefined;
  }
}

function ipv6Of(text: string): Uint8Array | undefined {
  if (!text.includes(":") || text.startsWith("::ffff:") && text.includes(".")) return undefined;
  try {
    return parseIpv6Bytes(text);
  } catch {
    return undefined;
  }
}

function v6Bytes(first: bigint, last: bigint): Uint8Array {
  const b = new Uint8Array(16);
  const d = new DataView(b.buffer);
  d.setBigUint64(0, BigInt.asUintN(64, first));
  d.setBigUint64(8, BigInt.asUintN(64, last));
  return b;
}

function prefixEqual(a: Uint8Array, b: Uint8Array, bits: number): boolean {
  let i = 0;
  for (; bits >= 8; bits -= 8, i++) if (a[i] !== b[i]) return false;
  if (bits === 0) return true;
  const m = (0xff << (8 - bits)) & 0xff;
  return (a[i] & m) === (b[i] & m);
}
