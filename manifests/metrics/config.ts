/**
 * The embedded Prometheus' configuration (prometheus.yml), rendered into ConfigMap weft-prometheus-config.
 * Jobs, interval and relabelling follow Linkerd's viz Prometheus, so its queries, dashboards and the labels
 * on proxy series (`namespace`, `pod`, `deployment`, `control_plane_ns`, ...) are the same:
 *
 *   - `prometheus`          itself, on localhost:9090;
 *   - `linkerd-controller`  the control plane's admin ports (`admin-http`, `<x>-admin`, never `linkerd-admin`)
 *                           in the control-plane namespace, labelled `component` = container name;
 *   - `linkerd-proxy`       every proxy's admin port (container `linkerd-proxy`, port `linkerd-admin`) whose pod
 *                           belongs to this control plane (label linkerd.io/control-plane-ns), labelled
 *                           `namespace`, `pod`, the workload (`deployment`, `statefulset`, `daemonset`,
 *                           `replicaset`, `k8s_job`, `cronjob` from linkerd.io/proxy-<kind>) and every other pod
 *                           label with `linkerd.io/` stripped.
 *
 * Targets come from the scrape_targets sidecar over http_sd (Debian's Prometheus has no Kubernetes discovery),
 * labelled with the `__meta_kubernetes_*` names Kubernetes discovery uses, so the rules below are Linkerd's.
 */
import { stringify } from "yaml";
import type { Manifest } from "../kinds.ts";

export const PROMETHEUS_CONFIGMAP = "weft-prometheus-config";
export const PROMETHEUS_CONFIG_KEY = "prometheus.yml";

export interface PrometheusConfigParams {
  /** The control plane's namespace: proxies are kept only if their pod names it; controllers are read there. */
  controlPlaneNamespace: string;
  /** Where the sidecar serves targets (http_sd URL). */
  targetsUrl: string;
  /** Scrape and evaluation interval, seconds (Linkerd: 10). */
  intervalSeconds: number;
  proxyContainerName: string;
  proxyAdminPortName: string;
}

export const DEFAULT_CONFIG_PARAMS: Omit<PrometheusConfigParams, "controlPlaneNamespace"> = {
  targetsUrl: "http://127.0.0.1:9992/targets",
  intervalSeconds: 10,
  proxyContainerName: "linkerd-proxy",
  proxyAdminPortName: "linkerd-admin",
};

export interface RelabelRule {
  source_labels?: string[];
  separator?: string;
  regex?: string;
  target_label?: string;
  replacement?: string;
  action?: "replace" | "keep" | "drop" | "labelmap" | "labeldrop" | "labelkeep";
}

export interface ScrapeJob {
  job_name: string;
  static_configs?: { targets: string[] }[];
  http_sd_configs?: { url: string; refresh_interval: string }[];
  relabel_configs?: RelabelRule[];
}

export interface PrometheusConfig {
  global: { scrape_interval: string; scrape_timeout: string; evaluation_interval: string };
  scrape_configs: ScrapeJob[];
}

/** Prometheus regexes are anchored; namespace names need no escaping (DNS labels), but be exact anyway. */
function literal(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

export function prometheusConfig(p: PrometheusConfigParams): PrometheusConfig {
  const interval = `${p.intervalSeconds}s`;
  const sd = [{ url: p.targetsUrl, refresh_interval: interval }];
  return {
    global: { scrape_interval: interval, scrape_timeout: interval, evaluation_interval: interval },
    scrape_configs: [
      { job_name: "prometheus", static_configs: [{ targets: ["localhost:9090"] }] },
      {
        job_name: "linkerd-controller",
        http_sd_configs: sd,
        relabel_configs: [
          // Linkerd lists pods of its namespace only (kubernetes_sd namespaces); http_sd has every pod.
          {
            source_labels: ["__meta_kubernetes_namespace"],
            action: "keep",
            regex: literal(p.controlPlaneNamespace),
          },
          {
            source_labels: ["__meta_kubernetes_pod_container_port_name"],
            action: "keep",
            regex: "admin-http|.+-admin",
          },
          {
            source_labels: ["__meta_kubernetes_pod_container_port_name"],
            action: "drop",
            regex: literal(p.proxyAdminPortName),
          },
          {
            source_labels: ["__meta_kubernetes_pod_container_name"],
            action: "replace",
            target_label: "component",
          },
        ],
      },
      {
        job_name: "linkerd-proxy",
        http_sd_configs: sd,
        relabel_configs: [
          { source_labels: ["__meta_kubernetes_pod_phase"], action: "keep", regex: "(Pending|Running)" },
          {
            source_labels: [
              "__meta_kubernetes_pod_container_name",
              "__meta_kubernetes_pod_container_port_name",
              "__meta_kubernetes_pod_label_linkerd_io_control_plane_ns",
            ],
            action: "keep",
            regex: `^${literal(p.proxyContainerName)};${literal(p.proxyAdminPortName)};${
              literal(p.controlPlaneNamespace)
            }$`,
          },
          { source_labels: ["__meta_kubernetes_namespace"], action: "replace", target_label: "namespace" },
          { source_labels: ["__meta_kubernetes_pod_name"], action: "replace", target_label: "pod" },
          // Kubernetes' "job" must not overwrite Prometheus' own job label.
          {
            source_labels: ["__meta_kubernetes_pod_label_linkerd_io_proxy_job"],
            action: "replace",
            target_label: "k8s_job",
          },
          { action: "labeldrop", regex: "__meta_kubernetes_pod_label_linkerd_io_proxy_job" },
          // linkerd.io/proxy-deployment=web → deployment="web" (and statefulset, daemonset, ...).
          { action: "labelmap", regex: "__meta_kubernetes_pod_label_linkerd_io_proxy_(.+)" },
          { action: "labeldrop", regex: "__meta_kubernetes_pod_label_linkerd_io_proxy_(.+)" },
          // Other linkerd.io/ labels without the prefix (control_plane_ns, workload_ns, ...).
          { action: "labelmap", regex: "__meta_kubernetes_pod_label_linkerd_io_(.+)" },
          // The remaining pod labels as they are, the linkerd.io/ ones once more without their prefix.
          {
            action: "labelmap",
            regex: "__meta_kubernetes_pod_label_(.+)",
            replacement: "__tmp_pod_label_$1",
          },
          { action: "labelmap", regex: "__tmp_pod_label_linkerd_io_(.+)", replacement: "__tmp_pod_label_$1" },
          { action: "labeldrop", regex: "__tmp_pod_label_linkerd_io_(.+)" },
          { action: "labelmap", regex: "__tmp_pod_label_(.+)" },
        ],
      },
    ],
  };
}

export function prometheusConfigYaml(p: PrometheusConfigParams): string {
  return stringify(prometheusConfig(p), { lineWidth: 0 });
}

export function prometheusConfigMap(p: PrometheusConfigParams): Manifest {
  return {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: {
      name: PROMETHEUS_CONFIGMAP,
      namespace: p.controlPlaneNamespace,
      labels: { "app.kubernetes.io/part-of": "weft", "linkerd.io/control-plane-component": "prometheus" },
    },
    data: { [PROMETHEUS_CONFIG_KEY]: prometheusConfigYaml(p) },
  };
}
