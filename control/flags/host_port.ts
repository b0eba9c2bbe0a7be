/**
 * Listen addresses of the control-plane flags (`--addr`, `--admin-addr`): `host:port`,
 * `[ipv6]:port`, or `:port` for every IPv4 interface (Go's short form, as Linkerd's flags write it).
 * An IPv6 host must be bracketed, since its own colons would otherwise swallow the port.
 */

export interface HostPort {
  host: string;
  port: number;
}

export class HostPortError extends Error {
  override name = "HostPortError";
  constructor(readonly what: string, readonly text: string, reason: string) {
    super(
      `${what}: ${JSON.stringify(text)} is not host:port (${reason}); want e.g. 0.0.0.0:8086 or [::]:8086`,
    );
  }
}

const HOST = /^[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9.])?$/;
const IPV6 = /^[0-9A-Fa-f:.]+$/;

/** Splits `text`; `what` (the flag) starts every error message. Port 0 asks for any free port. */
export function splitHostPort(text: string, what: string): HostPort {
  const fail = (reason: string): never => {
    throw new HostPortError(what, text, reason);
  };
  let host: string;
  let portText: string;
  if (text.startsWith("[")) {
    const end = text.indexOf("]");
    if (end < 0) fail("no closing ]");
    host = text.slice(1, end);
    if (!IPV6.test(host) || !host.includes(":")) fail(`"${host}" in brackets is not an IPv6 address`);
    if (text[end + 1] !== ":") fail("no :port after the bracketed address");
    portText = text.slice(end + 2);
  } else {
    const i = text.lastIndexOf(":");
    if (i < 0) fail("no :port");
    host = text.slice(0, i);
    portText = text.slice(i + 1);
    if (host.includes(":")) fail("an IPv6 host needs brackets, e.g. [::1]:8086");
    if (host === "") host = "0.0.0.0";
    else if (!HOST.test(host)) fail(`"${host}" is not a host name or address`);
  }
  if (!/^[0-9]{1,5}$/.test(portText) || Number(portText) > 65535) {
    fail(portText === "" ? "no port" : `"${portText}" is not a port in 0-65535`);
  }
  return { host, port: Number(portText) };
}
