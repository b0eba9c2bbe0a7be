/**
 * What kind of object a reference (targetRef, parentRef, backendRef, authentication or identity
 * ref) names. Linkerd compares group and kind ignoring ASCII case, and reads an absent or empty
 * group as the core group, which may also be spelled `core`; every comparison of a reference's
 * kind in the controllers and the validator goes through here so they cannot disagree.
 */
import { GATEWAY_GROUP, POLICY_GROUP } from "./resources.ts";

/** Equality ignoring the case of ASCII letters only (other characters must match exactly). */
export function asciiEqualFold(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) {
    let x = a.charCodeAt(i), y = b.charCodeAt(i);
    if (x >= 65 && x <= 90) x += 32;
    if (y >= 65 && y <= 90) y += 32;
    if (x !== y) return false;
  }
  return true;
}

/** A group as written in a reference or a kind table: "" and unset both mean the core group. */
function groupOrCore(group: string | undefined): string {
  return group === undefined || group === "" ? "core" : group;
}

/** Whether a reference's group is `group` ("" or "core" for the core group). */
export function refGroupIs(refGroup: string | undefined, group: string): boolean {
  return asciiEqualFold(groupOrCore(refGroup), groupOrCore(group));
}

export interface KindRef {
  group?: string;
  kind?: string;
}

/**
 * Whether `ref` names objects of `group`/`kind`. An unset kind names nothing, unless the field
 * has a default (`defaultKind`: backendRefs default to Service).
 */
export function refTargets(
  ref: KindRef | undefined,
  group: string,
  kind: string,
  defaultKind?: string,
): boolean {
  const k = ref?.kind ?? defaultKind;
  return k !== undefined && refGroupIs(ref?.group, group) && asciiEqualFold(k, kind);
}

export const isServerRef = (ref: KindRef | undefined): boolean => refTargets(ref, POLICY_GROUP, "Server");
export const isServiceRef = (ref: KindRef | undefined): boolean => refTargets(ref, "", "Service");
export const isNamespaceRef = (ref: KindRef | undefined): boolean => refTargets(ref, "", "Namespace");
export const isServiceAccountRef = (ref: KindRef | undefined): boolean =>
  refTargets(ref, "", "ServiceAccount");
/** A backendRef without a kind is a Service. */
export const isServiceBackendRef = (ref: KindRef | undefined): boolean =>
  refTargets(ref, "", "Service", "Service");
export const isMeshTlsAuthenticationRef = (ref: KindRef | undefined): boolean =>
  refTargets(ref, POLICY_GROUP, "MeshTLSAuthentication");
export const isNetworkAuthenticationRef = (ref: KindRef | undefined): boolean =>
  refTargets(ref, POLICY_GROUP, "NetworkAuthentication");
/** policy.linkerd.io HTTPRoute (not the Gateway API kind of the same name). */
export const isPolicyHttpRouteRef = (ref: KindRef | undefined): boolean =>
  refTargets(ref, POLICY_GROUP, "HTTPRoute");
export const isGatewayHttpRouteRef = (ref: KindRef | undefined): boolean =>
  refTargets(ref, GATEWAY_GROUP, "HTTPRoute");
export const isGrpcRouteRef = (ref: KindRef | undefined): boolean =>
  refTargets(ref, GATEWAY_GROUP, "GRPCRoute");

/** `kind.group` (or just the kind for the core group), for messages, as Linkerd prints a ref's kind. */
export function canonicalKind(ref: KindRef | undefined): string {
  const g = ref?.group ?? "";
  return g === "" ? ref?.kind ?? "" : `${ref?.kind ?? ""}.${g}`;
}
