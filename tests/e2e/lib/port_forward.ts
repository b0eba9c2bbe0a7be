/**
 * `kubectl port-forward` to a Service on a free loopback port, as `weft dashboard` reaches the dashboard: the
 * browser then talks plain HTTP to 127.0.0.1 and the API server tunnels it to a pod of the Service.
 */
import { kubectlBinary } from "../../lib/kubectl_binary.ts";
import { BIN_CACHE } from "../../cluster/config.ts";
import { KUBECONFIG } from "./kube.ts";

export interface PortForward {
  /** http://127.0.0.1:PORT */
  url: string;
  /** Idempotent: ends kubectl and waits for it. */
  close(): Promise<void>;
}

export async function portForward(
  ns: string,
  service: string,
  port: number,
  opts: { signal?: AbortSignal; timeoutMs?: number } = {},
): Promise<PortForward> {
  if (!KUBECONFIG) throw new Error("KUBECONFIG is not set: the cluster tests run through `deno task test`");
  const child = new Deno.Command(await kubectlBinary(BIN_CACHE), {
    args: [
      "--kubeconfig",
      KUBECONFIG,
      "port-forward",
      "-n",
      ns,
      "--address",
      "127.0.0.1",
      `svc/${service}`,
      `:${port}`,
    ],
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const stderr = new Response(child.stderr).text();
  let closed: Promise<void> | undefined;
  const close = () => {
    closed ??= (async () => {
      opts.signal?.removeEventListener("abort", onAbort);
      try {
        child.kill("SIGTERM");
      } catch { /* already ended */ }
      await child.status;
    })();
    return closed;
  };
  const onAbort = () => void close();
  opts.signal?.addEventListener("abort", onAbort, { once: true });

  // kubectl prints "Forwarding from 127.0.0.1:PORT -> TARGET" once it listens.
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  const timeoutMs = opts.timeoutMs ?? 30_000;
  const timer = setTimeout(() => void close(), timeoutMs);
  let seen = "";
  try {
    while (true) {
      const { value, done } = await reader.read();
      if (done) break;
      seen += value;
      const m = seen.match(/Forwarding from 127\.0\.0\.1:(\d+)/);
      if (m) {
        // Keep draining stdout (kubectl logs each connection) so its pipe never fills.
        (async () => {
          try {
            while (!(await reader.read()).done) { /* discard */ }
          } catch { /* closed */ }
        })();
        return { url: `http://127.0.0.1:${m[1]}`, close };
      }
    }
  } finally {
    clearTimeout(timer);
  }
  await close();
  throw new Error(
    `kubectl port-forward -n ${ns} svc/${service} :${port} did not start within ${timeoutMs} ms: ${
      (await stderr).trim() || seen.trim()
    }`,
  );
}
