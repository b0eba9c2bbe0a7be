/**
 * `control/main.ts service_mirror --link=<name>`: the service mirror of one Link (one process per
 * link, Deployment `weft-service-mirror-<target>` in weft-multicluster). Reads flags here only, then
 * wires the API server into the controller; `--unlink` deletes the link's mirrors and exits.
 * Health of the link is reported as metrics on the admin server (no Link status is written).
 */
import type { KubeConfig } from "@kubernetes/client-node";
import { Registry } from "prom-client";
import { serveAdmin } from "../admin/admin_server.ts";
import { KubeApiSource, loadKubeConfig, Resources } from "../k8s/mod.ts";
import { apiMessage, kubeRequest } from "../k8s/raw_request.ts";
import { parseServiceMirrorConfig, type ServiceMirrorConfig } from "./config.ts";
import {
  cleanupLink,
  type ControllerOptions,
  type SecretObject,
  ServiceMirrorController,
} from "./controller.ts";
import { kubeMirrorApi } from "./kube_mirror_api.ts";
import { CREDENTIALS_SECRET_TYPE, LINK_GROUP, LINK_VERSION, type LinkObject, parseLink } from "./link.ts";
import { sessionSources } from "./link_session.ts";
import { ServiceMirrorMetrics } from "./metrics.ts";

function log(line: string): void {
  console.log(`service_mirror: ${line}`);
}

async function getObject<T>(kc: KubeConfig, path: string): Promise<T | undefined> {
  const r = await kubeRequest(kc, {
    method: "GET",
    path,
    fieldManager: "weft-service-mirror",
    timeoutMs: 30_000,
  });
  if (r.status === 404) return undefined;
  if (r.status !== 200) throw new Error(`GET ${path}: HTTP ${r.status}: ${apiMessage(r.text)}`);
  return JSON.parse(r.text) as T;
}

function linkPath(ns: string, name?: string): string {
  return `/apis/${LINK_GROUP}/${LINK_VERSION}/namespaces/${ns}/links${name ? `/${name}` : ""}`;
}

export interface RunHooks {
  onAdmin?: (addr: Deno.NetAddr) => void;
  onController?: (c: ServiceMirrorController) => void;
  gatewayIps?: ControllerOptions["gatewayIps"];
}

/** `--unlink`: every mirror object of the link goes; the Link object itself is left to its owner. */
export async function unlink(config: ServiceMirrorConfig, kc: KubeConfig): Promise<number> {
  const obj = await getObject<LinkObject>(kc, linkPath(config.namespace, config.linkName));
  const link = obj ? parseLink(obj) : parseLink({
    metadata: { name: config.linkName, namespace: config.namespace },
    spec: { targetClusterName: config.targetClusterName ?? config.linkName },
  });
  return await cleanupLink(kubeMirrorApi(kc), link, log);
}

export async function run(
  config: ServiceMirrorConfig,
  signal: AbortSignal,
  hooks: RunHooks = {},
): Promise<void> {
  const kc = loadKubeConfig(config.kubeconfig);
  if (config.unlink) {
    const n = await unlink(config, kc);
    log(`unlink ${config.linkName}: removed the mirrors of ${n} remote services`);
    return;
  }
  const registry = new Registry();
  const metrics = new ServiceMirrorMetrics(registry);
  const controller = new ServiceMirrorController({
    linkName: config.linkName,
    namespace: config.namespace,
    api: kubeMirrorApi(kc),
    linkSource: new KubeApiSource<LinkObject>(kc, {
      group: LINK_GROUP,
      version: LINK_VERSION,
      plural: "links",
      namespace: config.namespace,
      fieldSelector: `metadata.name=${config.linkName}`,
    }),
    secretSource: new KubeApiSource<SecretObject>(kc, {
      ...Resources.secrets,
      namespace: config.namespace,
      fieldSelector: `type=${CREDENTIALS_SECRET_TYPE}`,
    }),
    sources: (link, remoteKc) => sessionSources(link, kc, remoteKc),
    metrics,
    log,
    resyncPeriodMs: config.resyncPeriodMs,
    gatewayIps: hooks.gatewayIps,
  });
  hooks.onController?.(controller);
  const admin = serveAdmin({
    hostname: config.adminHost,
    port: config.adminPort,
    registry,
    readiness: [{ name: "link", check: () => controller.ready() }],
    signal,
    onListen: hooks.onAdmin,
  });
  log(`link ${config.namespace}/${config.linkName}; admin on ${admin.addr.hostname}:${admin.addr.port}`);
  await Promise.all([controller.run(signal), admin.finished]);
}

export async function main(args: string[]): Promise<void> {
  let config: ServiceMirrorConfig;
  try {
    config = parseServiceMirrorConfig(args, Deno.env.toObject());
  } catch (e) {
    console.error(`service_mirror: ${e instanceof Error ? e.message : e}`);
    Deno.exit(2);
  }
  const stop = new AbortController();
  for (const sig of ["SIGTERM", "SIGINT"] as const) Deno.addSignalListener(sig, () => stop.abort());
  try {
    await run(config, stop.signal);
  } catch (e) {
    console.error(`service_mirror: ${e instanceof Error ? e.message : e}`);
    Deno.exit(1);
  }
}
