/**
 * The workload and context strings a proxy is configured with (`LINKERD2_PROXY_POLICY_WORKLOAD`,
 * `LINKERD2_PROXY_DESTINATION_CONTEXT`) and sends unchanged in every policy and destination
 * request. The injector fills them with the Downward API (`$(_pod_ns)`…); `weft diagnostics`
 * builds the same strings for a real pod to ask what that pod's proxy is told.
 */

/** `{"ns":…, "pod":…}`, the form the policy controller parses. */
export function policyWorkload(ns: string, pod: string): string {
  return `{"ns":${JSON.stringify(ns)}, "pod":${JSON.stringify(pod)}}`;
}

/** `{"ns":…, "nodeName":…, "pod":…}`, the destination controller's context token. */
export function destinationContext(ns: string, nodeName: string, pod: string): string {
  return `{"ns":${JSON.stringify(ns)}, "nodeName":${JSON.stringify(nodeName)}, "pod":${JSON.stringify(pod)}}`;
}
