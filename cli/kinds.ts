/**
 * The resource kinds the view commands take (`deploy`, `po`, `svc`, `ns`, …, kubectl's short names), the
 * label each carries on the proxies' series (Linkerd's scrape configuration: `deployment`, `pod`, …, and
 * `dst_<label>` on the client side), and where the Kubernetes API lists them.
 */
import { UsageError } from "./context.ts";

export interface Kind {
  /** Linkerd's name, also the series label (`deployment`, `pod`, …). */
  label: string;
  /** The name a user types and tables print (`deploy`, `po`, …). */
  short: string;
  aliases: readonly string[];
  /** The collection path in the API, without the namespace part. */
  api: { group: string; plural: string };
  namespaced: boolean;
}

export const KINDS: readonly Kind[] = [
  k("deployment", "deploy", ["deployments"], "apis/apps/v1", "deployments"),
  k("statefulset", "sts", ["statefulsets"], "apis/apps/v1", "statefulsets"),
  k("daemonset", "ds", ["daemonsets"], "apis/apps/v1", "daemonsets"),
  k("replicaset", "rs", ["replicasets"], "apis/apps/v1", "replicasets"),
  // Linkerd labels a Job's series `k8s_job` (`job` is Prometheus' own target label).
  { ...k("k8s_job", "job", ["jobs"], "apis/batch/v1", "jobs") },
  k("pod", "po", ["pods"], "api/v1", "pods"),
  k("service", "svc", ["services"], "api/v1", "services"),
  { ...k("namespace", "ns", ["namespaces"], "api/v1", "namespaces"), namespaced: false },
];

function k(label: string, short: string, aliases: string[], group: string, plural: string): Kind {
  return { label, short, aliases, api: { group, plural }, namespaced: true };
}

export function findKind(text: string): Kind {
  const t = text.toLowerCase();
  const kind = KINDS.find((x) => x.label === t || x.short === t || x.aliases.includes(t));
  if (!kind) {
    throw new UsageError(
      `"${text}" is not a resource kind (one of ${KINDS.map((x) => `${x.short}|${x.label}`).join(", ")})`,
    );
  }
  return kind;
}

/** A resource as typed: `deploy`, `deploy/web`, `ns/weft-demo`; the namespace is filled in by the caller. */
export interface Target {
  kind: Kind;
  name?: string;
  namespace?: string;
}

export function parseTarget(text: string, namespace?: string): Target {
  const [kindText, name, extra] = text.split("/");
  if (extra !== undefined || name === "") throw new UsageError(`"${text}" is not KIND or KIND/NAME`);
  const kind = findKind(kindText);
  if (name !== undefined && !/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/.test(name)) {
    throw new UsageError(`"${name}" is not a Kubernetes object name`);
  }
  return { kind, ...(name !== undefined ? { name } : {}), ...(namespace !== undefined ? { namespace } : {}) };
}

export function targetText(t: Target): string {
  return t.name ? `${t.kind.short}/${t.name}` : t.kind.short;
}

/** The API path listing a kind in a namespace, or across all namespaces. */
export function listPath(kind: Kind, namespace: string | undefined): string {
  const ns = kind.namespaced && namespace ? `/namespaces/${encodeURIComponent(namespace)}` : "";
  return `/${kind.api.group}${ns}/${kind.api.plural}`;
}
