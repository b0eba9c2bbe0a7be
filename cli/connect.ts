/** The flags every metrics view shares, and the Kubernetes API and Prometheus they lead to. */
import { Kube } from "../manifests/kube.ts";
import type { CliContext } from "./context.ts";
import type { FlagSpec, ParsedFlags } from "./flags.ts";
import { connectPrometheus, type Prometheus } from "./prometheus.ts";

export const CONNECT_FLAGS: readonly FlagSpec[] = [
  { name: "kubeconfig", help: "kubeconfig file", default: "$KUBECONFIG, else ~/.kube/config" },
  {
    name: "prometheus-url",
    help:
      "ask this Prometheus instead of the one deploy installed (or recorded in ConfigMap weft/weft-metrics)",
  },
];

export function kubeconfigPath(f: ParsedFlags, env: CliContext["env"]): string {
  return f.values.get("kubeconfig") ?? (env.KUBECONFIG?.split(":")[0] || `${env.HOME ?? ""}/.kube/config`);
}

export function openKube(f: ParsedFlags, ctx: CliContext): Kube {
  return Kube.fromFile(kubeconfigPath(f, ctx.env));
}

/** The namespace of the kubeconfig's current context, else `default` (kubectl's rule). */
export function contextNamespace(kube: Kube): string {
  return kube.kc.getContextObject(kube.context)?.namespace || "default";
}

export async function openViews(f: ParsedFlags, ctx: CliContext): Promise<{ kube: Kube; prom: Prometheus }> {
  const kube = openKube(f, ctx);
  ctx.status("finding the metrics store…");
  const prom = await connectPrometheus(kube, f.values.get("prometheus-url"));
  return { kube, prom };
}

/** Runs queries in parallel with a progress line on stderr while they are out. */
export async function queryAll<K extends string>(
  prom: Prometheus,
  queries: Record<K, string>,
  ctx: CliContext,
): Promise<Record<K, Awaited<ReturnType<Prometheus["query"]>>>> {
  // An empty query is one the plan does not need: answered with no samples, not sent.
  const keys = (Object.keys(queries) as K[]).filter((k) => queries[k] !== "");
  let done = 0;
  ctx.status(`querying ${prom.where}: 0/${keys.length}`);
  const results = await Promise.all(keys.map(async (k) => {
    const r = await prom.query(queries[k], ctx.signal);
    ctx.status(`querying ${prom.where}: ${++done}/${keys.length}`);
    return r;
  }));
  ctx.status("");
  const out = Object.fromEntries((Object.keys(queries) as K[]).map((k) => [k, []])) as unknown as Record<
    K,
    typeof results[number]
  >;
  keys.forEach((k, i) => out[k] = results[i]);
  return out;
}
