/**
 * Which metrics store the mesh uses, and the objects that say so. `deno task deploy` installs the embedded
 * Prometheus by default; `--prometheus=none` installs none; `--prometheus-url=URL` records the user's own.
 * Whatever the choice, ConfigMap `weft-metrics` in the control-plane namespace tells a CLI where to query:
 *
 *   mode            embedded | external | none
 *   prometheusUrl   the URL of the store (embedded: its in-cluster Service URL; external: the given URL)
 *   apiProxyPath    embedded only: the store through the API server's service proxy, which is how a CLI
 *                   outside the cluster reaches it (`<api server><apiProxyPath>/api/v1/query`)
 */
import type { Manifest } from "../kinds.ts";
import { NAMESPACE } from "../render.ts";

export type MetricsStore =
  | { mode: "embedded" }
  | { mode: "external"; url: string }
  | { mode: "none" };

export const METRICS_CONFIGMAP = "weft-metrics";
export const PROMETHEUS_SERVICE = "weft-prometheus";
export const PROMETHEUS_DEPLOYMENT = "weft-prometheus";
export const PROMETHEUS_PORT = 9090;
export const PROMETHEUS_PORT_NAME = "http";
/** The embedded store through the API server's service proxy (append `/api/v1/query` etc.). */
export const PROMETHEUS_API_PROXY_PATH =
  `/api/v1/namespaces/${NAMESPACE}/services/${PROMETHEUS_PORT_NAME}:${PROMETHEUS_SERVICE}:${PROMETHEUS_PORT}/proxy`;
export const EMBEDDED_URL = `http://${PROMETHEUS_SERVICE}.${NAMESPACE}.svc.cluster.local:${PROMETHEUS_PORT}`;

export class MetricsStoreError extends Error {
  override name = "MetricsStoreError";
}

/** From the deploy flags; bad combinations and URLs are refused with what is wrong. */
export function parseMetricsStore(prometheus: string | undefined, url: string | undefined): MetricsStore {
  if (url !== undefined) {
    if (prometheus !== undefined && prometheus !== "external") {
      throw new MetricsStoreError(
        `--prometheus-url names the user's Prometheus; it cannot go with --prometheus=${prometheus}`,
      );
    }
    let u: URL;
    try {
      u = new URL(url);
    } catch {
      throw new MetricsStoreError(
        `--prometheus-url=${url}: not a URL (e.g. http://prometheus.monitoring:9090)`,
      );
    }
    if (u.protocol !== "http:" && u.protocol !== "https:") {
      throw new MetricsStoreError(`--prometheus-url=${url}: only http and https URLs are supported`);
    }
    return { mode: "external", url: url.replace(/\/+$/, "") };
  }
  switch (prometheus ?? "embedded") {
    case "embedded":
      return { mode: "embedded" };
    case "none":
      return { mode: "none" };
    case "external":
      throw new MetricsStoreError("--prometheus=external needs --prometheus-url=URL");
    default:
      throw new MetricsStoreError(`--prometheus=${prometheus}: expected embedded or none`);
  }
}

export function metricsConfigMap(store: MetricsStore): Manifest {
  const data: Record<string, string> = { mode: store.mode };
  if (store.mode === "embedded") {
    data.prometheusUrl = EMBEDDED_URL;
    data.apiProxyPath = PROMETHEUS_API_PROXY_PATH;
  }
  if (store.mode === "external") data.prometheusUrl = store.url;
  return {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: {
      name: METRICS_CONFIGMAP,
      namespace: NAMESPACE,
      labels: { "app.kubernetes.io/part-of": "weft", "linkerd.io/control-plane-component": "prometheus" },
    },
    data,
  };
}

/** What a CLI reads back from ConfigMap weft-metrics (undefined: not deployed by a deploy that knew it). */
export function readMetricsConfigMap(data: Record<string, string> | undefined): MetricsStore | undefined {
  switch (data?.mode) {
    case "embedded":
      return { mode: "embedded" };
    case "none":
      return { mode: "none" };
    case "external":
      return data.prometheusUrl ? { mode: "external", url: data.prometheusUrl } : undefined;
    default:
      return undefined;
  }
}
