/**
 * `control/main.ts validator [flags]`: the HTTPS validating webhooks, one server for both paths.
 *
 *   --addr=0.0.0.0:9443                 webhooks: /serviceprofile (linkerd.io ServiceProfile),
 *                                       /policy (policy.linkerd.io and Gateway API routes)
 *   --admin-addr=0.0.0.0:9997           /live /ready /metrics
 *   --tls-dir=/var/run/weft/tls         tls.crt + tls.key (reloaded when they change);
 *   --tls-cert=PATH --tls-key=PATH      or each file on its own
 *   --cluster-domain=cluster.local      (env CLUSTER_DOMAIN) for ServiceProfile names
 *   --kubeconfig=PATH                   (env KUBECONFIG; in-cluster config when unset)
 *
 * Servers are watched (list/watch servers.policy.linkerd.io) for the duplicate-port check; the
 * validator is ready once that cache has synced.
 */
import { Registry } from "prom-client";
import { DEFAULT_CLUSTER_DOMAIN } from "../../proto/control_plane.ts";
import { Ports } from "../../proto/ports.ts";
import { serveAdmin } from "../admin/admin_server.ts";
import { flag, type FlagSpec, parseFlags } from "../flags/flags.ts";
import { splitHostPort } from "../flags/host_port.ts";
import { Informer, KubeApiSource, loadKubeConfig, Resources, stripManagedFields } from "../k8s/mod.ts";
import type { Obj, ServerSpec } from "../policy/resources.ts";
import { CertificateError } from "../webhook/https_server.ts";
import type { AdmissionHandler } from "./admission.ts";
import { policyAdmissionHandler } from "./policy_validator.ts";
import { serviceProfileAdmissionHandler } from "./serviceprofile_validator.ts";
import { serveValidator } from "./webhook_server.ts";

export interface ValidatorConfig {
  hostname: string;
  port: number;
  adminHostname: string;
  adminPort: number;
  certFile: string;
  keyFile: string;
  clusterDomain: string;
  kubeconfig: string | undefined;
}

const FLAGS: readonly FlagSpec[] = [
  flag("addr"),
  flag("admin-addr"),
  flag("tls-dir"),
  flag("tls-cert"),
  flag("tls-key"),
  flag("cluster-domain", { env: "CLUSTER_DOMAIN" }),
  flag("kubeconfig", { env: "KUBECONFIG" }),
];

export function parseArgs(args: string[], env: Record<string, string | undefined>): ValidatorConfig {
  const { flags } = parseFlags(args, FLAGS, { env });
  const addr = splitHostPort(flags.get("addr") ?? "0.0.0.0:9443", "--addr");
  const admin = splitHostPort(flags.get("admin-addr") ?? `0.0.0.0:${Ports.validatorAdmin}`, "--admin-addr");
  const dir = (flags.get("tls-dir") ?? "/var/run/weft/tls").replace(/\/+$/, "");
  const clusterDomain = flags.get("cluster-domain") ?? DEFAULT_CLUSTER_DOMAIN;
  if (!/^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/.test(clusterDomain)) {
    throw new Error(`--cluster-domain: "${clusterDomain}" is not a DNS name`);
  }
  return {
    hostname: addr.host,
    port: addr.port,
    adminHostname: admin.host,
    adminPort: admin.port,
    certFile: flags.get("tls-cert") ?? `${dir}/tls.crt`,
    keyFile: flags.get("tls-key") ?? `${dir}/tls.key`,
    clusterDomain,
    kubeconfig: flags.get("kubeconfig"),
  };
}

export function validatorHandlers(
  cfg: Pick<ValidatorConfig, "clusterDomain">,
  servers: (ns: string) => Obj<ServerSpec>[],
): Record<string, AdmissionHandler> {
  return {
    "/serviceprofile": serviceProfileAdmissionHandler({ clusterDomain: cfg.clusterDomain }),
    "/policy": policyAdmissionHandler({ servers }),
  };
}

export async function main(args: string[]): Promise<void> {
  let cfg: ValidatorConfig;
  try {
    cfg = parseArgs(args, Deno.env.toObject());
  } catch (e) {
    console.error(`validator: ${(e as Error).message}`);
    Deno.exit(2);
  }
  const log = (m: string) => console.error(`validator: ${m}`);
  const abort = new AbortController();
  for (const sig of ["SIGTERM", "SIGINT"] as const) Deno.addSignalListener(sig, () => abort.abort());
  const registry = new Registry();
  const servers = new Informer<Obj<ServerSpec> & { metadata: { name: string } }>({
    name: "validator_servers",
    source: new KubeApiSource(loadKubeConfig(cfg.kubeconfig), Resources.servers),
    transform: stripManagedFields,
    registry,
    log,
  });
  const informerDone = servers.start(abort.signal);
  let server;
  try {
    server = await serveValidator({
      hostname: cfg.hostname,
      port: cfg.port,
      certFile: cfg.certFile,
      keyFile: cfg.keyFile,
      handlers: validatorHandlers(cfg, (ns) => servers.list().filter((s) => s.metadata.namespace === ns)),
      signal: abort.signal,
      registry,
      log,
    });
  } catch (e) {
    if (!(e instanceof CertificateError)) throw e;
    console.error(`validator: cannot start: ${e.message}`);
    Deno.exit(1);
  }
  const admin = serveAdmin({
    hostname: cfg.adminHostname,
    port: cfg.adminPort,
    registry,
    signal: abort.signal,
    readiness: [{ name: "servers", check: () => servers.isSynced() ? undefined : "Server cache not synced" }],
  });
  log(
    `webhooks /serviceprofile and /policy on ${cfg.hostname}:${server.port} (certificate until ${server.certificateExpiry().toISOString()}), admin on ${cfg.adminHostname}:${admin.addr.port}`,
  );
  await Promise.all([server.closed, admin.finished, informerDone]);
}
