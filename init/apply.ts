/** Applies or removes init's rules through iptables-save/iptables-restore. */
import type { InitConfig } from "./config.ts";
import { type Backend, InitError, type Runner, tool } from "./backend.ts";
import { buildApplyRules, buildCleanupRules, type Family, type NatState, parseNatState } from "./rules.ts";

export interface ApplyDeps {
  run: Runner;
  /** /proc/self/status text, to check for CAP_NET_ADMIN before touching anything. */
  procStatus: () => string;
  hasNetAdmin: (status: string) => boolean;
}

function families(cfg: InitConfig): Family[] {
  return cfg.ipv6 ? ["ipv4", "ipv6"] : ["ipv4"];
}

async function readNat(run: Runner, backend: Backend, family: Family): Promise<NatState> {
  const cmd = tool(backend, family, "save");
  const r = await run(cmd, ["-t", "nat"]);
  if (r === undefined) throw new InitError(`${cmd} is not installed (install iptables)`);
  if (r.code !== 0) throw new InitError(`${cmd} -t nat failed (exit ${r.code}): ${r.stderr.trim()}`);
  return parseNatState(r.stdout);
}

async function restore(run: Runner, backend: Backend, family: Family, text: string): Promise<void> {
  const cmd = tool(backend, family, "restore");
  const r = await run(cmd, ["--noflush"], text);
  if (r === undefined) throw new InitError(`${cmd} is not installed (install iptables)`);
  if (r.code !== 0) {
    throw new InitError(`${cmd} --noflush failed (exit ${r.code}): ${r.stderr.trim()}\ninput was:\n${text}`);
  }
}

function checkNetAdmin(deps: ApplyDeps): void {
  if (!deps.hasNetAdmin(deps.procStatus())) {
    throw new InitError(
      "init needs the NET_ADMIN capability to change iptables rules; this process lacks it",
    );
  }
}

/** Installs the redirects for each family; returns the applied texts (for logging). */
export async function applyRules(cfg: InitConfig, backend: Backend, deps: ApplyDeps): Promise<string[]> {
  checkNetAdmin(deps);
  const applied: string[] = [];
  for (const family of families(cfg)) {
    const state = await readNat(deps.run, backend, family);
    const text = buildApplyRules(cfg, family, state);
    await restore(deps.run, backend, family, text);
    applied.push(text);
  }
  return applied;
}

/** Removes init's chains and the jumps into them; leaves every other rule alone. */
export async function cleanupRules(cfg: InitConfig, backend: Backend, deps: ApplyDeps): Promise<void> {
  checkNetAdmin(deps);
  for (const family of families(cfg)) {
    const text = buildCleanupRules(await readNat(deps.run, backend, family));
    if (text !== undefined) await restore(deps.run, backend, family, text);
  }
}
