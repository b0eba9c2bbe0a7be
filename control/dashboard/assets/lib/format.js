// Number formats as `weft stat` prints them (cli/table.ts), with "-" for no data.

export const NO_DATA = "-";

export function fmtSuccess(r) {
  return r === null || r === undefined ? NO_DATA : `${(r * 100).toFixed(2)}%`;
}

export function successTone(r) {
  if (r === null || r === undefined) return "";
  return r >= 0.99 ? "good" : r >= 0.95 ? "warn" : "bad";
}

export function fmtRps(v) {
  if (v === null || v === undefined) return NO_DATA;
  return v >= 100 ? `${Math.round(v)}rps` : `${v.toFixed(1)}rps`;
}

export function fmtLatency(ms) {
  if (ms === null || ms === undefined || !Number.isFinite(ms)) return NO_DATA;
  return ms >= 1000 ? `${(ms / 1000).toFixed(2)}s` : `${Math.round(ms)}ms`;
}

export function fmtDays(d) {
  return `${d.toFixed(d < 10 ? 1 : 0)} days`;
}

/** The page path of a workload (the server and the router accept these shapes). */
export function workloadHref(ns, kindLabel, name) {
  const plural = {
    deployment: "deployments",
    deploy: "deployments",
    statefulset: "statefulsets",
    sts: "statefulsets",
    daemonset: "daemonsets",
    ds: "daemonsets",
    service: "services",
    svc: "services",
    pod: "pods",
    po: "pods",
  }[kindLabel];
  return `/namespaces/${encodeURIComponent(ns)}/${plural ?? "deployments"}/${encodeURIComponent(name)}`;
}
