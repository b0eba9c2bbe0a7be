// Helpers for cluster tests: kubectl against the cluster in KUBECONFIG, and one namespace per test.

import { kubectlBinary } from "../lib/kubectl_binary.ts";
import { BIN_CACHE } from "./config.ts";
import { exec, type RunResult } from "./exec.ts";

export const KUBECONFIG = Deno.env.get("KUBECONFIG") ?? "";

export async function kubectl(args: string[], stdin?: string): Promise<RunResult> {
  const bin = await kubectlBinary(BIN_CACHE);
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

/** A pod of the project image that runs a Deno snippet once (on `node` when given); its log once it succeeded. */
export async function runPodOnce(ns: string, name: string, code: string, node?: string): Promise<string> {
  const pod = {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name },
    spec: {
      ...(node ? { nodeName: node } : {}),
      restartPolicy: "Never",
      containers: [{
        name: "run",
        image: WEFT_IMAGE,
        imagePullPolicy: "Never",
        command: ["deno", "eval", code],
      }],
    },
  };
  await kc(["-n", ns, "apply", "-f", "-"], JSON.stringify(pod));
  const w = await kubectl([
    "-n",
    ns,
    "wait",
    `pod/${name}`,
    "--for=jsonpath={.status.phase}=Succeeded",
    "--timeout=120s",
  ]);
  const logs = await kubectl(["-n", ns, "logs", name]);
  if (w.code !== 0) {
    throw new Error(
      `pod ${name}${node ? ` on ${node}` : ""} did not succeed: ${w.stderr}\n${logs.stdout}${logs.stderr}`,
    );
  }
  return logs.stdout;
}
