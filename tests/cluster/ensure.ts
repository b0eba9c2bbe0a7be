// Entry point for the test runner (tests/run.ts): a kubeconfig of a running local cluster, started when needed.

import { isRunning, unavailableReason, up } from "./cluster.ts";
import { ADMIN_KUBECONFIG } from "./config.ts";
import { ensureFirstJump } from "./host.ts";

/** Whether the local cluster is up: every component runs and the API server answers ready. */
export async function isClusterRunning(): Promise<boolean> {
  return await isRunning();
}

/**
 * Returns the admin kubeconfig of the local cluster, starting it if it is not running (idempotent), or the
 * reason this machine cannot run it. A start that fails throws, naming the component and its log file.
 */
export async function ensureCluster(
  opts: { log: (s: string) => void },
): Promise<{ kubeconfig: string } | { unavailable: string }> {
  const reason = unavailableReason();
  if (reason) return { unavailable: reason };
  if (await isRunning()) {
    // A kube-proxy restart may have put its jumps in front of the isolation chain.
    await ensureFirstJump();
    return { kubeconfig: ADMIN_KUBECONFIG };
  }
  const r = await up(opts.log);
  return { kubeconfig: r.kubeconfig };
}
