/** Cache-size helpers for informer `transform`s. */
import type { KubeObject } from "./types.ts";

/**
 * Drops `metadata.managedFields` (often the largest part of an object, and never read after
 * the lag is measured) and the last-applied annotation kubectl writes.
 */
export function stripManagedFields<T extends KubeObject>(obj: T): T {
  const { managedFields: _m, ...metadata } = obj.metadata;
  const ann = metadata.annotations;
  if (ann && "kubectl.kubernetes.io/last-applied-configuration" in ann) {
    const { "kubectl.kubernetes.io/last-applied-configuration": _l, ...rest } = ann;
    metadata.annotations = rest;
  }
  return { ...obj, metadata };
}
