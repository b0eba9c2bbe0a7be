/**
 * One choice, two consumers: whether a meshed pod's IPv6 traffic goes through its proxy. The
 * injector derives both init's `--ipv6` flag and the proxy's listen addresses from it, so init
 * never redirects a family the proxy does not listen on (that traffic would be refused) and the
 * proxy never listens on a family init lets past it.
 *
 * IPv6 on (the default, and Linkerd's with `disableIPv6=false`): inbound and admin/control on the
 * IPv6 wildcard, which on Linux also accepts IPv4 (as IPv4-mapped addresses); outbound on both
 * loopbacks, because init's IPv6 OUTPUT redirect lands on `[::1]`. IPv6 off: IPv4 addresses only,
 * and init leaves IPv6 alone, so a dual-stack pod's IPv6 traffic is not proxied.
 */
import { Ports } from "./ports.ts";

export interface ProxyListenAddrs {
  /** LINKERD2_PROXY_INBOUND_LISTEN_ADDR */
  inbound: string;
  /** LINKERD2_PROXY_OUTBOUND_LISTEN_ADDRS (comma-separated) */
  outbound: string;
  /** LINKERD2_PROXY_ADMIN_LISTEN_ADDR */
  admin: string;
  /** LINKERD2_PROXY_CONTROL_LISTEN_ADDR */
  control: string;
}

export function proxyListenAddrs(ipv6: boolean): ProxyListenAddrs {
  if (!ipv6) {
    return {
      inbound: `0.0.0.0:${Ports.proxyInbound}`,
      outbound: `127.0.0.1:${Ports.proxyOutbound}`,
      admin: `0.0.0.0:${Ports.proxyAdmin}`,
      control: `0.0.0.0:${Ports.proxyControl}`,
    };
  }
  return {
    inbound: `[::]:${Ports.proxyInbound}`,
    outbound: `127.0.0.1:${Ports.proxyOutbound},[::1]:${Ports.proxyOutbound}`,
    admin: `[::]:${Ports.proxyAdmin}`,
    control: `[::]:${Ports.proxyControl}`,
  };
}

/** init's flag for the same choice (init's own default, when the flag is absent, is IPv6 on). */
export function initIpv6Args(ipv6: boolean): string[] {
  return ["--ipv6", String(ipv6)];
}
