/**
 * Pure rule builder: init's configuration plus the current `nat` table → the text fed to
 * `iptables-restore --noflush`, so the whole change lands atomically. Declaring our chains in the
 * input flushes them, which makes a re-run replace its rules instead of duplicating them; the jumps
 * from the built-in chains are added only when the current table lacks them.
 */
import type { InitConfig, PortRange } from "./config.ts";

export const REDIRECT_CHAIN = "PROXY_INIT_REDIRECT";
export const OUTPUT_CHAIN = "PROXY_INIT_OUTPUT";
export const OWN_CHAINS: readonly string[] = [REDIRECT_CHAIN, OUTPUT_CHAIN];

export type Family = "ipv4" | "ipv6";

/** The parts of `iptables-save -t nat` the builder needs. */
export interface NatState {
  chains: Set<string>;
  /** Rules as saved, e.g. `-A PREROUTING -m comment --comment "..." -j PROXY_INIT_REDIRECT`. */
  rules: string[];
}

export function parseNatState(saved: string): NatState {
  const chains = new Set<string>();
  const rules: string[] = [];
  let inNat = false;
  for (const raw of saved.split("\n")) {
    const line = raw.trim();
    if (line.startsWith("*")) inNat = line === "*nat";
    else if (!inNat) continue;
    else if (line.startsWith(":")) chains.add(line.slice(1).split(" ")[0]);
    else if (line.startsWith("-A ")) rules.push(line);
  }
  return { chains, rules };
}

/** Rules in `chain` that jump to `target`. */
function jumpsTo(state: NatState, chain: string, target: string): string[] {
  return state.rules.filter((r) =>
    r.startsWith(`-A ${chain} `) && (r.endsWith(` -j ${target}`) || r.includes(` -j ${target} `))
  );
}

/** multiport takes at most 15 ports, a range counting as two. */
function multiportChunks(ranges: PortRange[]): string[] {
  const chunks: string[] = [];
  let cur: string[] = [];
  let weight = 0;
  for (const r of ranges) {
    const w = r.from === r.to ? 1 : 2;
    if (weight + w > 15) {
      chunks.push(cur.join(","));
      cur = [];
      weight = 0;
    }
    cur.push(r.from === r.to ? String(r.from) : `${r.from}:${r.to}`);
    weight += w;
  }
  if (cur.length > 0) chunks.push(cur.join(","));
  return chunks;
}

function comment(text: string): string {
  return `-m comment --comment "proxy-init/${text}"`;
}

function isV6(cidr: string): boolean {
  return cidr.includes(":");
}

/** The `iptables-restore --noflush` input that installs (or re-installs) the redirects. */
export function buildApplyRules(cfg: InitConfig, family: Family, state: NatState): string {
  const out: string[] = [];
  const line = (why: string, rule: string) => {
    out.push(`# ${why}`);
    out.push(rule);
  };
  out.push("*nat");
  out.push(
    "# Declaring the chains creates them, or flushes them when they exist, so re-runs are idempotent.",
  );
  out.push(`:${REDIRECT_CHAIN} - [0:0]`);
  out.push(`:${OUTPUT_CHAIN} - [0:0]`);

  // Inbound.
  for (const ports of multiportChunks(cfg.inboundPortsToIgnore)) {
    line(
      "Inbound ports that must reach the pod directly (the proxy's own admin/control ports, skip-inbound-ports).",
      `-A ${REDIRECT_CHAIN} -p tcp -m multiport --dports ${ports} ${
        comment(`ignore-port-${ports}`)
      } -j RETURN`,
    );
  }
  for (const subnet of cfg.subnetsToIgnore.filter((s) => isV6(s) === (family === "ipv6"))) {
    line(
      "Traffic from skipped subnets (skip-subnets) bypasses the proxy.",
      `-A ${REDIRECT_CHAIN} -s ${subnet} ${comment(`ignore-subnet-${subnet}`)} -j RETURN`,
    );
  }
  if (cfg.portsToRedirect.length === 0) {
    line(
      "Every other inbound TCP connection goes to the proxy's inbound listener.",
      `-A ${REDIRECT_CHAIN} -p tcp ${
        comment("redirect-all-incoming-to-proxy-port")
      } -j REDIRECT --to-ports ${cfg.incomingProxyPort}`,
    );
  } else {
    for (const ports of multiportChunks(cfg.portsToRedirect)) {
      line(
        "Only the listed inbound ports go to the proxy's inbound listener.",
        `-A ${REDIRECT_CHAIN} -p tcp -m multiport --dports ${ports} ${
          comment(`redirect-port-${ports}`)
        } -j REDIRECT --to-ports ${cfg.incomingProxyPort}`,
      );
    }
  }
  if (jumpsTo(state, "PREROUTING", REDIRECT_CHAIN).length === 0) {
    line(
      "Send packets arriving at the pod through the inbound chain (added once).",
      `-A PREROUTING ${comment("install-proxy-init-prerouting")} -j ${REDIRECT_CHAIN}`,
    );
  }

  // Outbound.
  line(
    "The proxy's own connections must leave as they are, or they would loop back into it.",
    `-A ${OUTPUT_CHAIN} -m owner --uid-owner ${cfg.proxyUid} ${comment("ignore-proxy-user-id")} -j RETURN`,
  );
  if (cfg.proxyGid !== undefined) {
    line(
      "Likewise for the proxy's group, when one is configured.",
      `-A ${OUTPUT_CHAIN} -m owner --gid-owner ${cfg.proxyGid} ${comment("ignore-proxy-group-id")} -j RETURN`,
    );
  }
  line(
    "Loopback traffic stays inside the pod (includes the proxy forwarding to the app on 127.0.0.1).",
    `-A ${OUTPUT_CHAIN} -o lo ${comment("ignore-loopback")} -j RETURN`,
  );
  for (const ports of multiportChunks(cfg.outboundPortsToIgnore)) {
    line(
      "Outbound ports that bypass the proxy (skip-outbound-ports).",
      `-A ${OUTPUT_CHAIN} -p tcp -m multiport --dports ${ports} ${comment(`ignore-port-${ports}`)} -j RETURN`,
    );
  }
  line(
    "Every other outbound TCP connection goes to the proxy's outbound listener.",
    `-A ${OUTPUT_CHAIN} -p tcp ${
      comment("redirect-all-outgoing-to-proxy-port")
    } -j REDIRECT --to-ports ${cfg.outgoingProxyPort}`,
  );
  if (jumpsTo(state, "OUTPUT", OUTPUT_CHAIN).length === 0) {
    line(
      "Send locally generated packets through the outbound chain (added once).",
      `-A OUTPUT ${comment("install-proxy-init-output")} -j ${OUTPUT_CHAIN}`,
    );
  }
  out.push("COMMIT");
  return out.join("\n") + "\n";
}

/**
 * The input that removes exactly what init installed: every jump into our chains from the
 * built-in chains (as currently saved, so duplicates are removed too), then our chains. Returns
 * undefined when there is nothing to remove.
 */
export function buildCleanupRules(state: NatState): string | undefined {
  const out: string[] = ["*nat"];
  for (const chain of ["PREROUTING", "OUTPUT", "INPUT", "POSTROUTING"]) {
    for (const own of OWN_CHAINS) {
      for (const rule of jumpsTo(state, chain, own)) out.push(`-D ${rule.slice(3)}`);
    }
  }
  for (const own of OWN_CHAINS) {
    if (!state.chains.has(own)) continue;
    out.push(`-F ${own}`);
    out.push(`-X ${own}`);
  }
  if (out.length === 1) return undefined;
  out.push("COMMIT");
  return out.join("\n") + "\n";
}
