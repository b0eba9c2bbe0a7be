/**
 * `deno run -A init/main.ts [apply|cleanup|verify|print] [flags]`
 *
 *   apply    (default) install the redirects, atomically and idempotently
 *   cleanup  remove exactly init's chains and the jumps into them
 *   verify   prove the outbound redirect: a probe to --probe-addr (default: the default gateway,
 *            port 80) must arrive on the outbound proxy port with that original destination
 *   print    print the rules apply would install into an empty table (no changes)
 *
 * Flags are Linkerd proxy-init's (--incoming-proxy-port, --outgoing-proxy-port, --proxy-uid,
 * --proxy-gid, --inbound-ports-to-ignore, --outbound-ports-to-ignore, --ports-to-redirect,
 * --subnets-to-ignore, --iptables-mode auto|nft|legacy, --ipv6 true|false); each falls back to the
 * WEFT_INIT_* variable named in init/config.ts.
 */
import { InitConfigError, resolveInitConfig, splitArgs } from "./config.ts";
import { denoRunner, detectBackend, hasNetAdmin, InitError } from "./backend.ts";
import { applyRules, cleanupRules } from "./apply.ts";
import { buildApplyRules } from "./rules.ts";
import { defaultGateway, verifyRedirect } from "./verify.ts";

const VERIFY_FLAGS = ["probe-addr", "verify-timeout-ms"];

function parseProbe(text: string): { ip: string; port: number } {
  const m = /^(\d{1,3}(?:\.\d{1,3}){3}):(\d{1,5})$/.exec(text);
  if (!m) throw new InitConfigError(`--probe-addr: "${text}" is not an IPv4 ip:port`);
  return { ip: m[1], port: Number(m[2]) };
}

export async function main(args: string[]): Promise<void> {
  const { positional, flags } = splitArgs(args);
  const command = positional[0] ?? "apply";
  const cfg = resolveInitConfig(flags, (n) => Deno.env.get(n), VERIFY_FLAGS);
  const deps = {
    run: denoRunner,
    procStatus: () => Deno.readTextFileSync("/proc/self/status"),
    hasNetAdmin,
  };
  switch (command) {
    case "print":
      console.log(buildApplyRules(cfg, "ipv4", { chains: new Set(), rules: [] }));
      if (cfg.ipv6) console.log(buildApplyRules(cfg, "ipv6", { chains: new Set(), rules: [] }));
      return;
    case "apply": {
      const backend = await detectBackend(cfg.mode, denoRunner);
      const texts = await applyRules(cfg, backend, deps);
      console.log(`init: applied redirects with iptables-${backend} (${texts.length} families)`);
      return;
    }
    case "cleanup": {
      const backend = await detectBackend(cfg.mode, denoRunner);
      await cleanupRules(cfg, backend, deps);
      console.log(`init: removed redirects (iptables-${backend})`);
      return;
    }
    case "verify": {
      const probeFlag = flags.get("probe-addr");
      let probe;
      if (probeFlag !== undefined) probe = parseProbe(probeFlag);
      else {
        const gw = defaultGateway(Deno.readTextFileSync("/proc/net/route"));
        if (gw === undefined) throw new InitError("verify: no --probe-addr given and no IPv4 default route");
        probe = { ip: gw, port: 80 };
      }
      const t = flags.get("verify-timeout-ms");
      const timeoutMs = t === undefined ? 2000 : Number(t);
      if (!Number.isInteger(timeoutMs) || timeoutMs <= 0) {
        throw new InitConfigError(`--verify-timeout-ms: "${t}" is not a positive integer`);
      }
      await verifyRedirect({ outgoingProxyPort: cfg.outgoingProxyPort, probe, timeoutMs });
      console.log(`init: verified: ${probe.ip}:${probe.port} arrives on port ${cfg.outgoingProxyPort}`);
      return;
    }
    default:
      throw new InitConfigError(`unknown command "${command}"; want apply, cleanup, verify or print`);
  }
}

if (import.meta.main) {
  try {
    await main(Deno.args);
  } catch (e) {
    if (e instanceof InitError || e instanceof InitConfigError) {
      console.error(`init: ${e.message}`);
      Deno.exit(1);
    }
    throw e;
  }
}
