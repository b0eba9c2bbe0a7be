/**
 * The link's health: `GET http://<gateway>:<probe port><probe path>` every probe period, each with
 * a timeout, recorded as `gateway_alive` (0/1), `gateway_probe_latency_ms` and failure counts.
 * The gateway is believed alive until the first probe says otherwise, as Linkerd does, so a
 * service mirror starting up does not mark a healthy link down.
 */
import type { Link } from "./link.ts";
import type { ServiceMirrorMetrics } from "./metrics.ts";

export interface ProbeOptions {
  link: () => Link;
  metrics: ServiceMirrorMetrics;
  /** The gateway's IPs (resolved from the Link's gatewayAddress). */
  gatewayIps: (address: string) => Promise<string[]>;
  log: (message: string) => void;
  fetch?: typeof fetch;
  now?: () => number;
  /** Called when the gateway goes from alive to dead or back. */
  onChange?: (alive: boolean) => void;
}

export function probeTimeoutMs(periodMs: number): number {
  return Math.max(1000, Math.min(periodMs, 10_000));
}

function hostPort(ip: string, port: number): string {
  return ip.includes(":") ? `[${ip}]:${port}` : `${ip}:${port}`;
}

export class GatewayProber {
  readonly #o: ProbeOptions;
  #alive = true;
  #lastError = "";

  constructor(opts: ProbeOptions) {
    this.#o = opts;
  }

  get alive(): boolean {
    return this.#alive;
  }

  /** One probe: true when the gateway answered 2xx within the timeout. */
  async probeOnce(signal?: AbortSignal): Promise<boolean> {
    const link = this.#o.link();
    const target = link.targetClusterName;
    const m = this.#o.metrics;
    const now = this.#o.now ?? performance.now.bind(performance);
    m.probes.inc({ target_cluster_name: target });
    const start = now();
    let error = "";
    try {
      const [ip] = await this.#o.gatewayIps(link.gatewayAddress);
      const url = `http://${hostPort(ip, link.probeSpec.port)}${link.probeSpec.path}`;
      const timeout = AbortSignal.timeout(probeTimeoutMs(link.probeSpec.periodMs));
      const res = await (this.#o.fetch ?? fetch)(url, {
        signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
      });
      await res.body?.cancel();
      if (res.status < 200 || res.status > 299) error = `${url}: HTTP ${res.status}`;
    } catch (e) {
      error = e instanceof Error ? `${e.name}: ${e.message}` : String(e);
    }
    if (signal?.aborted) return this.#alive;
    const ok = error === "";
    if (ok) m.probeLatency.observe({ target_cluster_name: target }, now() - start);
    else m.probeFailures.inc({ target_cluster_name: target });
    m.gatewayAlive.set({ target_cluster_name: target }, ok ? 1 : 0);
    if (ok !== this.#alive || (!ok && error !== this.#lastError)) {
      this.#o.log(ok ? `gateway of ${target} is alive` : `gateway of ${target} probe failed: ${error}`);
    }
    const changed = ok !== this.#alive;
    this.#alive = ok;
    this.#lastError = error;
    if (changed) this.#o.onChange?.(ok);
    return ok;
  }

  async run(signal: AbortSignal): Promise<void> {
    this.#o.metrics.gatewayAlive.set({ target_cluster_name: this.#o.link().targetClusterName }, 1);
    while (!signal.aborted) {
      await this.probeOnce(signal);
      await new Promise<void>((r) => {
        const t = setTimeout(r, this.#o.link().probeSpec.periodMs);
        signal.addEventListener("abort", () => {
          clearTimeout(t);
          r();
        }, { once: true });
      });
    }
  }
}
