/** A CliContext that records what a command writes, for unit tests of commands. */
import type { CliContext } from "./context.ts";

export interface RecordedContext extends CliContext {
  stdout: string[];
  stderr: string[];
  abort(): void;
}

export function recordingContext(opts: Partial<CliContext> = {}): RecordedContext {
  const stdout: string[] = [];
  const stderr: string[] = [];
  const ac = new AbortController();
  return {
    env: {},
    out: (t) => {
      stdout.push(t);
      return Promise.resolve();
    },
    err: (l) => void stderr.push(l),
    status: () => {},
    stdoutIsTty: false,
    stderrIsTty: false,
    signal: ac.signal,
    readStdin: () => Promise.resolve(""),
    readFile: (p) => Deno.readTextFile(p),
    ...opts,
    stdout,
    stderr,
    abort: () => ac.abort(),
  };
}

export interface ScrapeTarget {
  /** host:port serving /metrics. */
  address: string;
  /** Target labels, as Kubernetes service discovery would attach them (namespace, pod, deployment…). */
  labels: Record<string, string>;
}

export interface RunningPrometheus {
  url: string;
  stop(): Promise<void>;
}

/** Debian's prometheus binary (apt-get install prometheus); undefined when it is not installed. */
export function prometheusBinary(): string | undefined {
  for (const p of ["/usr/bin/prometheus", "/usr/local/bin/prometheus"]) {
    try {
      if (Deno.statSync(p).isFile) return p;
    } catch { /* next */ }
  }
  return undefined;
}

/** Runs a real Prometheus on loopback scraping the targets every second, until stop(). */
export async function startPrometheus(targets: readonly ScrapeTarget[]): Promise<RunningPrometheus> {
  const bin = prometheusBinary();
  if (!bin) throw new Error("prometheus is not installed (apt-get install prometheus; .ci/debian-packages)");
  const dir = await Deno.makeTempDir({ prefix: "weft-cli-prom-" });
  const probe = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = probe.addr.port;
  probe.close();
  const config = {
    global: { scrape_interval: "1s", evaluation_interval: "1s" },
    scrape_configs: [{
      job_name: "linkerd-proxy",
      static_configs: targets.map((t) => ({ targets: [t.address], labels: t.labels })),
    }],
  };
  await Deno.writeTextFile(`${dir}/prometheus.yml`, JSON.stringify(config));
  const child = new Deno.Command(bin, {
    args: [
      `--config.file=${dir}/prometheus.yml`,
      `--storage.tsdb.path=${dir}/data`,
      `--web.listen-address=127.0.0.1:${port}`,
      "--storage.tsdb.retention.time=1h",
    ],
    stdout: "null",
    stderr: "piped",
  }).spawn();
  const log: string[] = [];
  const drain = (async () => {
    for await (const c of child.stderr.pipeThrough(new TextDecoderStream())) log.push(c);
  })();
  const url = `http://127.0.0.1:${port}`;
  const stop = async () => {
    try {
      child.kill("SIGTERM");
    } catch { /* gone */ }
    await child.status;
    await drain;
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  };
  const deadline = Date.now() + 20_000;
  for (;;) {
    try {
      const r = await fetch(`${url}/-/ready`, { signal: AbortSignal.timeout(1000) });
      await r.body?.cancel();
      if (r.ok) break;
    } catch { /* not yet */ }
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`prometheus did not become ready in 20 s:\n${log.join("").slice(-2000)}`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  return { url, stop };
}

/** Serves a registry-like `metrics()` on loopback; returns host:port and a stop function. */
export function serveMetrics(metrics: () => Promise<string>): { address: string; stop(): Promise<void> } {
  const ac = new AbortController();
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, signal: ac.signal, onListen: () => {} },
    async () => new Response(await metrics(), { headers: { "content-type": "text/plain; version=0.0.4" } }),
  );
  return {
    address: `127.0.0.1:${server.addr.port}`,
    stop: async () => {
      ac.abort();
      await server.finished;
    },
  };
}

/**
 * A kubeconfig file naming an API server nobody listens on, for commands run with `-n` and
 * `--prometheus-url` (they read the file but never reach the API server). Removed by the caller.
 */
export async function offlineKubeconfig(): Promise<string> {
  const path = await Deno.makeTempFile({ prefix: "weft-cli-kubeconfig-" });
  await Deno.writeTextFile(
    path,
    JSON.stringify({
      apiVersion: "v1",
      kind: "Config",
      clusters: [{ name: "none", cluster: { server: "https://127.0.0.1:1" } }],
      users: [{ name: "none", user: {} }],
      contexts: [{ name: "none", context: { cluster: "none", user: "none", namespace: "ctx-ns" } }],
      "current-context": "none",
    }),
  );
  return path;
}
