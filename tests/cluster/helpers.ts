// Helpers for cluster tests: kubectl against the cluster in KUBECONFIG, and one namespace per test.

import { join } from "node:path";
import { BIN_CACHE } from "./config.ts";
import { exec, exists, type RunResult } from "./exec.ts";

export const KUBECONFIG = Deno.env.get("KUBECONFIG") ?? "";

let kubectlBin: string | undefined;

/** The kubectl built with the local cluster when present (same release), else WEFT_KUBECTL or PATH's. */
async function kubectlBinary(): Promise<string> {
  if (kubectlBin) return kubectlBin;
  const fromEnv = Deno.env.get("WEFT_KUBECTL");
  if (fromEnv) return (kubectlBin = fromEnv);
  try {
    for await (const e of Deno.readDir(BIN_CACHE)) {
      const p = join(BIN_CACHE, e.name, "kubectl");
      if (e.name.startsWith("k8s-") && (await exists(p))) return (kubectlBin = p);
    }
  } catch { /* no local cache */ }
  return (kubectlBin = "kubectl");
}

export async function kubectl(args: string[], stdin?: string): Promise<RunResult> {
  const bin = await kubectlBinary();
  return await exec(bin, ["--kubeconfig", KUBECONFIG, ...args], stdin === undefined ? {} : { stdin });
}

/** kubectl that must succeed; returns stdout. */
export async function kc(args: string[], stdin?: string): Promise<string> {
  const r = await kubectl(args, stdin);
  if (r.code !== 0) throw new Error(`kubectl ${args.join(" ")} failed: ${(r.stderr || r.stdout).trim()}`);
  return r.stdout;
}

// deno-lint-ignore no-explicit-any
export async function kjson(args: string[]): Promise<any> {
  return JSON.parse(await kc([...args, "-o", "json"]));
}

/** Runs `fn` in a fresh namespace that is deleted afterwards, whatever the outcome. */
export async function inNamespace(prefix: string, fn: (ns: string) => Promise<void>) {
  const ns = `${prefix}-${crypto.randomUUID().slice(0, 6)}`;
  await kc(["create", "namespace", ns]);
  try {
    // ServiceAccount admission rejects pods until the controller made the namespace's default account.
    for (let i = 0; i < 60; i++) {
      if ((await kubectl(["-n", ns, "get", "serviceaccount", "default"])).code === 0) break;
      await new Promise((r) => setTimeout(r, 500));
    }
    await fn(ns);
  } catch (e) {
    const pods = await kubectl(["-n", ns, "get", "pods,events", "-o", "wide"]);
    console.error(`namespace ${ns} at failure:\n${pods.stdout}`);
    throw e;
  } finally {
    await kubectl(["delete", "namespace", ns, "--wait=false"]);
  }
}

/** Pod spec fragment for a container of the project image (never pulled). */
export const WEFT_IMAGE = "localhost/weft:dev";
