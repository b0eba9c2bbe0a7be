/** Route and backend identity from `io.linkerd.proxy.meta.Metadata`, for labels and messages. */
import type { Metadata } from "../../proto/gen_messages/meta.ts";

export interface RouteMeta {
  readonly group: string;
  readonly kind: string;
  readonly name: string;
  readonly namespace: string;
  readonly section: string;
  /** The resource's port (a parent's), when the metadata names one. */
  readonly port?: number;
}

export class RouteConfigError extends Error {
  override name = "RouteConfigError";
}

/** Metadata as labels: `{default: n}` → kind "default", group "". Missing metadata is an error. */
export function routeMeta(m: Metadata | undefined, what: string): RouteMeta {
  const k = m?.kind;
  if (!k) throw new RouteConfigError(`${what} has no metadata`);
  if (k.$case === "default") return { group: "", kind: "default", name: k.value, namespace: "", section: "" };
  const r = k.value;
  if (!r.kind || !r.name) throw new RouteConfigError(`${what} metadata resource lacks kind or name`);
  const out = { group: r.group, kind: r.kind, name: r.name, namespace: r.namespace, section: r.section };
  return r.port ? { ...out, port: r.port } : out;
}

/** `name` for messages: "HTTPRoute ns/name" or "default name". */
export function describeMeta(m: RouteMeta): string {
  return m.namespace ? `${m.kind} ${m.namespace}/${m.name}` : `${m.kind} ${m.name}`;
}
