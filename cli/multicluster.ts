/**
 * `weft multicluster install|link|unlink|check|gateways` (issue 23), the operator's side of Linkerd's multicluster
 * extension: install what a cluster needs to be linked to (and to link), link a source to a target, unlink, and
 * check or list the links. The work is in manifests/multicluster/ and manifests/check/multicluster.ts.
 */
import { Kube } from "../manifests/kube.ts";
import { checkOutcome, formatResult } from "../manifests/check/result.ts";
import {
  checkMulticluster,
  gatewayState,
  listLinks,
  mirrorCounts,
  remoteKube,
} from "../manifests/check/multicluster.ts";
import { install } from "../manifests/multicluster/install_run.ts";
import { link } from "../manifests/multicluster/link_run.ts";
import { unlink } from "../manifests/multicluster/unlink.ts";
import {
  renderServiceMirrorFor,
  serviceMirrorObjectsFor,
} from "../manifests/multicluster/service_mirror_link.ts";
import { parseLink } from "../control/multicluster/link.ts";
import type { CliContext, Command } from "./context.ts";
import { flagHelp } from "./flags.ts";
import { FLAGS, type McOptions, parseMulticlusterArgs, SUBCOMMANDS } from "./multicluster_flags.ts";
import { renderTable } from "./table.ts";

const SUMMARY: Record<(typeof SUBCOMMANDS)[number], string> = {
  install:
    "namespace weft-multicluster, remote-access account, Link CRD and (unless --gateway=false) the gateway",
  link:
    "link this cluster (--kubeconfig) to a target cluster (--target-kubeconfig): credentials, Link, mirror",
  unlink: "remove a link: Link, service mirror, credentials and every mirror of the cluster",
  check:
    "per link: target API, credentials, shared trust anchors, service mirror, gateway, mirrored services",
  gateways: "per link: gateway alive, probe latency, mirrored services",
};

export function usage(): string {
  return `usage: weft multicluster <subcommand> [flags]   (docs/multicluster.md)\n\n` +
    SUBCOMMANDS.map((s) => `${s}  ${SUMMARY[s]}\n${flagHelp(FLAGS[s])}\n`).join("\n");
}

const secs = (ms: number) => `${(ms / 1000).toFixed(1)}s`;

function kubeconfigOf(o: McOptions, ctx: CliContext): string {
  return o.kubeconfig ?? (ctx.env.KUBECONFIG?.split(":")[0] || `${ctx.env.HOME ?? ""}/.kube/config`);
}

async function runInstall(o: McOptions, ctx: CliContext): Promise<number> {
  const kube = Kube.fromFile(kubeconfigOf(o, ctx));
  const s = await install(kube, {
    gateway: o.gateway,
    allowedIdentities: o.allowedIdentities,
    timeoutMs: o.timeoutMs,
    status: (t) => ctx.status(t),
  });
  ctx.status("");
  for (const a of s.applied) await ctx.out(`${a.object} ${a.result}\n`);
  await ctx.out(
    `multicluster installed on ${kube.server} in ${secs(s.ms)}${
      o.gateway ? " (gateway rolled out)" : " (no gateway)"
    }\n`,
  );
  for (const w of s.warnings) ctx.err(w);
  return 0;
}

async function runLink(o: McOptions, ctx: CliContext): Promise<number> {
  const source = Kube.fromFile(kubeconfigOf(o, ctx));
  const target = Kube.fromFile(o.targetKubeconfig!);
  const r = await link(source, target, {
    clusterName: o.clusterName!,
    gateway: o.gateway,
    ...(o.gatewayAddresses ? { gatewayAddresses: o.gatewayAddresses } : {}),
    ...(o.apiServerAddress ? { apiServerAddress: o.apiServerAddress } : {}),
    timeoutMs: o.timeoutMs,
    status: (t) => ctx.status(t),
  }, renderServiceMirrorFor);
  for (const a of r.applied) await ctx.out(`${a}\n`);
  const g = r.plan.gateway;
  await ctx.out(
    `linked ${source.server} -> ${o.clusterName} (${r.plan.apiServer}), ` +
      (g
        ? `gateway ${g.addresses.join(",")}:${g.port} (${g.identity})`
        : "no gateway (flat/federated only)") +
      `\nlink set-up ${secs(r.timings.totalMs)}: read target ${secs(r.timings.readTargetMs)}, apply ${
        secs(r.timings.applyMs)
      }, service mirror ready ${secs(r.timings.readyMs)}\n`,
  );
  return 0;
}

async function runUnlink(o: McOptions, ctx: CliContext): Promise<number> {
  const kube = Kube.fromFile(kubeconfigOf(o, ctx));
  const r = await unlink(kube, o.clusterName!, await serviceMirrorObjectsFor(o.clusterName!, kube));
  for (const d of r.deleted) await ctx.out(`deleted ${d}\n`);
  for (const p of r.patched) await ctx.out(`patched ${p}\n`);
  await ctx.out(
    r.deleted.length || r.patched.length
      ? `unlinked ${o.clusterName} in ${secs(r.ms)}\n`
      : `nothing of a link to ${o.clusterName} on ${kube.server}\n`,
  );
  return 0;
}

async function runCheck(o: McOptions, ctx: CliContext): Promise<number> {
  const kube = Kube.fromFile(kubeconfigOf(o, ctx));
  const results = await checkMulticluster({ kube, thresholdMs: 0, now: Date.now() });
  if (results.length === 0) {
    await ctx.out(`no Links in ${kube.server}: nothing to check\n`);
    return 0;
  }
  for (const r of results) await ctx.out(formatResult(r) + "\n");
  const { code, line } = checkOutcome(results);
  await ctx.out(line.replace("mesh:check", "multicluster check") + "\n");
  return code;
}

async function runGateways(o: McOptions, ctx: CliContext): Promise<number> {
  const kube = Kube.fromFile(kubeconfigOf(o, ctx));
  const rows: string[][] = [];
  for (const obj of await listLinks(kube)) {
    const l = parseLink(obj);
    const g = await gatewayState(kube, obj).catch(() => undefined);
    const counts = await remoteKube(kube, l.clusterCredentialsSecret)
      .then((r) => mirrorCounts(kube, r, obj))
      .catch(() => undefined);
    rows.push([
      l.targetClusterName,
      g ? (g.alive ? "True" : "False") : "-",
      g?.latencyMs !== undefined ? `${g.latencyMs.toFixed(1)}ms` : "-",
      counts ? `${counts.mirrored}/${counts.exported}` : "-",
      l.gatewayAddress ? `${l.gatewayAddress}:${l.gatewayPort}` : "(none)",
      g?.source ?? "-",
    ]);
  }
  if (rows.length === 0) {
    await ctx.out(`no Links in ${kube.server}\n`);
    return 0;
  }
  await ctx.out(renderTable(["CLUSTER", "ALIVE", "LATENCY", "MIRRORED", "GATEWAY", "FROM"], rows));
  return 0;
}

export const multiclusterCommand: Command = {
  name: "multicluster",
  aliases: ["mc"],
  summary: "link clusters: install, link, unlink, check, gateways (docs/multicluster.md)",
  async run(args, ctx) {
    const o = parseMulticlusterArgs(args);
    if (o.help) {
      await ctx.out(usage());
      return 0;
    }
    switch (o.sub) {
      case "install":
        return await runInstall(o, ctx);
      case "link":
        return await runLink(o, ctx);
      case "unlink":
        return await runUnlink(o, ctx);
      case "check":
        return await runCheck(o, ctx);
      case "gateways":
        return await runGateways(o, ctx);
    }
  },
};
