/**
 * The few Kubernetes object shapes the informers need. Components describe the fields they read
 * with their own narrower types (`KubeObject & { spec: ... }`), so no generated model is copied.
 */

export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean;
}

export interface ManagedFieldsEntry {
  manager?: string;
  operation?: string;
  time?: string;
  subresource?: string;
}

export interface ObjectMeta {
  name?: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  creationTimestamp?: string;
  deletionTimestamp?: string;
  deletionGracePeriodSeconds?: number;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  ownerReferences?: OwnerReference[];
  managedFields?: ManagedFieldsEntry[];
  finalizers?: string[];
}

export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
}

export type WatchEventType = "ADDED" | "MODIFIED" | "DELETED" | "BOOKMARK";

export interface WatchEvent<T> {
  type: WatchEventType;
  object: T;
}

/** One page of a list response. */
export interface ListPage<T> {
  items: T[];
  resourceVersion: string;
  /** Set when more pages follow. */
  continue?: string;
}

/** Cache key of an object: `namespace/name`, or `name` for cluster-scoped objects. */
export function objectKey(obj: KubeObject): string {
  const ns = obj.metadata.namespace;
  return ns ? `${ns}/${obj.metadata.name}` : obj.metadata.name ?? "";
}

export function keyOf(namespace: string | undefined, name: string): string {
  return namespace ? `${namespace}/${name}` : name;
}
