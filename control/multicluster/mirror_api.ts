/**
 * The source-cluster writes the service mirror needs, as an interface so the reconcile logic runs
 * against an in-memory fake in unit tests and against the API server (kube_mirror_api.ts) in use.
 */
import type { KubeObject } from "../k8s/mod.ts";
import type { Endpoints, Service } from "./mirror_objects.ts";

export type UpdateResult = "ok" | "conflict" | "gone";

export interface ObjectApi<T extends KubeObject> {
  get(namespace: string, name: string): Promise<T | undefined>;
  /** "exists" when an object of that name is already there (409 AlreadyExists). */
  create(obj: T): Promise<"created" | "exists">;
  /** A PUT with the object's resourceVersion: "conflict" when it changed meanwhile, "gone" when deleted. */
  update(obj: T): Promise<UpdateResult>;
  /** Absent objects are not an error. */
  delete(namespace: string, name: string): Promise<void>;
  /** Deletes only if the object is still at `resourceVersion` (a precondition), else "conflict". */
  deleteAt(namespace: string, name: string, resourceVersion: string): Promise<UpdateResult>;
  /** Across all namespaces. */
  list(labelSelector: string): Promise<T[]>;
}

export interface MirrorApi {
  services: ObjectApi<Service>;
  endpoints: ObjectApi<Endpoints>;
}
