/** Which kubectl the cluster harness and the end-to-end tests run. */
import { join } from "node:path";

let found: string | undefined;

/**
 * WEFT_KUBECTL, else the kubectl built with the local cluster under `cacheDir` (same release as the
 * API server), else PATH's. Looked up once per process.
 */
export async function kubectlBinary(cacheDir: string): Promise<string> {
  if (found) return found;
  const fromEnv = Deno.env.get("WEFT_KUBECTL");
  if (fromEnv) return (found = fromEnv);
  try {
    for await (const e of Deno.readDir(cacheDir)) {
      if (!e.name.startsWith("k8s-")) continue;
      const p = join(cacheDir, e.name, "kubectl");
      try {
        await Deno.lstat(p);
        return (found = p);
      } catch { /* not in this release folder */ }
    }
  } catch { /* no local cluster cache */ }
  return (found = "kubectl");
}
