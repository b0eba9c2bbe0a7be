/**
 * `control/main.ts dashboard [flags]`: the web dashboard (`weft dashboard` port-forwards to it). It serves
 * the page files and a GET-only JSON API that reads through the CLI's own code (server.ts, api.ts), with
 * the read-only ServiceAccount weft-dashboard.
 *
 *   --addr=0.0.0.0:8084               the web server
 *   --admin-addr=0.0.0.0:9994         /live /ready /metrics
 *   --enforced-host=REGEX             Host headers answered (default: loopback and the Service's names)
 *   --prometheus-url=URL              the metrics store (default: as the CLI finds it)
 *   --kubeconfig=PATH                 (env KUBECONFIG; in-cluster config when unset)
 */
import { Registry } from "prom-client";
import { connectPrometheus, type Prometheus } from "../../cli/prometheus.ts";
import { Kube } from "../../manifests/kube.ts";
import { Ports } from "../../proto/ports.ts";
import { serveAdmin } from "../admin/admin_server.ts";
import { flag, type FlagSpec, parseFlags } from "../flags/flags.ts";
import { splitHostPort } from "../flags/host_port.ts";
import { loadKubeConfig } from "../k8s/mod.ts";
import { apiRoutes } from "./api.ts";
import { loadAssets } from "./assets.ts";
import { dashboardHandler, DEFAULT_ENFORCED_HOST } from "./server.ts";

export interface DashboardConfig {
  hostname: string;
  port: number;
  adminHostname: string;
  adminPort: number;
  enforcedHost: RegExp;
  prometheusUrl: string | undefined;
  kubeconfig: string | undefined;
}

const FLAGS: readonly FlagSpec[] = [
  flag("addr"),
  flag("admin-addr"),
  flag("enforced-host"),
  flag("prometheus-url"),
  flag("kubeconfig", { env: "KUBECONFIG" }),
];

export function parseArgs(args: string[], env: Record<string, string | undefined>): DashboardConfig {
  const { flags } = parseFlags(args, FLAGS, { env });
  const addr = splitHostPort(flags.get("addr") ?? `0.0.0.0:${Ports.dashboard}`, "--addr");
  const admin = splitHostPort(flags.get("admin-addr") ?? `0.0.0.0:${Ports.dashboardAdmin}`, "--admin-addr");
  const hostText = flags.get("enforced-host");
  let enforcedHost = DEFAULT_ENFORCED_HOST;
  if (hostText !== undefined) {
    try {
      enforcedHost = new RegExp(hostText);
    } catch (e) {
      throw new Error(`--enforced-host: "${hostText}" is not a regular expression: ${(e as Error).message}`);
    }
  }
  return {
    hostname: addr.host,
    port: addr.port,
    adminHostname: admin.host,
    adminPort: admin.port,
    enforcedHost,
    prometheusUrl: flags.get("prometheus-url"),
    kubeconfig: flags.get("kubeconfig"),
  };
}

/** The metrics store, looked up once it is first needed and again after a failure. */
function lazyPrometheus(kube: Kube, url: string | undefined): (signal: AbortSignal) => Promise<Prometheus> {
  let found: Promise<Prometheus> | undefined;
  return () => {
    if (!found) {
      found = connectPrometheus(kube, url);
      found.catch(() => found = undefined);
    }
    return found;
  };
}

export async function main(args: string[]): Promise<void> {
  let cfg: DashboardConfig;
  try {
    cfg = parseArgs(args, Deno.env.toObject());
  } catch (e) {
    console.error(`dashboard: ${(e as Error).message}`);
    Deno.exit(2);
  }
  const log = (m: string) => console.error(`dashboard: ${m}`);
  const abort = new AbortController();
  for (const sig of ["SIGTERM", "SIGINT"] as const) Deno.addSignalListener(sig, () => abort.abort());
  const kube = new Kube(loadKubeConfig(cfg.kubeconfig));
  const assets = await loadAssets();
  const handler = dashboardHandler({
    assets,
    enforcedHost: cfg.enforcedHost,
    log,
    api: apiRoutes({ kube, prometheus: lazyPrometheus(kube, cfg.prometheusUrl), now: () => Date.now(), log }),
  });
  const server = Deno.serve({
    hostname: cfg.hostname,
    port: cfg.port,
    signal: abort.signal,
    onListen: () => {},
  }, handler);
  const admin = serveAdmin({
    hostname: cfg.adminHostname,
    port: cfg.adminPort,
    registry: new Registry(),
    signal: abort.signal,
    readiness: [],
  });
  log(
    `web on ${cfg.hostname}:${cfg.port} (${assets.size} asset files), admin on ${cfg.adminHostname}:${admin.addr.port}`,
  );
  await Promise.all([server.finished, admin.finished]);
}
