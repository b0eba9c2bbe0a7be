/**
 * kubectl for the cluster tests and the demo: every call has a timeout (a hung API call fails the test instead of
 * the whole run), failures carry kubectl's own message, and each test gets its own namespace that is deleted
 * afterwards whatever happens.
 */
import { exec, type RunResult } from "../../lib/exec.ts";
import { kubectlBinary } from "../../lib/kubectl_binary.ts";
import { BIN_CACHE } from "../../cluster/config.ts";
import { waitFor } from "./wait.ts";

export const KUBECONFIG = Deno.env.get("KUBECONFIG") ?? "";
/** The mesh's control-plane namespace, as deployed by `deno task deploy`. */
export const CONTROL_PLANE_NS = Deno.env.get("WEFT_NAMESPACE") ?? "weft";
export const WEFT_IMAGE = "localhost/weft:dev";
export type { RunResult };

export interface KubectlOptions {
  stdin?: string;
  /** Default 60 s; kubectl is killed after it. */
  timeoutMs?: number;
}

/** Runs kubectl against KUBECONFIG; never throws on a non-zero exit (the code says it). */
export async function kubectl(args: string[], opts: KubectlOptions = {}): Promise<RunResult> {
  if (!KUBECONFIG) throw new Error("KUBECONFIG is not set: the cluster tests run through `deno task test`");
  const timeoutMs = opts.timeoutMs ?? 60_000;
  return await exec(
    await kubectlBinary(BIN_CACHE),
    ["--kubeconfig", KUBECONFIG, `--request-timeout=${Math.ceil(timeoutMs / 1000)}s`, ...args],
    { stdin: opts.stdin, signal: AbortSignal.timeout(timeoutMs + 5_000) },
  );
}

/** kubectl that must succeed; returns stdout. */
export async function kc(args: string[], opts: KubectlOptions = {}): Promise<string> {
  const r = await kubectl(args, opts);
  if (r.code !== 0) throw new Error(`kubectl ${args.join(" ")} failed: ${(r.stderr || r.stdout).trim()}`);
  return r.stdout;
}

// deno-lint-ignore no-explicit-any
export type Json = any;

export async function kjson(args: string[], opts: KubectlOptions = {}): Promise<Json> {
  return JSON.parse(await kc([...args, "-o", "json"], opts));
}

/** Server-side apply of YAML or JSON documents into `ns`. */
export async function apply(ns: string, manifest: string): Promise<string> {
  return await kc(["-n", ns, "apply", "--server-side", "--force-conflicts", "-f", "-"], { stdin: manifest });
}

/**
 * Fails with what to do when the mesh is not running: every mesh test needs a control plane whose
 * Deployments are all available. Returns the deployment names.
 */
export async function requireMesh(): Promise<string[]> {
  const r = await kubectl(["-n", CONTROL_PLANE_NS, "get", "deployments", "-o", "json"]);
  const hint = `run \`deno task deploy\` first (KUBECONFIG=${KUBECONFIG})`;
  if (r.code !== 0) {
    throw new Error(
      `the mesh is not deployed: cannot list deployments in "${CONTROL_PLANE_NS}" (${r.stderr.trim()}); ${hint}`,
    );
  }
  const items = JSON.parse(r.stdout).items as Json[];
  if (items.length === 0) {
    throw new Error(`the mesh is not deployed: no deployments in "${CONTROL_PLANE_NS}"; ${hint}`);
  }
  const notReady = items.filter((d) => (d.status?.availableReplicas ?? 0) < (d.spec?.replicas ?? 1))
    .map((d) =>
      `${d.metadata.name} (${d.status?.availableReplicas ?? 0}/${d.spec?.replicas ?? 1} available)`
    );
  if (notReady.length > 0) {
    throw new Error(`the mesh is not ready in "${CONTROL_PLANE_NS}": ${notReady.join(", ")}; ${hint}`);
  }
  return items.map((d) => d.metadata.name as string);
}

export interface NamespaceOptions {
  /** Sets `linkerd.io/inject: enabled` on the namespace. */
  inject?: boolean;
  annotations?: Record<string, string>;
}

/** Creates a namespace, runs `fn` in it, prints its pods and events on failure, and deletes it. */
export async function inNamespace(
  prefix: string,
  opts: NamespaceOptions,
  fn: (ns: string) => Promise<void>,
): Promise<void> {
  const ns = `${prefix}-${crypto.randomUUID().slice(0, 6)}`;
  const annotations = { ...(opts.inject ? { "linkerd.io/inject": "enabled" } : {}), ...opts.annotations };
  await kc(["apply", "-f", "-"], {
    stdin: JSON.stringify({
      apiVersion: "v1",
      kind: "Namespace",
      metadata: { name: ns, labels: { "weft.io/e2e": "true" }, annotations },
    }),
  });
  try {
    // ServiceAccount admission refuses pods until the controller has made the namespace's default account.
    await waitFor(
      `ServiceAccount default in ${ns}`,
      async () => (await kubectl(["-n", ns, "get", "serviceaccount", "default"])).code === 0,
      { timeoutMs: 30_000 },
    );
    await fn(ns);
  } catch (e) {
    const state = await kubectl(["-n", ns, "get", "pods,events", "-o", "wide"], { timeoutMs: 15_000 });
    console.error(`namespace ${ns} at failure:\n${state.stdout}${state.stderr}`);
    // The proxies' own account of what failed, a few lines each.
    const r = await kubectl(["-n", ns, "get", "pods", "-o", "json"], { timeoutMs: 15_000 });
    const items: Json[] = r.code === 0 ? JSON.parse(r.stdout).items : [];
    for (const p of items) {
      const all = [...(p.spec?.initContainers ?? []), ...(p.spec?.containers ?? [])];
      if (!all.some((c: Json) => c.name === "linkerd-proxy")) continue;
      const l = await kubectl(["-n", ns, "logs", p.metadata.name, "-c", "linkerd-proxy", "--tail=8"], {
        timeoutMs: 15_000,
      });
      console.error(`proxy log of ${p.metadata.name}:\n${l.stdout}${l.stderr}`);
    }
    throw e;
  } finally {
    await kubectl(["delete", "namespace", ns, "--wait=false"], { timeoutMs: 15_000 });
  }
}

export async function pods(ns: string, selector: string): Promise<Json[]> {
  return (await kjson(["-n", ns, "get", "pods", "-l", selector])).items;
}

export function isReady(pod: Json): boolean {
  return pod.status?.phase === "Running" &&
    (pod.status?.conditions ?? []).some((c: Json) => c.type === "Ready" && c.status === "True") &&
    !pod.metadata?.deletionTimestamp;
}

/** Waits until exactly `count` pods match `selector` and all are Ready; returns them. */
export async function waitForReadyPods(
  ns: string,
  selector: string,
  count: number,
  timeoutMs = 120_000,
): Promise<Json[]> {
  let last: Json[] = [];
  await waitFor(`${count} ready pods ${selector} in ${ns}`, async () => {
    last = await pods(ns, selector);
    return last.length === count && last.every(isReady);
  }, { timeoutMs, describe: () => describePods(last) });
  return last;
}

/** One line per pod: phase, readiness and each container's state, for failure messages. */
export function describePods(list: Json[]): string {
  if (list.length === 0) return "no pods";
  return list.map((p) => {
    const statuses = [...(p.status?.initContainerStatuses ?? []), ...(p.status?.containerStatuses ?? [])];
    const cs = statuses.map((c: Json) => {
      const [state, detail] = Object.entries(c.state ?? {})[0] ?? ["?", {}];
      const why = (detail as Json)?.reason ?? "";
      return `${c.name}=${state}${why ? `(${why})` : ""}${c.ready ? "+ready" : ""}`;
    }).join(" ");
    return `${p.metadata.name} ${p.status?.phase}${isReady(p) ? " Ready" : ""} [${cs}]`;
  }).join("; ");
}

/** `kubectl rollout status` bounded in time. */
export async function rolloutStatus(ns: string, kindName: string, timeoutMs = 180_000): Promise<void> {
  await kc(["-n", ns, "rollout", "status", kindName, `--timeout=${Math.ceil(timeoutMs / 1000)}s`], {
    timeoutMs: timeoutMs + 10_000,
  });
}

export async function logs(ns: string, pod: string, container: string): Promise<string> {
  const r = await kubectl(["-n", ns, "logs", pod, "-c", container], { timeoutMs: 20_000 });
  return r.stdout + r.stderr;
}
