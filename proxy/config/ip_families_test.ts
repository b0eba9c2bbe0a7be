/**
 * init's redirects and the proxy's listeners, derived from the one IPv6 choice the injector makes
 * (proto/ip_families.ts), must agree: every family init redirects has a proxy listener where the
 * redirect lands, and the proxy listens on no family init lets past it. init's side is its real
 * rule text (`init/main.ts print`, run as a command: proxy/ may not import init/); the proxy's side
 * is its real environment parser.
 */
import assert from "node:assert/strict";
import { ProxyEnv } from "../../proto/env.ts";
import { initIpv6Args, proxyListenAddrs } from "../../proto/ip_families.ts";
import { Ports } from "../../proto/ports.ts";
import { resolveProxyConfig } from "./config.ts";
import type { ListenAddr } from "./parse.ts";
import { createTestCa } from "../testing/certs.ts";

type Family = "ipv4" | "ipv6";
const initTs = new URL("../../init/main.ts", import.meta.url).pathname;
const ca = await createTestCa("ip-families-test");

/** Where init's rules send each family: the inbound and outbound REDIRECT ports. */
async function initRedirects(args: string[]): Promise<Map<Family, { inbound: number; outbound: number }>> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--cached-only", initTs, "print", ...args],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(out.stdout);
  assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
  // `print` writes the IPv4 table, then the IPv6 one when IPv6 is redirected.
  const tables = text.split("*nat").slice(1);
  const families: Family[] = ["ipv4", "ipv6"];
  const found = new Map<Family, { inbound: number; outbound: number }>();
  tables.forEach((t, i) => {
    const port = (chain: string) => {
      const m = new RegExp(`-A ${chain} .*-j REDIRECT --to-ports (\\d+)`).exec(t);
      assert.ok(m, `no REDIRECT in ${chain} of the ${families[i]} table`);
      return Number(m[1]);
    };
    found.set(families[i], { inbound: port("PROXY_INIT_REDIRECT"), outbound: port("PROXY_INIT_OUTPUT") });
  });
  return found;
}

/** Families a listener accepts, and on which addresses: a wildcard takes any local address. */
function accepts(l: ListenAddr): { family: Family; wildcard: boolean }[] {
  switch (l.ip) {
    case "0.0.0.0":
      return [{ family: "ipv4", wildcard: true }];
    // Linux binds `::` dual-stack (net.ipv6.bindv6only=0): IPv4 arrives IPv4-mapped.
    case "::":
      return [{ family: "ipv4", wildcard: true }, { family: "ipv6", wildcard: true }];
    default:
      return [{ family: l.ip.includes(":") ? "ipv6" : "ipv4", wildcard: false }];
  }
}

function proxyListeners(ipv6: boolean) {
  const a = proxyListenAddrs(ipv6);
  const env: Record<string, string> = {
    [ProxyEnv.destinationSvcAddr]: "127.0.0.1:8086",
    [ProxyEnv.policySvcAddr]: "127.0.0.1:8090",
    [ProxyEnv.identitySvcAddr]: "127.0.0.1:8080",
    [ProxyEnv.policyWorkload]: '{"ns":"default","pod":"web-0"}',
    [ProxyEnv.identityTrustAnchors]: ca.certPem,
    [ProxyEnv.identityLocalName]: "web.default.serviceaccount.identity.linkerd.cluster.local",
    [ProxyEnv.identityDir]: "/run/l5d/id",
    [ProxyEnv.identityTokenFile]: "/run/l5d/token",
    [ProxyEnv.inboundListenAddr]: a.inbound,
    [ProxyEnv.outboundListenAddrs]: a.outbound,
    [ProxyEnv.adminListenAddr]: a.admin,
    [ProxyEnv.controlListenAddr]: a.control,
  };
  return resolveProxyConfig((n) => env[n]);
}

for (const ipv6 of [true, false]) {
  Deno.test(`IPv6 ${ipv6 ? "on" : "off"}: init redirects exactly the families the proxy listens on, to its ports`, async () => {
    const redirects = await initRedirects(initIpv6Args(ipv6));
    const cfg = proxyListeners(ipv6);
    const want: Family[] = ipv6 ? ["ipv4", "ipv6"] : ["ipv4"];
    assert.deepEqual([...redirects.keys()], want, "families init redirects");

    // Inbound: PREROUTING REDIRECT lands on the receiving interface's address: a wildcard listener
    // of that family on the inbound port must be there.
    const inbound = accepts(cfg.inboundListen).filter((a) => a.wildcard).map((a) => a.family);
    // Outbound: OUTPUT REDIRECT lands on the family's loopback (127.0.0.1 / ::1).
    const outbound = cfg.outboundListen.flatMap(accepts).map((a) => a.family);
    for (const [family, r] of redirects) {
      assert.equal(r.inbound, cfg.inboundListen.port, `${family} inbound redirect port`);
      assert.ok(
        inbound.includes(family),
        `${family} is redirected inbound but the proxy does not listen on it`,
      );
      assert.ok(cfg.outboundListen.every((l) => l.port === r.outbound), `${family} outbound redirect port`);
      assert.ok(
        outbound.includes(family),
        `${family} is redirected outbound but the proxy does not listen on it`,
      );
    }
    // And the proxy listens on no family that init lets past it (it would never see that traffic,
    // and the pod would look meshed for it while it is not).
    for (const f of [...inbound, ...outbound]) {
      assert.ok(redirects.has(f), `proxy listens on ${f}, init skips it`);
    }
    // The proxy's own admin and control ports are reachable over every redirected family (kubelet
    // probes on an IPv6 pod IP), and stay unredirected.
    for (const l of [cfg.adminListen]) {
      const fams = accepts(l).map((a) => a.family);
      for (const f of redirects.keys()) assert.ok(fams.includes(f), `admin listens on ${f}`);
    }
    assert.equal(cfg.adminListen.port, Ports.proxyAdmin);
  });
}
