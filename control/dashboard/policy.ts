/**
 * The inbound policy that applies to a workload's (or a Service's) pods, read from the Kubernetes API:
 * the Servers whose podSelector picks any of its pods (and their ports), the AuthorizationPolicies and
 * ServerAuthorizations that target each of them (or their namespace), the routes attached to them —
 * HTTPRoutes of policy.linkerd.io and of the Gateway API (gateway.networking.k8s.io), and Gateway API
 * GRPCRoutes, as the policy controller indexes them (control/policy/store.ts) — and the default policy for ports no Server covers (the pods' or namespace's annotation, else the cluster's).
 */
import type { Target } from "../../cli/kinds.ts";
import { listWithPods, type PodInfo, podsOf, selects } from "../../cli/kube_objects.ts";
import type { Kube } from "../../manifests/kube.ts";
import { ApiError } from "./server.ts";

// deno-lint-ignore no-explicit-any
type Json = any;

const DEFAULT_POLICY_ANNOTATION = "config.linkerd.io/default-inbound-policy";
/** The policy controller's `--default-policy` unless the manifests say otherwise (control/policy/config.ts). */
export const CLUSTER_DEFAULT_POLICY = "all-unauthenticated";

export interface PolicyServer {
  name: string;
  port: string;
  proxyProtocol: string;
  /** How many of the resource's pods it selects. */
  pods: number;
  authorizations: { kind: string; name: string; authentications: string[] }[];
  routes: PolicyRoute[];
}

/** A route whose parentRefs name the Server. */
export interface PolicyRoute {
  kind: "HTTPRoute" | "GRPCRoute";
  group: string;
  name: string;
}

const POLICY_GROUP = "policy.linkerd.io";
const GATEWAY_GROUP = "gateway.networking.k8s.io";

export interface PolicyView {
  namespace: string;
  pods: number;
  servers: PolicyServer[];
  /** Policy for ports no Server covers, and where it comes from. */
  defaultPolicy: { value: string; from: string };
}

function refText(r: Json): string {
  return `${r?.kind ?? "?"}/${r?.name ?? "?"}`;
}

/** Pure: the view from the objects, for tests. */
export function policyView(
  namespace: string,
  pods: readonly PodInfo[],
  podAnnotations: readonly Record<string, string>[],
  nsAnnotations: Record<string, string>,
  objects: {
    servers: Json[];
    authorizationPolicies: Json[];
    serverAuthorizations: Json[];
    /** policy.linkerd.io HTTPRoutes. */
    httpRoutes: Json[];
    gatewayHttpRoutes?: Json[];
    grpcRoutes?: Json[];
  },
): PolicyView {
  const routes: (PolicyRoute & { obj: Json })[] = [
    ...objects.httpRoutes.map((obj) => ({ kind: "HTTPRoute" as const, group: POLICY_GROUP, obj })),
    ...(objects.gatewayHttpRoutes ?? []).map((obj) => ({
      kind: "HTTPRoute" as const,
      group: GATEWAY_GROUP,
      obj,
    })),
    ...(objects.grpcRoutes ?? []).map((obj) => ({ kind: "GRPCRoute" as const, group: GATEWAY_GROUP, obj })),
  ].map((r) => ({ ...r, name: String(r.obj?.metadata?.name ?? "") }));
  const hangsOn = (r: { obj: Json }, server: string) =>
    (r.obj?.spec?.parentRefs ?? []).some((p: Json) => p.kind === "Server" && p.name === server);
  const servers: PolicyServer[] = [];
  for (const s of objects.servers) {
    const sel = s.spec?.podSelector;
    if (!sel) continue;
    const picked = pods.filter((p) => selects(sel, p.labels)).length;
    if (picked === 0) continue;
    const name = s.metadata.name;
    const authorizations: PolicyServer["authorizations"] = [];
    for (const a of objects.authorizationPolicies) {
      const t = a.spec?.targetRef ?? {};
      const onServer = t.kind === "Server" && t.name === name;
      const onNamespace = t.kind === "Namespace" && (t.name ?? namespace) === namespace;
      const onRoute = routes.some((r) =>
        r.kind === t.kind && r.name === t.name && (!t.group || t.group === r.group) && hangsOn(r, name)
      );
      if (!onServer && !onNamespace && !onRoute) continue;
      authorizations.push({
        kind: `AuthorizationPolicy${onRoute ? ` (route ${t.name})` : onNamespace ? " (namespace)" : ""}`,
        name: a.metadata.name,
        authentications: (a.spec?.requiredAuthenticationRefs ?? []).map(refText),
      });
    }
    for (const a of objects.serverAuthorizations) {
      const srv = a.spec?.server ?? {};
      const match = srv.name === name || (srv.selector && selects(srv.selector, s.metadata.labels ?? {}));
      if (!match) continue;
      const c = a.spec?.client ?? {};
      const auth = c.unauthenticated
        ? ["unauthenticated"]
        : (c.meshTLS?.serviceAccounts ?? []).map((x: Json) => `sa/${x.name}`).concat(
          (c.meshTLS?.identities ?? []).map((x: string) => `id/${x}`),
        );
      authorizations.push({ kind: "ServerAuthorization", name: a.metadata.name, authentications: auth });
    }
    servers.push({
      name,
      port: String(s.spec?.port ?? "?"),
      proxyProtocol: s.spec?.proxyProtocol ?? "unknown",
      pods: picked,
      authorizations,
      routes: routes.filter((r) => hangsOn(r, name)).map((r) => ({
        kind: r.kind,
        group: r.group,
        name: r.name,
      })),
    });
  }
  servers.sort((a, b) => a.name.localeCompare(b.name));
  const fromPods = [...new Set(podAnnotations.map((a) => a[DEFAULT_POLICY_ANNOTATION]).filter(Boolean))];
  const defaultPolicy = fromPods.length
    ? { value: fromPods.join(", "), from: `pod annotation ${DEFAULT_POLICY_ANNOTATION}` }
    : nsAnnotations[DEFAULT_POLICY_ANNOTATION]
    ? {
      value: nsAnnotations[DEFAULT_POLICY_ANNOTATION],
      from: `namespace annotation ${DEFAULT_POLICY_ANNOTATION}`,
    }
    : { value: CLUSTER_DEFAULT_POLICY, from: "the policy controller's --default-policy" };
  return { namespace, pods: pods.length, servers, defaultPolicy };
}

export async function readPolicy(kube: Kube, t: Target): Promise<PolicyView> {
  const ns = t.namespace!;
  const e = encodeURIComponent(ns);
  const [
    k8s,
    rawPods,
    nsObj,
    servers,
    authorizationPolicies,
    serverAuthorizations,
    httpRoutes,
    gatewayHttpRoutes,
    grpcRoutes,
  ] = await Promise.all([
    listWithPods(kube, t.kind, ns),
    kube.list<Json>(`/api/v1/namespaces/${e}/pods`),
    kube.get<Json>(`/api/v1/namespaces/${e}`),
    kube.list<Json>(`/apis/policy.linkerd.io/v1beta3/namespaces/${e}/servers`),
    kube.list<Json>(`/apis/policy.linkerd.io/v1alpha1/namespaces/${e}/authorizationpolicies`),
    kube.list<Json>(`/apis/policy.linkerd.io/v1beta1/namespaces/${e}/serverauthorizations`),
    kube.list<Json>(`/apis/policy.linkerd.io/v1beta3/namespaces/${e}/httproutes`),
    listOrNone(kube, `/apis/${GATEWAY_GROUP}/v1/namespaces/${e}/httproutes`),
    listOrNone(kube, `/apis/${GATEWAY_GROUP}/v1/namespaces/${e}/grpcroutes`),
  ]);
  const obj = k8s.objects.find((o) => o.name === t.name);
  if (!obj) throw new ApiError(404, `${t.kind.label} ${ns}/${t.name} does not exist`);
  const pods = podsOf(t.kind, obj, k8s.pods);
  const names = new Set(pods.map((p) => p.name));
  const annotations = rawPods.filter((p) => names.has(p.metadata.name)).map((p) =>
    p.metadata.annotations ?? {}
  );
  return policyView(ns, pods, annotations, nsObj?.metadata?.annotations ?? {}, {
    servers,
    authorizationPolicies,
    serverAuthorizations,
    httpRoutes,
    gatewayHttpRoutes,
    grpcRoutes,
  });
}

/** Lists a collection; a cluster without its CRD (e.g. the Gateway API's) has none of them. */
export async function listOrNone(kube: Kube, path: string): Promise<Json[]> {
  try {
    return await kube.list<Json>(path);
  } catch (e) {
    if ((e as { status?: number }).status === 404) return [];
    throw e;
  }
}
