/** Which indexed kind a manifest (apiVersion + kind) is, for loading YAML into the store. */
import type { Kind } from "./resources.ts";

export function kindOf(apiVersion: string | undefined, kind: string | undefined): Kind | undefined {
  const group = apiVersion?.includes("/") ? apiVersion.split("/")[0] : "";
  if (group === "" && (kind === "Pod" || kind === "Namespace" || kind === "Service")) return kind;
  if (group === "policy.linkerd.io") {
    if (
      kind === "Server" || kind === "ServerAuthorization" || kind === "AuthorizationPolicy" ||
      kind === "MeshTLSAuthentication" || kind === "NetworkAuthentication" || kind === "HTTPRoute" ||
      kind === "HTTPLocalRateLimitPolicy"
    ) return kind;
    if (kind === "EgressNetwork") return kind;
  }
  if (group === "gateway.networking.k8s.io") {
    if (kind === "HTTPRoute") return "GatewayHTTPRoute";
    if (kind === "GRPCRoute") return "GRPCRoute";
    if (kind === "TLSRoute") return "TLSRoute";
    if (kind === "TCPRoute") return "TCPRoute";
  }
  return undefined;
}
