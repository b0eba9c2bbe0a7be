/**
 * `weft restart-proxies [-n NS | -A] [-l SELECTOR] [--batch=N] [--timeout=5m] [--dry-run]` (issue 19): rolls the
 * data plane onto the proxy the control plane now injects, a batch of N meshed workloads at a time. Each batch
 * gets `kubectl rollout restart`'s pod-template annotation; the next batch starts only when every workload of
 * this one has rolled out, so at most N workloads are rolling at once and each keeps its rollout strategy's
 * available pods. A batch that does not finish within --timeout stops the command, naming the workload and
 * what it waits for, and the later batches are left untouched.
 */
import type { Kube } from "../manifests/kube.ts";
import { NAMESPACE as CONTROL_PLANE_NAMESPACE } from "../manifests/render.ts";
import { contextNamespace, openKube } from "./connect.ts";
import type { CliContext, Command } from "./context.ts";
import { flagHelp, parseFlags } from "./flags.ts";
import {
  batches,
  fullRef,
  plural,
  refText,
  RESTART_FLAGS,
  type RestartOptions,
  restartOptions,
  restartPatch,
  type Rollout,
  rolloutState,
  selectMeshed,
  WORKLOAD_KINDS,
  type WorkloadRef,
} from "./restart_plan.ts";

// deno-lint-ignore no-explicit-any
type Json = any;

type Collection = "deployments" | "statefulsets" | "daemonsets" | "replicasets" | "pods";

/** The API calls the command makes (a fake in the tests). */
export interface RestartApi {
  list(collection: Collection, namespace?: string, selector?: string): Promise<Json[]>;
  patch(w: WorkloadRef, body: string): Promise<Json>;
  get(w: WorkloadRef): Promise<Json>;
}

const FIELD_MANAGER = "weft-restart-proxies";

function path(collection: string, namespace?: string): string {
  const group = collection === "pods" ? "/api/v1" : "/apis/apps/v1";
  return `${group}${namespace ? `/namespaces/${namespace}` : ""}/${collection}`;
}

export function kubeRestartApi(kube: Kube): RestartApi {
  const one = (w: WorkloadRef) => `${path(plural(w.kind), w.namespace)}/${w.name}`;
  return {
    list: (c, ns, selector) => kube.list<Json>(path(c, ns), selector ? { labelSelector: selector } : {}),
    patch: (w, body) =>
      kube.json("PATCH", one(w), {
        body,
        contentType: "application/strategic-merge-patch+json",
        query: { fieldManager: FIELD_MANAGER },
      }),
    get: (w) => kube.json("GET", one(w)),
  };
}

export interface RestartDeps {
  api: RestartApi;
  now?: () => number;
  sleep?: (ms: number) => Promise<void>;
  pollMs?: number;
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)}s`;

/** Restarts the selected workloads batch by batch; returns the exit status (0 all rolled out, 1 stopped). */
export async function restartProxies(o: RestartOptions, ctx: CliContext, deps: RestartDeps): Promise<number> {
  const { api } = deps;
  const now = deps.now ?? Date.now;
  const sleep = deps.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  const pollMs = deps.pollMs ?? 1000;
  const where = o.namespace ? `namespace ${o.namespace}` : "every namespace";
  ctx.status(`listing meshed workloads in ${where}…`);
  const [replicaSets, pods, ...workloads] = await Promise.all([
    api.list("replicasets", o.namespace),
    api.list("pods", o.namespace),
    ...WORKLOAD_KINDS.map((k) => api.list(plural(k) as Collection, o.namespace, o.selector)),
  ]);
  ctx.status("");
  const sel = selectMeshed(
    WORKLOAD_KINDS.map((kind, i) => ({ kind, items: workloads[i] })),
    replicaSets,
    pods,
    CONTROL_PLANE_NAMESPACE,
  );
  for (const s of sel.skipped) ctx.err(`skipped ${fullRef(s.workload)}: ${s.why}`);
  const plan = batches(sel.selected, o.batch);
  const matching = o.selector ? ` matching ${o.selector}` : "";
  if (plan.length === 0) {
    await ctx.out(
      `no meshed Deployment, StatefulSet or DaemonSet in ${where}${matching}: nothing to restart\n`,
    );
    return 0;
  }
  await ctx.out(
    `${sel.selected.length} meshed workload${sel.selected.length === 1 ? "" : "s"} in ${where}${matching}, ` +
      `${plan.length} batch${plan.length === 1 ? "" : "es"} of up to ${o.batch}` +
      `${o.dryRun ? " (dry run: nothing restarted)" : ""}\n`,
  );
  const t0 = now();
  for (const [i, batch] of plan.entries()) {
    const label = `batch ${i + 1}/${plan.length}`;
    const names = batch.map((w) => (o.namespace ? refText(w) : fullRef(w))).join(", ");
    if (o.dryRun) {
      await ctx.out(`${label}: ${names}\n`);
      continue;
    }
    const start = now();
    const body = restartPatch(new Date(start));
    for (const w of batch) await api.patch(w, body);
    const state = new Map<string, Rollout>();
    for (;;) {
      if (ctx.signal.aborted) throw new Error(`interrupted during ${label} (${names})`);
      for (const w of batch) {
        if (state.get(fullRef(w))?.state === "done") continue;
        state.set(fullRef(w), rolloutState(w.kind, await api.get(w)));
      }
      const failed = batch.find((w) => state.get(fullRef(w))!.state === "failed");
      const pending = batch.filter((w) => state.get(fullRef(w))!.state !== "done");
      const why = (w: WorkloadRef) => (state.get(fullRef(w)) as { why: string }).why;
      const rest = plan.slice(i + 1).flat();
      const untouched = rest.length
        ? `; not restarted: ${rest.map((w) => (o.namespace ? refText(w) : fullRef(w))).join(", ")}`
        : "";
      if (failed) {
        ctx.err(`${label}: ${fullRef(failed)} failed to roll out: ${why(failed)}${untouched}`);
        return 1;
      }
      if (pending.length === 0) break;
      if (now() - start > o.timeoutMs) {
        ctx.err(
          `${label}: ${
            pending.map((w) => `${fullRef(w)} (${why(w)})`).join(", ")
          } did not finish rolling out ` +
            `within ${seconds(o.timeoutMs)}${untouched}. See kubectl -n ${
              pending[0].namespace
            } rollout status ` +
            `${refText(pending[0])}`,
        );
        return 1;
      }
      ctx.status(`${label}: ${pending.map((w) => `${refText(w)} ${why(w)}`).join("; ")}`);
      await sleep(pollMs);
    }
    ctx.status("");
    await ctx.out(`${label}: ${names} rolled out in ${seconds(now() - start)}\n`);
  }
  if (!o.dryRun) {
    await ctx.out(
      `restarted ${sel.selected.length} workload${sel.selected.length === 1 ? "" : "s"} in ${
        seconds(now() - t0)
      }\n`,
    );
  }
  return 0;
}

const USAGE = `usage: weft restart-proxies [-n NS | -A] [-l SELECTOR] [--batch=N] [--timeout=5m] [--dry-run]

Restarts meshed Deployments, StatefulSets and DaemonSets (those whose pods carry the proxy) in batches, so
their pods get the proxy the control plane injects now (after an upgrade; weft check's version skew lists
them). Each batch gets kubectl rollout restart's annotation; the next starts when it has rolled out.

${flagHelp(RESTART_FLAGS)}
`;

export const restartProxiesCommand: Command = {
  name: "restart-proxies",
  summary: "roll the data plane: restart meshed workloads in batches, each waited for (docs/ha.md)",
  async run(args, ctx) {
    const f = parseFlags(args, RESTART_FLAGS);
    if (f.help) {
      await ctx.out(USAGE);
      return 0;
    }
    let kube: Kube | undefined;
    const open = () => kube ??= openKube(f, ctx);
    const o = restartOptions(f, () => contextNamespace(open()));
    return await restartProxies(o, ctx, { api: kubeRestartApi(open()) });
  },
};
