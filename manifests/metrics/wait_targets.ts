/**
 * After the embedded Prometheus is Ready, deploy waits until it has discovered and scraped the proxies: a ready
 * Prometheus with no targets yet (discovery refreshes every 10 s) would make the next `mesh:check` fail and the
 * CLI's first queries come back empty.
 */
import type { Kube } from "../kube.ts";
import type { Progress } from "../progress.ts";
import { PROMETHEUS_API_PROXY_PATH } from "./store.ts";

interface Targets {
  data?: { activeTargets?: { labels: Record<string, string>; health: string }[] };
}

/**
 * Resolves with "<up>/<all> proxy targets up" once every proxy target was scraped and one at least is up;
 * throws at the deadline.
 */
export async function waitForProxyTargets(kube: Kube, deadline: number, progress: Progress): Promise<string> {
  let last = "no answer yet";
  for (;;) {
    const r = await kube.request("GET", `${PROMETHEUS_API_PROXY_PATH}/api/v1/targets`, {
      query: { state: "active" },
    }).catch((e) => ({ status: 0, text: (e as Error).message }));
    if (r.status === 200) {
      const proxies = ((JSON.parse(r.text) as Targets).data?.activeTargets ?? [])
        .filter((t) => t.labels.job === "linkerd-proxy");
      const up = proxies.filter((t) => t.health === "up").length;
      const unscraped = proxies.filter((t) => t.health === "unknown").length;
      last = `${up}/${proxies.length} proxy targets up`;
      // Every target scraped once (so mesh:check and the CLI see the whole mesh), and the scrapes work.
      if (up > 0 && unscraped === 0) return last;
    } else last = `/api/v1/targets answered ${r.status}: ${r.text.slice(0, 200)}`;
    if (Date.now() > deadline) throw new Error(`the embedded Prometheus scrapes no proxy in time: ${last}`);
    progress.status(`metrics store: waiting for the first scrapes (${last})`);
    await new Promise((res) => setTimeout(res, 1000));
  }
}
