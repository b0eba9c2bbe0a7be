/**
 * `deno run -A control/main.ts injector [flags]`: the proxy injector (mutating admission webhook).
 * Reads its flags and environment here only (see INJECTOR_USAGE in flags.ts), resolves the
 * config (trust anchors from a file, sidecar mode from the API server's version unless a flag
 * fixes it) and runs server.ts with the Kubernetes-backed parts.
 */
import { CoreV1Api, type CoreV1Event, type KubeConfig, VersionApi } from "@kubernetes/client-node";
import { Registry } from "prom-client";
import {
  Informer,
  KubeApiSource,
  kubeLeaderElector,
  loadKubeConfig,
  metadataOnly,
  Resources,
  stripManagedFields,
} from "../k8s/mod.ts";
import { LeaderLeases } from "../../proto/control_plane.ts";
import { EventRecorder } from "./events.ts";
import { FlagError, type InjectorOptions, parseInjectorArgs } from "./flags.ts";
import type { NamespaceObject } from "./namespace_cache.ts";
import { supportsNativeSidecars } from "./native_sidecar.ts";
import { startInjector } from "./server.ts";
import { readTrustAnchors, TrustAnchorsError } from "./trust_anchors.ts";
import { TrustRootsCopier } from "./trust_roots_copy.ts";
import { KubeTrustRootsCopyApi } from "./trust_roots_copy_client.ts";
import { CertificateError } from "../webhook/https_server.ts";

const VERSION_ATTEMPTS = 6;

function log(line: string): void {
  console.error(`injector: ${line}`);
}

/** The API server's version decides the sidecar mode; a few retries ride out a slow API server. */
export async function detectNativeSidecars(kc: KubeConfig, signal: AbortSignal): Promise<boolean> {
  const api = kc.makeApiClient(VersionApi);
  let delay = 500;
  for (let attempt = 1;; attempt++) {
    try {
      const v = await api.getCode();
      const native = supportsNativeSidecars(v);
      log(
        `API server ${v.gitVersion}: ${
          native ? "native sidecars" : "proxy as the first container (classic)"
        }`,
      );
      return native;
    } catch (e) {
      if (attempt >= VERSION_ATTEMPTS || signal.aborted) {
        throw new Error(
          `cannot read the API server version (${
            (e as Error).message
          }); set --native-sidecar=true|false to skip`,
        );
      }
      await new Promise((r) => setTimeout(r, delay));
      delay *= 2;
    }
  }
}

export async function run(opts: InjectorOptions, signal: AbortSignal, podName?: string): Promise<void> {
  const anchors = await readTrustAnchors(opts.trustAnchorsFile);
  const kc = loadKubeConfig(opts.kubeconfig);
  const nativeSidecars = opts.nativeSidecar === "auto"
    ? await detectNativeSidecars(kc, signal)
    : opts.nativeSidecar;
  const registry = new Registry();
  const core = kc.makeApiClient(CoreV1Api);
  const events = new EventRecorder(
    (namespace, body) => core.createNamespacedEvent({ namespace, body: body as unknown as CoreV1Event }),
    { log, registry, instance: Deno.hostname() },
  );
  const namespaces = new Informer<NamespaceObject>({
    name: "namespaces",
    // Only annotations are read, so the cache holds metadata only.
    source: new KubeApiSource(kc, metadataOnly(Resources.namespaces)),
    transform: stripManagedFields,
    registry,
    log,
  });
  // Of the replicas only the copier Lease's holder patches the copies; every replica still creates a
  // missing copy at admission (issue 19, docs/ha.md).
  const elector = kubeLeaderElector({
    kc,
    namespace: opts.base.controlPlaneNamespace,
    lease: LeaderLeases.injectorTrustRootsCopier,
    identity: podName || Deno.hostname(),
    registry,
    log,
  });
  const copier = new TrustRootsCopier(new KubeTrustRootsCopyApi(kc, opts.base.controlPlaneNamespace), {
    controlPlaneNamespace: opts.base.controlPlaneNamespace,
    log,
    canWrite: () => elector.isLeader(),
  });
  elector.onChange((leading) => leading && copier.wake());
  const electing = elector.start(signal);
  const server = await startInjector({
    webhook: opts.webhook,
    admin: opts.admin,
    config: { ...opts.base, trustAnchorsPem: anchors.pem, nativeSidecars },
    namespaces,
    namespaceWaitMs: opts.namespaceWaitMs,
    trustAnchors: { file: opts.trustAnchorsFile, current: anchors, reloadIntervalMs: 10_000 },
    trustRootsCopy: { copier, intervalMs: 5_000 },
    events,
    registry,
    signal,
    log,
  });
  await server.finished;
  await electing;
}

export async function main(args: string[]): Promise<void> {
  let opts: InjectorOptions;
  try {
    opts = parseInjectorArgs(args, Deno.env.toObject());
  } catch (e) {
    if (!(e instanceof FlagError)) throw e;
    console.error(`injector: ${e.message}`);
    Deno.exit(2);
  }
  const ctl = new AbortController();
  for (const sig of ["SIGTERM", "SIGINT"] as const) Deno.addSignalListener(sig, () => ctl.abort());
  try {
    await run(opts, ctl.signal, Deno.env.get("POD_NAME"));
  } catch (e) {
    const known = e instanceof TrustAnchorsError || e instanceof CertificateError;
    console.error(`injector: cannot start: ${known ? (e as Error).message : (e as Error).stack ?? e}`);
    Deno.exit(1);
  }
}
