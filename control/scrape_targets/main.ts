/**
 * `weft-control scrape_targets [--listen=127.0.0.1:9992] [--kubeconfig=PATH]`: the discovery sidecar of the
 * embedded Prometheus. Watches every pod (list+watch informer) and answers `GET /targets` with the
 * `http_sd_configs` JSON built by targets.ts; `/live` and `/ready` (ready once the first list is in).
 * It listens on loopback by default: the target list names every pod and its labels, which only the
 * Prometheus container next door needs.
 */
import { Registry } from "prom-client";
import { Informer, KubeApiSource, loadKubeConfig, Resources, stripManagedFields } from "../k8s/mod.ts";
import type { KubeObject } from "../k8s/mod.ts";
import { allTargets, type PodLike, slimPod } from "./targets.ts";

type Pod = KubeObject & PodLike;

function parseListen(v: string): { hostname: string; port: number } {
  const m = /^(.*):(\d+)$/.exec(v);
  if (!m || Number(m[2]) > 65535) throw new Error(`--listen=${v}: expected host:port`);
  return { hostname: m[1].replace(/^\[|\]$/g, ""), port: Number(m[2]) };
}

export async function main(args: string[]): Promise<void> {
  let listen = "127.0.0.1:9992";
  let kubeconfig: string | undefined;
  for (const a of args) {
    const m = /^--([a-z-]+)=(.*)$/.exec(a);
    if (m?.[1] === "listen") listen = m[2];
    else if (m?.[1] === "kubeconfig") kubeconfig = m[2];
    else {
      console.error(`scrape_targets: unknown argument ${a} (--listen=HOST:PORT, --kubeconfig=PATH)`);
      Deno.exit(2);
    }
  }
  const addr = parseListen(listen);
  const registry = new Registry();
  const pods = new Informer<Pod>({
    name: "pods",
    source: new KubeApiSource<Pod>(loadKubeConfig(kubeconfig), Resources.pods),
    transform: (p) => slimPod(stripManagedFields(p)),
    registry,
    log: (s) => console.log(`scrape_targets: ${s}`),
  });
  const stop = new AbortController();
  for (const sig of ["SIGTERM", "SIGINT"] as const) Deno.addSignalListener(sig, () => stop.abort());
  const running = pods.start(stop.signal);
  const server = Deno.serve({
    ...addr,
    signal: stop.signal,
    onListen: (a) => console.log(`scrape_targets: serving /targets on ${a.hostname}:${a.port}`),
  }, async (req) => {
    switch (new URL(req.url).pathname) {
      case "/targets":
        if (!pods.isSynced()) return new Response("pods not listed yet\n", { status: 503 });
        return Response.json(allTargets(pods.values()));
      case "/live":
        return new Response("live\n");
      case "/ready":
        return pods.isSynced() ? new Response("ready\n") : new Response("not ready\n", { status: 503 });
      case "/metrics":
        return new Response(await registry.metrics(), { headers: { "content-type": registry.contentType } });
      default:
        return new Response("not found\n", { status: 404 });
    }
  });
  await Promise.all([running, server.finished]);
}
