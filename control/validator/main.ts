/**
 * `control/main.ts validator [flags]`: the HTTPS validating webhooks.
 *
 *   --addr=0.0.0.0:8443
 *   --tls-cert=/var/run/weft/tls/tls.crt --tls-key=/var/run/weft/tls/tls.key
 * KUBECONFIG selects the API server (else the in-cluster config); Servers are watched for the
 * duplicate-port check. Paths: `/policy` (policy.linkerd.io and Gateway API routes). A
 * ServiceProfile validator is added as another entry of `handlers`.
 */
import { Informer, KubeApiSource, loadKubeConfig, Resources, stripManagedFields } from "../k8s/mod.ts";
import type { Obj, ServerSpec } from "../policy/resources.ts";
import type { AdmissionHandler } from "./admission.ts";
import { policyAdmissionHandler } from "./policy_validator.ts";
import { serveWebhook } from "./webhook_server.ts";

export interface ValidatorConfig {
  hostname: string;
  port: number;
  certFile: string;
  keyFile: string;
  kubeconfig: string | undefined;
}

export function parseArgs(args: string[], kubeconfig: string | undefined): ValidatorConfig {
  const flags = new Map<string, string>();
  for (const a of args) {
    const m = /^--([a-z0-9-]+)=(.*)$/.exec(a);
    if (!m) throw new Error(`unexpected argument "${a}"; flags look like --name=value`);
    flags.set(m[1], m[2]);
  }
  const addr = flags.get("addr") ?? "0.0.0.0:8443";
  const i = addr.lastIndexOf(":");
  const port = Number(addr.slice(i + 1));
  if (i < 0 || !Number.isInteger(port) || port < 0 || port > 65535) {
    throw new Error(`--addr: "${addr}" is not <host>:<port>`);
  }
  for (const k of flags.keys()) {
    if (!["addr", "tls-cert", "tls-key"].includes(k)) throw new Error(`unknown flag --${k}`);
  }
  return {
    hostname: addr.slice(0, i),
    port,
    certFile: flags.get("tls-cert") ?? "/var/run/weft/tls/tls.crt",
    keyFile: flags.get("tls-key") ?? "/var/run/weft/tls/tls.key",
    kubeconfig,
  };
}

export async function main(args: string[]): Promise<void> {
  let cfg: ValidatorConfig;
  try {
    cfg = parseArgs(args, Deno.env.get("KUBECONFIG") || undefined);
  } catch (e) {
    console.error(`validator: ${(e as Error).message}`);
    Deno.exit(2);
  }
  const abort = new AbortController();
  for (const sig of ["SIGTERM", "SIGINT"] as const) Deno.addSignalListener(sig, () => abort.abort());
  const servers = new Informer<Obj<ServerSpec> & { metadata: { name: string } }>({
    name: "validator_servers",
    source: new KubeApiSource(loadKubeConfig(cfg.kubeconfig), Resources.servers),
    transform: stripManagedFields,
    log: (m) => console.error(`validator: ${m}`),
  });
  servers.start(abort.signal);
  const handlers: Record<string, AdmissionHandler> = {
    "/policy": policyAdmissionHandler({
      servers: (ns) => servers.list().filter((s) => s.metadata.namespace === ns),
    }),
  };
  const server = serveWebhook({
    hostname: cfg.hostname,
    port: cfg.port,
    cert: await Deno.readTextFile(cfg.certFile),
    key: await Deno.readTextFile(cfg.keyFile),
    handlers,
    signal: abort.signal,
    onListen: (a) => console.error(`validator: serving webhooks on ${a.hostname}:${a.port}`),
  });
  await server.finished;
}
