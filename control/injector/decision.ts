/** Whether a pod is injected, from `linkerd.io/inject` on the pod and its namespace. */
import { Annotations, INJECT_VALUES, type InjectValue } from "../../proto/annotations.ts";
import type { V1Pod } from "@kubernetes/client-node";

export const PROXY_CONTAINER = "linkerd-proxy";
export const INIT_CONTAINER = "linkerd-init";

export type SkipReason =
  | "injection_enable_annotation_absent"
  | "injection_disable_annotation_present"
  | "invalid_inject_annotation_at_ns"
  | "invalid_inject_annotation_at_workload"
  | "host_network_enabled"
  | "sidecar_already_exists"
  | "namespace_excluded";

/** What injection reads of a namespace (a cached metadata-only object or a full V1Namespace). */
export interface NamespaceLike {
  metadata?: { name?: string; annotations?: Record<string, string> };
}

export type Decision =
  | { inject: true; mode: "enabled" | "ingress"; annotationAt: "workload" | "namespace" }
  | { inject: false; reason: SkipReason; message: string };

function injectValue(v: string | undefined): InjectValue | "" | "invalid" {
  if (v === undefined || v === "") return "";
  return (INJECT_VALUES as readonly string[]).includes(v) ? v as InjectValue : "invalid";
}

export function decide(pod: V1Pod, ns: NamespaceLike | undefined, excludedNamespaces: string[]): Decision {
  const nsName = ns?.metadata?.name ?? pod.metadata?.namespace ?? "";
  const skip = (reason: SkipReason, message: string): Decision => ({ inject: false, reason, message });
  if (excludedNamespaces.includes(nsName)) {
    return skip("namespace_excluded", `namespace ${nsName} is never injected`);
  }
  const podVal = injectValue(pod.metadata?.annotations?.[Annotations.inject]);
  const nsVal = injectValue(ns?.metadata?.annotations?.[Annotations.inject]);
  if (podVal === "invalid") {
    return skip(
      "invalid_inject_annotation_at_workload",
      `pod annotation ${Annotations.inject}="${
        pod.metadata?.annotations?.[Annotations.inject]
      }" is not one of ${INJECT_VALUES.join(", ")}`,
    );
  }
  if (nsVal === "invalid" && podVal === "") {
    return skip(
      "invalid_inject_annotation_at_ns",
      `namespace annotation ${Annotations.inject}="${
        ns?.metadata?.annotations?.[Annotations.inject]
      }" is not one of ${INJECT_VALUES.join(", ")}`,
    );
  }
  let mode: "enabled" | "ingress";
  let at: "workload" | "namespace";
  if (podVal === "enabled" || podVal === "ingress") [mode, at] = [podVal, "workload"];
  else if (podVal === "disabled") {
    return skip("injection_disable_annotation_present", `pod has ${Annotations.inject}=disabled`);
  } else if (nsVal === "enabled" || nsVal === "ingress") [mode, at] = [nsVal, "namespace"];
  else {return skip(
      "injection_enable_annotation_absent",
      `neither the pod nor namespace ${nsName} enables injection`,
    );}

  if (pod.spec?.hostNetwork) return skip("host_network_enabled", "pod uses the host network");
  const names = [...(pod.spec?.containers ?? []), ...(pod.spec?.initContainers ?? [])].map((c) => c.name);
  if (
    names.includes(PROXY_CONTAINER) || pod.metadata?.annotations?.[Annotations.proxyVersion] !== undefined
  ) {
    return skip("sidecar_already_exists", "pod already has a proxy");
  }
  return { inject: true, mode, annotationAt: at };
}
