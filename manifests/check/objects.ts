/** Reading the loosely typed API objects the checks look at (Secrets, Pods). */
import type { Pair } from "../certs.ts";
import { secretText } from "../../control/k8s/secret_text.ts";

// deno-lint-ignore no-explicit-any
export type Obj = any;

/** A Secret's data value as text (the one decoder the control plane uses too). */
export const unb64 = secretText;

/** A certificate and key pair from a Secret's data keys, if both are there. */
export function secretPair(s: Obj, crt: string, key: string): Pair | undefined {
  return s?.data?.[crt] && s?.data?.[key]
    ? { certPem: unb64(s.data[crt]), keyPem: unb64(s.data[key]) }
    : undefined;
}

/** A pod's init and regular containers together: spec entries and status entries. */
export function podContainers(p: Obj): { spec: Obj[]; status: Obj[] } {
  return {
    spec: [...(p.spec?.initContainers ?? []), ...(p.spec?.containers ?? [])],
    status: [...(p.status?.initContainerStatuses ?? []), ...(p.status?.containerStatuses ?? [])],
  };
}

export function isPodReady(p: Obj): boolean {
  return p.status?.conditions?.some((c: Obj) => c.type === "Ready" && c.status === "True") ?? false;
}
