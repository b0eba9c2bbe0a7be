/**
 * init's resolved configuration and how it is read from the command line (the flags the injector
 * writes, the same as Linkerd's proxy-init) with environment variables as fallbacks.
 */
import { DEFAULT_INBOUND_PORTS_TO_IGNORE, DEFAULT_PROXY_UID, Ports } from "../proto/ports.ts";
import {
  parsePortRanges as parseSharedPortRanges,
  PortListError,
  type PortRange,
} from "../proto/port_list.ts";

export type IptablesMode = "auto" | "nft" | "legacy";

export type { PortRange };

export interface InitConfig {
  incomingProxyPort: number;
  outgoingProxyPort: number;
  proxyUid: number;
  proxyGid: number | undefined;
  inboundPortsToIgnore: PortRange[];
  outboundPortsToIgnore: PortRange[];
  /** When non-empty, only these inbound ports are redirected instead of all. */
  portsToRedirect: PortRange[];
  /** Source subnets whose inbound traffic bypasses the proxy (config.linkerd.io/skip-subnets). */
  subnetsToIgnore: string[];
  mode: IptablesMode;
  ipv6: boolean;
}

export const DEFAULT_INIT_CONFIG: InitConfig = {
  incomingProxyPort: Ports.proxyInbound,
  outgoingProxyPort: Ports.proxyOutbound,
  proxyUid: DEFAULT_PROXY_UID,
  proxyGid: undefined,
  inboundPortsToIgnore: DEFAULT_INBOUND_PORTS_TO_IGNORE.map((p) => ({ from: p, to: p })),
  outboundPortsToIgnore: [],
  portsToRedirect: [],
  subnetsToIgnore: [],
  mode: "auto",
  ipv6: true,
};

/** Flag → environment variable read when the flag is absent. */
export const INIT_FLAGS = {
  "incoming-proxy-port": "WEFT_INIT_INCOMING_PROXY_PORT",
  "outgoing-proxy-port": "WEFT_INIT_OUTGOING_PROXY_PORT",
  "proxy-uid": "WEFT_INIT_PROXY_UID",
  "proxy-gid": "WEFT_INIT_PROXY_GID",
  "inbound-ports-to-ignore": "WEFT_INIT_INBOUND_PORTS_TO_IGNORE",
  "outbound-ports-to-ignore": "WEFT_INIT_OUTBOUND_PORTS_TO_IGNORE",
  "ports-to-redirect": "WEFT_INIT_PORTS_TO_REDIRECT",
  "subnets-to-ignore": "WEFT_INIT_SUBNETS_TO_IGNORE",
  "iptables-mode": "WEFT_INIT_IPTABLES_MODE",
  "ipv6": "WEFT_INIT_IPV6",
} as const;
export type InitFlag = keyof typeof INIT_FLAGS;

export class InitConfigError extends Error {
  override name = "InitConfigError";
}

function parsePort(text: string, what: string): number {
  if (!/^[0-9]{1,5}$/.test(text) || Number(text) < 1 || Number(text) > 65535) {
    throw new InitConfigError(`${what}: "${text}" is not a port in 1..65535`);
  }
  return Number(text);
}

/** Parses `80,443,8000-9000` (empty → none) with the shared port list grammar. */
export function parsePortRanges(text: string, what: string): PortRange[] {
  try {
    return parseSharedPortRanges(text, what);
  } catch (e) {
    throw e instanceof PortListError ? new InitConfigError(e.message) : e;
  }
}

function parseId(text: string, what: string): number {
  if (!/^[0-9]{1,10}$/.test(text) || Number(text) > 0xfffffffe) {
    throw new InitConfigError(`${what}: "${text}" is not a numeric id`);
  }
  return Number(text);
}

function parseCidr(text: string, what: string): string {
  const m = /^([0-9a-fA-F:.]+)\/([0-9]{1,3})$/.exec(text);
  if (!m) throw new InitConfigError(`${what}: "${text}" is not a CIDR (want ip/prefix)`);
  const v6 = m[1].includes(":");
  const max = v6 ? 128 : 32;
  if (Number(m[2]) > max) throw new InitConfigError(`${what}: prefix of "${text}" exceeds /${max}`);
  if (!v6 && !/^(\d{1,3}\.){3}\d{1,3}$/.test(m[1])) {
    throw new InitConfigError(`${what}: "${text}" is not a CIDR (bad IPv4 address)`);
  }
  return text;
}

function parseBool(text: string, what: string): boolean {
  if (text === "true") return true;
  if (text === "false") return false;
  throw new InitConfigError(`${what}: "${text}" is not true or false`);
}

/**
 * Splits `--flag value`, `--flag=value` and bare `--ipv6` style arguments. Returns the positional
 * arguments and the flag values.
 */
export function splitArgs(args: string[]): { positional: string[]; flags: Map<string, string> } {
  const positional: string[] = [];
  const flags = new Map<string, string>();
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    if (!a.startsWith("--")) {
      positional.push(a);
      continue;
    }
    const eq = a.indexOf("=");
    if (eq > 0) {
      flags.set(a.slice(2, eq), a.slice(eq + 1));
    } else if (i + 1 < args.length && !args[i + 1].startsWith("--")) {
      flags.set(a.slice(2), args[++i]);
    } else {
      flags.set(a.slice(2), "true");
    }
  }
  return { positional, flags };
}

/** Resolves the configuration from flags, then env, then defaults; unknown flags are errors. */
export function resolveInitConfig(
  flags: Map<string, string>,
  env: (name: string) => string | undefined,
  extraFlags: readonly string[] = [],
): InitConfig {
  for (const f of flags.keys()) {
    if (!(f in INIT_FLAGS) && !extraFlags.includes(f)) {
      throw new InitConfigError(`unknown flag --${f}; known: ${Object.keys(INIT_FLAGS).join(", ")}`);
    }
  }
  const get = (f: InitFlag): [string, string] | undefined => {
    const v = flags.get(f);
    if (v !== undefined) return [v, `--${f}`];
    const e = env(INIT_FLAGS[f]);
    return e !== undefined && e !== "" ? [e, INIT_FLAGS[f]] : undefined;
  };
  const cfg: InitConfig = { ...DEFAULT_INIT_CONFIG };
  let v;
  if ((v = get("incoming-proxy-port"))) cfg.incomingProxyPort = parsePort(v[0], v[1]);
  if ((v = get("outgoing-proxy-port"))) cfg.outgoingProxyPort = parsePort(v[0], v[1]);
  if ((v = get("proxy-uid"))) cfg.proxyUid = parseId(v[0], v[1]);
  if ((v = get("proxy-gid"))) cfg.proxyGid = parseId(v[0], v[1]);
  if ((v = get("inbound-ports-to-ignore"))) cfg.inboundPortsToIgnore = parsePortRanges(v[0], v[1]);
  if ((v = get("outbound-ports-to-ignore"))) cfg.outboundPortsToIgnore = parsePortRanges(v[0], v[1]);
  if ((v = get("ports-to-redirect"))) cfg.portsToRedirect = parsePortRanges(v[0], v[1]);
  if ((v = get("subnets-to-ignore"))) {
    const what = v[1];
    cfg.subnetsToIgnore = v[0].split(",").map((s) => s.trim()).filter((s) => s !== "").map((s) =>
      parseCidr(s, what)
    );
  }
  if ((v = get("iptables-mode"))) {
    if (v[0] !== "auto" && v[0] !== "nft" && v[0] !== "legacy") {
      throw new InitConfigError(`${v[1]}: "${v[0]}" is not one of auto, nft, legacy`);
    }
    cfg.mode = v[0];
  }
  if ((v = get("ipv6"))) cfg.ipv6 = parseBool(v[0], v[1]);
  return cfg;
}
