/**
 * kubectl bound to one cluster's kubeconfig, for the tests that drive two clusters at once (multicluster). The
 * single-cluster helpers in kube.ts read KUBECONFIG; these take the kubeconfig per call site instead.
 */
import { exec } from "../../lib/exec.ts";
import { kubectlBinary } from "../../lib/kubectl_binary.ts";
import { BIN_CACHE } from "../../cluster/config.ts";
import type { Json } from "./kube.ts";
import { waitFor } from "./wait.ts";

export class ClusterCtl {
  constructor(readonly name: string, readonly kubeconfig: string) {}

  /** Never throws on a non-zero exit; the result says it. */
  async run(args: string[], opts: { stdin?: string; timeoutMs?: number } = {}) {
    const timeoutMs = opts.timeoutMs ?? 60_000;
    return await exec(
      await kubectlBinary(BIN_CACHE),
      ["--kubeconfig", this.kubeconfig, `--request-timeout=${Math.ceil(timeoutMs / 1000)}s`, ...args],
      { stdin: opts.stdin, signal: AbortSignal.timeout(timeoutMs + 5_000) },
    );
  }

  async kc(args: string[], opts: { stdin?: string; timeoutMs?: number } = {}): Promise<string> {
    const r = await this.run(args, opts);
    if (r.code !== 0) {
      throw new Error(`[${this.name}] kubectl ${args.join(" ")} failed: ${(r.stderr || r.stdout).trim()}`);
    }
    return r.stdout;
  }

  async json(args: string[]): Promise<Json> {
    return JSON.parse(await this.kc([...args, "-o", "json"]));
  }

  async apply(ns: string, manifest: string): Promise<void> {
    await this.kc(["-n", ns, "apply", "--server-side", "--force-conflicts", "-f", "-"], { stdin: manifest });
  }

  /** Creates namespace `ns` (meshed when `inject`) and waits for its default ServiceAccount. */
  async namespace(ns: string, inject: boolean): Promise<void> {
    await this.kc(["apply", "-f", "-"], {
      stdin: JSON.stringify({
        apiVersion: "v1",
        kind: "Namespace",
        metadata: {
          name: ns,
          labels: { "weft.io/e2e": "true" },
          annotations: inject ? { "linkerd.io/inject": "enabled" } : {},
        },
      }),
    });
    await waitFor(
      `[${this.name}] ServiceAccount default in ${ns}`,
      async () => (await this.run(["-n", ns, "get", "serviceaccount", "default"])).code === 0,
      { timeoutMs: 30_000 },
    );
  }

  /** Running, not terminating pods matching `selector`, once at least `n` of them are Ready. */
  async readyPods(ns: string, selector: string, n = 1, timeoutMs = 180_000): Promise<Json[]> {
    let ready: Json[] = [];
    await waitFor(`[${this.name}] ${n} ready pod(s) ${selector} in ${ns}`, async () => {
      const items = (await this.json(["-n", ns, "get", "pods", "-l", selector])).items as Json[];
      ready = items.filter((p) =>
        !p.metadata.deletionTimestamp &&
        (p.status?.conditions ?? []).some((c: Json) => c.type === "Ready" && c.status === "True")
      );
      return ready.length >= n;
    }, { timeoutMs });
    return ready;
  }
}
