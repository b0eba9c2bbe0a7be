/** Parsers for the formats of the proxy's environment variables (linkerd2-proxy's formats). */
import { parsePortRanges, PortListError } from "../../proto/port_list.ts";

export class ConfigError extends Error {
  override name = "ConfigError";
  constructor(readonly variable: string, message: string) {
    super(`${variable}: ${message}`);
  }
}

const UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** `^\d+(ms|s|m|h|d)$`, or a bare `0`; returns milliseconds. */
export function parseDuration(variable: string, text: string): number {
  if (text === "0") return 0;
  const m = /^(\d+)(ms|s|m|h|d)$/.exec(text);
  if (!m) throw new ConfigError(variable, `"${text}" is not a duration (want e.g. 300ms, 10s, 5m, 1h, 1d)`);
  return Number(m[1]) * UNITS[m[2]];
}

export function parsePortNumber(variable: string, text: string): number {
  if (!/^\d{1,5}$/.test(text) || Number(text) > 65535) {
    throw new ConfigError(variable, `"${text}" is not a port in 0..65535`);
  }
  return Number(text);
}

/** `80,443,1000-2000` → the set of ports, with the port list grammar init and the control plane use. */
export function parsePortSet(variable: string, text: string): Set<number> {
  let ranges;
  try {
    ranges = parsePortRanges(text, variable);
  } catch (e) {
    if (e instanceof PortListError) throw new ConfigError(variable, e.reason);
    throw e;
  }
  const out = new Set<number>();
  for (const r of ranges) for (let p = r.from; p <= r.to; p++) out.add(p);
  return out;
}

export interface ListenAddr {
  ip: string;
  port: number;
}

const V4 = /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/;

export function isIpv4(text: string): boolean {
  return V4.test(text);
}

export function isIpv6(text: string): boolean {
  return /^[0-9a-fA-F:.]+$/.test(text) && text.includes(":") && text.split("::").length <= 2;
}

/** `ip:port` or `[ipv6]:port`. */
export function parseSocketAddr(variable: string, text: string): ListenAddr {
  const m = /^\[([0-9a-fA-F:.]+)\]:(\d+)$/.exec(text) ?? /^([0-9.]+):(\d+)$/.exec(text);
  if (!m || !(isIpv4(m[1]) || isIpv6(m[1]))) {
    throw new ConfigError(variable, `"${text}" is not a socket address (want ip:port or [ipv6]:port)`);
  }
  return { ip: m[1], port: parsePortNumber(variable, m[2]) };
}

export interface ControlAddr {
  /** DNS name (trailing dot kept as given) or IP. */
  host: string;
  port: number;
}

/** A control-plane `host:port`, where host is a DNS name or an IP. */
export function parseControlAddr(variable: string, text: string): ControlAddr {
  const v6 = /^\[([0-9a-fA-F:.]+)\]:(\d+)$/.exec(text);
  if (v6) return { host: v6[1], port: parsePortNumber(variable, v6[2]) };
  const m = /^([A-Za-z0-9.-]+):(\d+)$/.exec(text);
  if (!m) throw new ConfigError(variable, `"${text}" is not host:port`);
  return { host: m[1], port: parsePortNumber(variable, m[2]) };
}

/** Loopback control planes are spoken to in plaintext (127.0.0.0/8, ::1, or exactly `localhost.`). */
export function isLoopbackHost(host: string): boolean {
  return host === "localhost." || host === "::1" || (isIpv4(host) && host.startsWith("127."));
}

/** A DNS-like identity name: labels of [a-z0-9-], no trailing dot. */
export function parseIdentityName(variable: string, text: string): string {
  if (text.endsWith(".")) throw new ConfigError(variable, `"${text}" must not end with a dot`);
  const labels = text.split(".");
  if (labels.length < 2 || !labels.every((l) => /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/.test(l))) {
    throw new ConfigError(variable, `"${text}" is not a DNS identity name`);
  }
  return text;
}

export interface Cidr {
  ip: string;
  prefix: number;
}

export function parseCidrList(variable: string, text: string): Cidr[] {
  const out: Cidr[] = [];
  for (const raw of text.split(",")) {
    const item = raw.trim();
    if (item === "") continue;
    const m = /^([0-9a-fA-F:.]+)\/(\d{1,3})$/.exec(item);
    if (!m || !(isIpv4(m[1]) || isIpv6(m[1]))) throw new ConfigError(variable, `"${item}" is not a CIDR`);
    const max = isIpv4(m[1]) ? 32 : 128;
    if (Number(m[2]) > max) throw new ConfigError(variable, `prefix of "${item}" exceeds /${max}`);
    out.push({ ip: m[1], prefix: Number(m[2]) });
  }
  return out;
}

export function parseBool(variable: string, text: string): boolean {
  if (text === "true") return true;
  if (text === "false") return false;
  throw new ConfigError(variable, `"${text}" is not true or false`);
}

export function parseRatio(variable: string, text: string): number {
  const n = Number(text);
  if (text.trim() === "" || !Number.isFinite(n) || n < 0 || n > 100) {
    throw new ConfigError(variable, `"${text}" is not a non-negative number`);
  }
  return n;
}
