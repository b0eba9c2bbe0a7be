/**
 * Which iptables backend to drive (nft or legacy) and the command runner init uses. Auto mode
 * picks the backend that already holds rules (the node's kube-proxy or CNI chose it), else nft.
 */
import type { Family } from "./rules.ts";

export type Backend = "nft" | "legacy";

export interface CommandResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs a command; resolves undefined when the executable does not exist. */
export type Runner = (cmd: string, args: string[], stdin?: string) => Promise<CommandResult | undefined>;

export class InitError extends Error {
  override name = "InitError";
}

export const denoRunner: Runner = async (cmd, args, stdin) => {
  let child: Deno.ChildProcess;
  try {
    child = new Deno.Command(cmd, {
      args,
      stdin: stdin === undefined ? "null" : "piped",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return undefined;
    throw e;
  }
  if (stdin !== undefined) {
    const w = child.stdin.getWriter();
    await w.write(new TextEncoder().encode(stdin));
    await w.close();
  }
  const out = await child.output();
  const dec = new TextDecoder();
  return { code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
};

export function tool(backend: Backend, family: Family, what: "save" | "restore"): string {
  return `${family === "ipv4" ? "iptables" : "ip6tables"}-${backend}-${what}`;
}

/** Counts rule lines (`-A ...`) in an iptables-save dump. */
export function countRules(saved: string): number {
  let n = 0;
  for (const line of saved.split("\n")) if (line.startsWith("-A ")) n++;
  return n;
}

/** Auto choice from the two dumps (undefined = that backend is not installed). */
export function chooseBackend(nftSave: string | undefined, legacySave: string | undefined): Backend {
  if (nftSave === undefined && legacySave === undefined) {
    throw new InitError(
      "iptables not found: neither iptables-nft-save nor iptables-legacy-save is installed (install iptables)",
    );
  }
  if (nftSave === undefined) return "legacy";
  if (legacySave === undefined) return "nft";
  return countRules(legacySave) > countRules(nftSave) ? "legacy" : "nft";
}

export async function detectBackend(mode: "auto" | Backend, run: Runner): Promise<Backend> {
  if (mode !== "auto") {
    const probe = await run(tool(mode, "ipv4", "save"), ["-t", "nat"]);
    if (probe === undefined) {
      throw new InitError(
        `iptables mode ${mode} was asked for but ${tool(mode, "ipv4", "save")} is not installed`,
      );
    }
    return mode;
  }
  const dump = async (b: Backend) => {
    const r = await run(tool(b, "ipv4", "save"), []);
    return r === undefined ? undefined : r.code === 0 ? r.stdout : "";
  };
  return chooseBackend(await dump("nft"), await dump("legacy"));
}

const CAP_NET_ADMIN = 12n;

/** Whether a /proc/self/status text shows CAP_NET_ADMIN in the effective set. */
export function hasNetAdmin(status: string): boolean {
  const m = /^CapEff:\s*([0-9a-fA-F]+)$/m.exec(status);
  if (!m) return false;
  return ((BigInt(`0x${m[1]}`) >> CAP_NET_ADMIN) & 1n) === 1n;
}
