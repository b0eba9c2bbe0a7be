/**
 * The objects of the metrics store for one deploy: with the embedded store, manifests/metrics/*.yaml rendered
 * as the control plane is (the injector's proxy, the weft image for the discovery sidecar) plus the Prometheus
 * image and its rendered configuration; without it, the same objects to delete. ConfigMap weft-metrics always.
 */
import type { Manifest } from "../kinds.ts";
import { loadDir, NAMESPACE, renderControlPlane, type RenderParams } from "../render.ts";
import { DEFAULT_CONFIG_PARAMS, prometheusConfigMap, prometheusConfigYaml } from "./config.ts";
import { metricsConfigMap, type MetricsStore } from "./store.ts";
import { guardedPortObjects, PROMETHEUS_PORT } from "../port_policy.ts";

const HERE = new URL(".", import.meta.url).pathname;
export const METRICS_DIR = HERE.replace(/\/$/, "");
/** The Prometheus image reference the YAML names; deploy substitutes the loaded one. */
export const MANIFEST_PROMETHEUS_IMAGE = "localhost/prometheus:weft";
/** On the pod template: a new configuration restarts Prometheus, which reads it only at start. */
export const CONFIG_HASH_ANNOTATION = "weft.io/prometheus-config-hash";
export const PROMETHEUS_DIGEST_ANNOTATION = "weft.io/prometheus-image-digest";

export interface StoreRenderParams extends RenderParams {
  prometheusImage: string;
  prometheusImageDigest?: string;
}

async function sha256(text: string): Promise<string> {
  const d = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return Array.from(new Uint8Array(d), (b) => b.toString(16).padStart(2, "0")).join("").slice(0, 16);
}

interface Template {
  metadata?: { annotations?: Record<string, string> };
  spec: { containers: { image?: string; imagePullPolicy?: string }[] };
}

export async function renderStore(
  store: MetricsStore,
  p: StoreRenderParams,
): Promise<{ apply: Manifest[]; remove: Manifest[] }> {
  const params = { ...DEFAULT_CONFIG_PARAMS, controlPlaneNamespace: NAMESPACE };
  // Port 9090 answers only the API server's service proxy and the dashboard (manifests/port_policy.ts).
  const docs = [
    ...await loadDir(METRICS_DIR),
    prometheusConfigMap(params),
    ...guardedPortObjects(NAMESPACE, PROMETHEUS_PORT),
  ];
  if (store.mode !== "embedded") return { apply: [metricsConfigMap(store)], remove: docs };
  const rendered = await renderControlPlane(docs, p);
  const configHash = await sha256(prometheusConfigYaml(params));
  for (const m of rendered) {
    if (m.kind !== "Deployment") continue;
    const tpl = (m.spec as { template: Template }).template;
    for (const c of tpl.spec.containers) {
      if (c.image !== MANIFEST_PROMETHEUS_IMAGE) continue;
      c.image = p.prometheusImage;
      c.imagePullPolicy = p.imagePullPolicy;
    }
    tpl.metadata ??= {};
    tpl.metadata.annotations = {
      ...tpl.metadata.annotations,
      [CONFIG_HASH_ANNOTATION]: configHash,
      // (renderControlPlane's weft image digest rolls the pod for the discovery sidecar's sake.)
      ...(p.prometheusImageDigest ? { [PROMETHEUS_DIGEST_ANNOTATION]: p.prometheusImageDigest } : {}),
    };
  }
  return { apply: [...rendered, metricsConfigMap(store)], remove: [] };
}
