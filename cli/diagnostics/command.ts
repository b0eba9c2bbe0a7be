/**
 * `weft diagnostics <proxy-metrics|controller-metrics|endpoints|policy|profile>`.
 *
 * endpoints, policy and profile open the same streams a proxy opens (the proxy's request
 * builders, channel and gRPC client) on the destination pod's controllers, reached through a
 * port-forward, and print the first complete answer: a table, or with `-o json` every decoded
 * message. Without `--as` the requests are those of a pod named `weft-cli` in `-n`'s namespace;
 * `--as deploy/NAME` (or pod/NAME) sends exactly what that pod's proxy sends.
 */
import { type KubeConfig, type V1Pod } from "@kubernetes/client-node";
import { loadKubeConfig } from "../../control/k8s/kubeconfig.ts";
import { destinationContext, policyWorkload } from "../../proto/proxy_workload.ts";
import { Ports } from "../../proto/ports.ts";
import {
  GET,
  GET_PROFILE,
  getProfileRequest,
  getRequest,
  outboundWatchRequest,
  type Update,
  WATCH_OUTBOUND,
  WATCH_PORT,
  watchPortRequest,
} from "../../proxy/discovery/requests.ts";
import type { CliContext, Command } from "../context.ts";
import { UsageError } from "../context.ts";
import { kubeconfigPath } from "../connect.ts";
import { flagHelp, type FlagSpec, type ParsedFlags, parseFlags } from "../flags.ts";
import { destinationPod, snapshot, withController } from "./controller.ts";
import { endpointRows, endpointSet, parseAuthority, renderEndpoints } from "./endpoints.ts";
import { messageJson } from "./message_json.ts";
import { controllerAdminPorts, fetchMetrics, hasProxy, PROXY_ADMIN_PORT, section } from "./metrics.ts";
import { renderInbound, renderOutbound } from "./policy.ts";
import { renderProfile } from "./profile.ts";
import {
  apiMessage,
  type KubeReader,
  kubeReader,
  labelSelector,
  parseResource,
  resolvePod,
  resolvePods,
  serviceOfHost,
} from "./resource.ts";

const FLAGS: readonly FlagSpec[] = [
  {
    name: "namespace",
    short: "n",
    help: "namespace of the resource",
    default: "the kubeconfig context's, else default",
  },
  { name: "output", short: "o", help: "table or json", default: "table" },
  { name: "as", help: "send the requests of this pod's proxy (pod/NAME or deploy/NAME in -n)" },
  {
    name: "control-plane-namespace",
    short: "L",
    help: "the mesh's namespace",
    default: "$WEFT_NAMESPACE or weft",
  },
  { name: "timeout", help: "bound on each answer, in seconds", default: "10" },
  { name: "kubeconfig", help: "kubeconfig file", default: "$KUBECONFIG, else ~/.kube/config" },
];

/** What a subcommand runs with: built from the context in `run`, passed in by tests. */
export interface DiagnosticsEnv {
  kc: KubeConfig;
  kube: KubeReader;
  controlPlaneNs: string;
  /** `-n`'s default: the kubeconfig context's namespace. */
  defaultNs: string;
}

const USAGE = `usage:
  weft diagnostics proxy-metrics (pod/NAME | deploy/NAME) [-n NS]
  weft diagnostics controller-metrics [-L NS]
  weft diagnostics endpoints AUTHORITY... [--as RES] [-n NS] [-o json]
  weft diagnostics policy (pod/NAME | deploy/NAME) PORT [-n NS] [-o json]   inbound policy of a port
  weft diagnostics policy svc/NAME PORT [--as RES] [-n NS] [-o json]         outbound policy for a Service
  weft diagnostics policy NAME.NS.svc.cluster.local:PORT [--as RES] [-o json]  the same, by authority
  weft diagnostics profile AUTHORITY [--as RES] [-n NS] [-o json]

flags:
`;

interface Opts {
  ns: string;
  json: boolean;
  timeoutMs: number;
  as?: string;
}

function options(f: ParsedFlags, defaultNs: string): Opts {
  const o = f.values.get("output") ?? "table";
  if (o !== "table" && o !== "json") throw new UsageError(`-o: "${o}" is not table or json`);
  const t = Number(f.values.get("timeout") ?? "10");
  if (!Number.isFinite(t) || t <= 0 || t > 600) {
    throw new UsageError(`--timeout: "${f.values.get("timeout")}" is not a number of seconds in (0, 600]`);
  }
  return {
    ns: f.values.get("namespace") ?? defaultNs,
    json: o === "json",
    timeoutMs: t * 1000,
    as: f.values.get("as"),
  };
}

function json(v: unknown): string {
  return JSON.stringify(v, null, 2) + "\n";
}

/** The workload and context token of the pod the requests are sent as. */
async function requester(
  e: DiagnosticsEnv,
  o: Opts,
): Promise<{ workload: string; context: string; who: string }> {
  if (!o.as) {
    return {
      workload: policyWorkload(o.ns, "weft-cli"),
      context: destinationContext(o.ns, "", "weft-cli"),
      who: `${o.ns}/weft-cli (no such pod: --as names a real one)`,
    };
  }
  const pod = await resolvePod(e.kube, o.ns, parseResource(o.as));
  return podRequester(pod);
}

function podRequester(pod: V1Pod): { workload: string; context: string; who: string } {
  const ns = pod.metadata?.namespace ?? "";
  const name = pod.metadata?.name ?? "";
  return {
    workload: policyWorkload(ns, name),
    context: destinationContext(ns, pod.spec?.nodeName ?? "", name),
    who: `${ns}/${name}`,
  };
}

async function controllerTarget(e: DiagnosticsEnv, port: number) {
  return { kc: e.kc, namespace: e.controlPlaneNs, pod: await destinationPod(e.kube, e.controlPlaneNs), port };
}

function parsePort(text: string | undefined): number {
  const p = Number(text);
  if (!text || !/^\d+$/.test(text) || p < 1 || p > 65535) {
    throw new UsageError(`"${text ?? ""}" is not a port (1-65535)`);
  }
  return p;
}

export async function proxyMetrics(
  e: DiagnosticsEnv,
  args: string[],
  o: Opts,
  ctx: CliContext,
): Promise<number> {
  if (args.length !== 1) throw new UsageError("proxy-metrics takes one pod/NAME or deploy/NAME");
  const pods = await resolvePods(e.kube, o.ns, parseResource(args[0]));
  let i = 0;
  for (const pod of pods) {
    const name = pod.metadata!.name!;
    if (!hasProxy(pod)) {
      throw new Error(`pod ${o.ns}/${name} has no linkerd-proxy container: it is not meshed`);
    }
    ctx.status(`fetching the metrics of ${o.ns}/${name}`);
    const text = await fetchMetrics(
      e.kc,
      { namespace: o.ns, pod: name, port: PROXY_ADMIN_PORT },
      o.timeoutMs,
      ctx.signal,
    );
    ctx.status("");
    await ctx.out((pods.length > 1 ? section(`POD ${name} (${++i} of ${pods.length})`) : "") + text);
  }
  return 0;
}

export async function controllerMetrics(
  e: DiagnosticsEnv,
  args: string[],
  o: Opts,
  ctx: CliContext,
): Promise<number> {
  if (args.length !== 0) throw new UsageError("controller-metrics takes no arguments");
  const pods =
    (await e.kube.pods(e.controlPlaneNs, labelSelector({ "linkerd.io/control-plane-ns": e.controlPlaneNs })))
      .sort((a, b) => (a.metadata?.name ?? "").localeCompare(b.metadata?.name ?? ""));
  if (pods.length === 0) {
    throw new Error(`no control-plane pods in "${e.controlPlaneNs}": is the mesh deployed?`);
  }
  let failed = 0;
  for (const pod of pods) {
    const name = pod.metadata!.name!;
    for (const a of controllerAdminPorts(pod)) {
      ctx.status(`fetching the metrics of ${name} ${a.container}`);
      try {
        const text = await fetchMetrics(
          e.kc,
          { namespace: e.controlPlaneNs, pod: name, port: a.port },
          o.timeoutMs,
          ctx.signal,
        );
        ctx.status("");
        await ctx.out(section(`POD ${name} CONTAINER ${a.container} (port ${a.port})`) + text);
      } catch (err) {
        // One unreachable component does not hide the others.
        failed++;
        ctx.err(`${name} ${a.container}: ${(err as Error).message}`);
      }
    }
  }
  return failed > 0 ? 1 : 0;
}

export async function endpoints(
  e: DiagnosticsEnv,
  args: string[],
  o: Opts,
  ctx: CliContext,
): Promise<number> {
  if (args.length === 0) throw new UsageError("endpoints takes at least one AUTHORITY (NAME:PORT)");
  for (const a of args) parseAuthority(a);
  const who = await requester(e, o);
  const results = await withController(await controllerTarget(e, Ports.destination), async (c) => {
    const out: { authority: string; updates: Update[]; error?: string }[] = [];
    for (const authority of args) {
      ctx.status(`Destination.Get ${authority}`);
      try {
        const snap = await snapshot(c, GET, getRequest(authority, who.context), {
          settleMs: 300,
          timeoutMs: o.timeoutMs,
          signal: ctx.signal,
        });
        out.push({ authority, updates: snap.messages });
      } catch (err) {
        // One unknown authority does not hide the others' answers.
        out.push({ authority, updates: [], error: (err as Error).message });
      }
    }
    ctx.status("");
    return out;
  });
  const failed = results.filter((r) => r.error !== undefined);
  if (o.json) {
    await ctx.out(json(results.map((r) => ({
      authority: r.authority,
      contextToken: who.context,
      updates: messageJson(r.updates),
      ...(r.error !== undefined ? { error: r.error } : {}),
    }))));
  } else {
    const rows = results.flatMap((r) => endpointRows(r.authority, endpointSet(r.updates)));
    const missing = results.filter((r) =>
      r.error === undefined && endpointSet(r.updates).endpoints.size === 0
    )
      .map((r) => r.authority);
    await ctx.out(renderEndpoints(rows, missing));
  }
  for (const r of failed) ctx.err(`${r.authority}: ${r.error}`);
  return failed.length > 0 ? 1 : 0;
}

export async function policy(e: DiagnosticsEnv, args: string[], o: Opts, ctx: CliContext): Promise<number> {
  let ref;
  let port;
  let svcNs = o.ns;
  if (args.length === 1) {
    // A Service's authority, as a proxy's application would dial it: NAME.NS.svc.cluster.local:PORT.
    const a = parseAuthority(args[0]);
    const svc = serviceOfHost(a.host);
    if (!svc) throw new UsageError(`"${a.host}" is not a Service name (NAME.NS.svc.<cluster domain>)`);
    ref = { kind: "service" as const, name: svc.name };
    svcNs = svc.namespace;
    port = a.port;
  } else if (args.length === 2) {
    ref = parseResource(args[0]);
    port = parsePort(args[1]);
  } else {
    throw new UsageError(
      "policy takes a resource and a port (policy deploy/NAME 8080) or a Service authority",
    );
  }
  const target = await controllerTarget(e, Ports.policy);
  if (ref.kind === "service") {
    const svc = await e.kube.service(svcNs, ref.name).catch((err) => {
      throw new Error(`cannot read service ${svcNs}/${ref.name}: ${apiMessage(err)}`);
    });
    const ip = svc.spec?.clusterIP;
    if (!ip || ip === "None") {
      throw new Error(
        `service ${svcNs}/${ref.name} has no cluster IP: a proxy looks up outbound policy by address`,
      );
    }
    const who = await requester(e, o);
    const req = outboundWatchRequest(who.workload, ip, port);
    ctx.status(`OutboundPolicies.Watch ${ip}:${port}`);
    const snap = await withController(
      target,
      (c) => snapshot(c, WATCH_OUTBOUND, req, { settleMs: 200, timeoutMs: o.timeoutMs, signal: ctx.signal }),
    );
    ctx.status("");
    const last = snap.messages[snap.messages.length - 1];
    if (o.json) await ctx.out(json({ request: messageJson(req), policy: messageJson(last) }));
    else await ctx.out(renderOutbound(`svc/${ref.name}.${svcNs} (${ip}:${port}) as ${who.who}`, last));
    return 0;
  }
  if (o.as) {
    throw new UsageError("--as applies to outbound policy (svc/NAME): inbound policy is the pod's own");
  }
  const pod = await resolvePod(e.kube, o.ns, ref);
  const who = podRequester(pod);
  const req = watchPortRequest(who.workload, port);
  ctx.status(`InboundServerPolicies.WatchPort ${who.who}:${port}`);
  const snap = await withController(
    target,
    (c) => snapshot(c, WATCH_PORT, req, { settleMs: 200, timeoutMs: o.timeoutMs, signal: ctx.signal }),
  );
  ctx.status("");
  const last = snap.messages[snap.messages.length - 1];
  if (o.json) await ctx.out(json({ request: messageJson(req), policy: messageJson(last) }));
  else await ctx.out(renderInbound(`pod/${who.who}`, port, last));
  return 0;
}

export async function profile(e: DiagnosticsEnv, args: string[], o: Opts, ctx: CliContext): Promise<number> {
  if (args.length !== 1) throw new UsageError("profile takes one AUTHORITY (NAME:PORT or IP:PORT)");
  parseAuthority(args[0]);
  const who = await requester(e, o);
  const req = getProfileRequest(args[0], who.context);
  ctx.status(`Destination.GetProfile ${args[0]}`);
  const snap = await withController(
    await controllerTarget(e, Ports.destination),
    (c) => snapshot(c, GET_PROFILE, req, { settleMs: 200, timeoutMs: o.timeoutMs, signal: ctx.signal }),
  );
  ctx.status("");
  const last = snap.messages[snap.messages.length - 1];
  if (o.json) await ctx.out(json({ request: messageJson(req), profile: messageJson(last) }));
  else await ctx.out(renderProfile(args[0], last));
  return 0;
}

const SUBCOMMANDS: Record<
  string,
  (e: DiagnosticsEnv, args: string[], o: Opts, ctx: CliContext) => Promise<number>
> = {
  "proxy-metrics": proxyMetrics,
  "controller-metrics": controllerMetrics,
  endpoints,
  policy,
  profile,
};

export async function runDiagnostics(
  args: string[],
  ctx: CliContext,
  makeEnv: (f: ParsedFlags) => DiagnosticsEnv,
): Promise<number> {
  const f = parseFlags(args, FLAGS);
  const [sub, ...rest] = f.positionals;
  if (f.help || sub === undefined) {
    await ctx.out(USAGE + flagHelp(FLAGS) + "\n");
    return f.help ? 0 : 2;
  }
  const run = SUBCOMMANDS[sub];
  if (!run) {
    throw new UsageError(`unknown diagnostics command "${sub}": ${Object.keys(SUBCOMMANDS).join(", ")}`);
  }
  const env = makeEnv(f);
  return await run(env, rest, options(f, env.defaultNs), ctx);
}

/** The environment from the flags and the context: the kubeconfig and the mesh's namespace. */
export function envFromContext(ctx: CliContext, f: ParsedFlags): DiagnosticsEnv {
  const kc = loadKubeConfig(kubeconfigPath(f, ctx.env));
  return {
    kc,
    kube: kubeReader(kc),
    controlPlaneNs: f.values.get("control-plane-namespace") ?? ctx.env.WEFT_NAMESPACE ?? "weft",
    defaultNs: kc.getContextObject(kc.getCurrentContext())?.namespace || "default",
  };
}

export const diagnosticsCommand: Command = {
  name: "diagnostics",
  aliases: ["diag"],
  summary:
    "what the control plane tells a proxy: proxy-metrics, controller-metrics, endpoints, policy, profile",
  run: (args, ctx) => runDiagnostics(args, ctx, (f) => envFromContext(ctx, f)),
};
