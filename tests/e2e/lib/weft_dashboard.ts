/**
 * `weft dashboard --port 0` as a user runs it: the CLI port-forwards a free loopback port to the Ready dashboard
 * pod and prints the URL; the browser then talks plain HTTP to localhost. Ended with SIGINT (the user's Ctrl-C).
 */
import { KUBECONFIG } from "./kube.ts";

const CLI = new URL("../../../cli/main.ts", import.meta.url).pathname;

export interface DashboardProcess {
  /** http://localhost:PORT (no path) */
  url: string;
  /** Idempotent: Ctrl-C, then SIGKILL after 5 s; waits for the CLI to exit. */
  close(): Promise<void>;
  /** What the CLI wrote to stderr (its forward's failures are printed at exit), once it has exited. */
  stderr(): Promise<string>;
}

export async function startWeftDashboard(
  opts: { signal?: AbortSignal; timeoutMs?: number } = {},
): Promise<DashboardProcess> {
  if (!KUBECONFIG) throw new Error("KUBECONFIG is not set: the cluster tests run through `deno task test`");
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", CLI, "dashboard", "--port", "0", "--kubeconfig", KUBECONFIG],
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const stderr = new Response(child.stderr).text();
  let closed: Promise<void> | undefined;
  const close = () => {
    closed ??= (async () => {
      opts.signal?.removeEventListener("abort", onAbort);
      const kill = setTimeout(() => {
        try {
          child.kill("SIGKILL");
        } catch { /* ended */ }
      }, 5_000);
      try {
        child.kill("SIGINT");
      } catch { /* already ended */ }
      await child.status;
      clearTimeout(kill);
    })();
    return closed;
  };
  const onAbort = () => void close();
  opts.signal?.addEventListener("abort", onAbort, { once: true });

  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  const timeoutMs = opts.timeoutMs ?? 30_000;
  const timer = setTimeout(() => void close(), timeoutMs);
  let seen = "";
  try {
    while (true) {
      const { value, done } = await reader.read();
      if (done) break;
      seen += value;
      const m = seen.match(/(http:\/\/localhost:\d+)\/overview\n/);
      if (m) {
        // Keep draining stdout so the CLI never blocks on a full pipe.
        (async () => {
          try {
            while (!(await reader.read()).done) { /* discard */ }
          } catch { /* closed */ }
        })();
        return { url: m[1], close, stderr: () => stderr };
      }
    }
  } finally {
    clearTimeout(timer);
  }
  await close();
  throw new Error(
    `weft dashboard printed no URL within ${timeoutMs} ms: ${(await stderr).trim() || seen.trim()}`,
  );
}
