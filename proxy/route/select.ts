/**
 * Which routing applies to an outbound HTTP target, as Linkerd's proxy decides (sidecar.rs): a
 * ServiceProfile with routes or dst_overrides overrides the outbound policy (its retries and
 * timeouts win, the policy's are ignored); a profile without them yields to the policy; without a
 * policy the profile (possibly empty) is used; with neither, requests go to the original destination.
 * (A profile's `opaque_protocol` makes the target opaque before the HTTP layer is reached.)
 */
import type { OutboundPolicyRoutes } from "./outbound.ts";
import type { CompiledProfile } from "./profile.ts";

export type Routing =
  | { readonly kind: "profile"; readonly profile: CompiledProfile }
  | { readonly kind: "policy"; readonly policy: OutboundPolicyRoutes }
  | { readonly kind: "default" };

const DEFAULT: Routing = Object.freeze({ kind: "default" });

export function selectRouting(
  profile: CompiledProfile | undefined,
  policy: OutboundPolicyRoutes | undefined,
): Routing {
  if (profile && (profile.interesting || !policy)) return { kind: "profile", profile };
  if (policy) return { kind: "policy", policy };
  return DEFAULT;
}
