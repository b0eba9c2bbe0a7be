/**
 * The route page's object view: an HTTPRoute or GRPCRoute (Gateway API's gateway.networking.k8s.io or
 * Linkerd's policy.linkerd.io) or a ServiceProfile, read from the Kubernetes API and shaped for the page —
 * its parents (with the status the policy controller wrote), its rules' matches, backends, filters and
 * timeouts, the retry/timeout annotations the proxies read, and the policy that applies: for a route on a
 * Server, the Server and the AuthorizationPolicies on the route, the Server or the namespace; for a route on
 * a Service, the note that the clients' proxies apply it and the backends' own Servers authorize.
 */
import type { Kube } from "../../manifests/kube.ts";
import { type RouteDirection, routeDirections, type RouteRef } from "./route_series.ts";
import { listOrNone } from "./policy.ts";
import { ApiError } from "./server.ts";

// deno-lint-ignore no-explicit-any
type Json = any;

export const GATEWAY_GROUP = "gateway.networking.k8s.io";
export const POLICY_GROUP = "policy.linkerd.io";
export const PROFILE_GROUP = "linkerd.io";

/** The page paths' plural → the kind and where each API group keeps it (tried in this order). */
export const ROUTE_KINDS: Record<
  string,
  { kind: RouteRef["kind"]; apis: { group: string; path: string }[] }
> = {
  httproutes: {
    kind: "HTTPRoute",
    apis: [
      { group: GATEWAY_GROUP, path: `/apis/${GATEWAY_GROUP}/v1` },
      { group: POLICY_GROUP, path: `/apis/${POLICY_GROUP}/v1beta3` },
    ],
  },
  grpcroutes: { kind: "GRPCRoute", apis: [{ group: GATEWAY_GROUP, path: `/apis/${GATEWAY_GROUP}/v1` }] },
  serviceprofiles: {
    kind: "ServiceProfile",
    apis: [{ group: PROFILE_GROUP, path: `/apis/${PROFILE_GROUP}/v1alpha2` }],
  },
};

export interface RouteParent {
  kind: string;
  namespace: string;
  name: string;
  port?: number;
  /** `svc/web:8080`, `server/web-http`. */
  text: string;
  /** The Accepted condition the policy controller wrote for this parent, when there is one. */
  accepted?: { status: string; reason: string };
}

export interface RouteBackend {
  kind: string;
  namespace: string;
  name: string;
  port?: number;
  weight: number;
  text: string;
}

export interface RouteRule {
  /** One line per match; a rule without matches matches every request (`PathPrefix /`). */
  matches: string[];
  backends: RouteBackend[];
  filters: string[];
  timeouts: string[];
}

export interface ProfileRoute {
  name: string;
  condition: string;
  retryable: boolean;
  timeout?: string;
}

export interface RouteAuthorization {
  name: string;
  /** What it targets: the route, a Server or the namespace. */
  target: string;
  authentications: string[];
}

export interface RoutePolicy {
  /** Servers among the parents that exist, with their port and protocol. */
  servers: { name: string; port: string; proxyProtocol: string }[];
  authorizations: RouteAuthorization[];
  /** Why there is no inbound authorization on this page (outbound routes, profiles). */
  note?: string;
}

export interface RouteView {
  kind: RouteRef["kind"];
  group: string;
  /** Other API groups that also hold a route of this kind and name (a `?group=` picks one). */
  otherGroups: string[];
  namespace: string;
  name: string;
  hostnames: string[];
  parents: RouteParent[];
  rules: RouteRule[];
  profileRoutes: ProfileRoute[];
  /** retry.linkerd.io/* and timeout.linkerd.io/* annotations, which the proxies apply to the route. */
  annotations: Record<string, string>;
  directions: RouteDirection[];
  policy: RoutePolicy;
}

function portText(p: Json): string {
  return p === undefined || p === null || p === "" ? "" : `:${p}`;
}

function parentView(p: Json, ns: string, statuses: Json[]): RouteParent {
  const kind = p.kind ?? "Gateway";
  const namespace = p.namespace ?? ns;
  const short = kind === "Service" ? "svc" : kind.toLowerCase();
  const out: RouteParent = {
    kind,
    namespace,
    name: String(p.name ?? ""),
    text: `${short}/${p.name ?? "?"}${portText(p.port)}${namespace !== ns ? ` (${namespace})` : ""}`,
  };
  if (typeof p.port === "number") out.port = p.port;
  const st = statuses.find((s) =>
    s?.parentRef?.name === p.name && (s.parentRef.kind ?? "Gateway") === kind &&
    (s.parentRef.namespace ?? ns) === namespace
  );
  const acc = (st?.conditions ?? []).find((c: Json) => c?.type === "Accepted");
  if (acc) out.accepted = { status: String(acc.status), reason: String(acc.reason ?? "") };
  return out;
}

/** One HTTPRoute match as a line: method, path, headers, query parameters. */
export function httpMatchText(m: Json): string {
  const parts: string[] = [];
  if (m?.method) parts.push(String(m.method));
  const path = m?.path ?? { type: "PathPrefix", value: "/" };
  parts.push(`${path.type ?? "PathPrefix"} ${path.value ?? "/"}`);
  for (const h of m?.headers ?? []) {
    parts.push(`header ${h.name}${h.type === "RegularExpression" ? " ~ " : " = "}${h.value}`);
  }
  for (const q of m?.queryParams ?? []) {
    parts.push(`query ${q.name}${q.type === "RegularExpression" ? " ~ " : " = "}${q.value}`);
  }
  return parts.join(" · ");
}

/** One GRPCRoute match as a line: service/method, headers. */
export function grpcMatchText(m: Json): string {
  const parts: string[] = [];
  const meth = m?.method;
  parts.push(
    meth
      ? `${meth.type === "RegularExpression" ? "~ " : ""}${meth.service ?? "*"}/${meth.method ?? "*"}`
      : "any method",
  );
  for (const h of m?.headers ?? []) {
    parts.push(`header ${h.name}${h.type === "RegularExpression" ? " ~ " : " = "}${h.value}`);
  }
  return parts.join(" · ");
}

function filterText(f: Json): string {
  switch (f?.type) {
    case "RequestHeaderModifier":
    case "ResponseHeaderModifier": {
      const m = f.requestHeaderModifier ?? f.responseHeaderModifier ?? {};
      const ops = [
        ...(m.set ?? []).map((h: Json) => `set ${h.name}`),
        ...(m.add ?? []).map((h: Json) => `add ${h.name}`),
        ...(m.remove ?? []).map((n: string) => `remove ${n}`),
      ];
      return `${f.type}: ${ops.join(", ")}`;
    }
    case "RequestRedirect":
      return `RequestRedirect → ${f.requestRedirect?.hostname ?? ""}${
        f.requestRedirect?.path?.replaceFullPath ??
          ""
      } ${f.requestRedirect?.statusCode ?? 302}`;
    default:
      return String(f?.type ?? "?");
  }
}

function ruleView(r: Json, ns: string, grpc: boolean): RouteRule {
  const matches = (r?.matches ?? []).map(grpc ? grpcMatchText : httpMatchText);
  return {
    matches: matches.length ? matches : [grpc ? "any method" : "PathPrefix /"],
    backends: (r?.backendRefs ?? []).map((b: Json) => {
      const namespace = b.namespace ?? ns;
      const kind = b.kind ?? "Service";
      const out: RouteBackend = {
        kind,
        namespace,
        name: String(b.name ?? ""),
        weight: typeof b.weight === "number" ? b.weight : 1,
        text: `${kind === "Service" ? "svc" : kind.toLowerCase()}/${b.name ?? "?"}${portText(b.port)}${
          namespace !== ns ? ` (${namespace})` : ""
        }`,
      };
      if (typeof b.port === "number") out.port = b.port;
      return out;
    }),
    filters: (r?.filters ?? []).map(filterText),
    timeouts: Object.entries(r?.timeouts ?? {}).map(([k, v]) => `${k} ${v}`),
  };
}

/** A ServiceProfile route's condition (method, pathRegex, all/any/not) as text. */
export function conditionText(c: Json): string {
  if (!c || typeof c !== "object") return "any request";
  const parts: string[] = [];
  if (c.method) parts.push(String(c.method));
  if (c.pathRegex) parts.push(`path ~ ${c.pathRegex}`);
  if (Array.isArray(c.all)) parts.push(`all(${c.all.map(conditionText).join("; ")})`);
  if (Array.isArray(c.any)) parts.push(`any(${c.any.map(conditionText).join("; ")})`);
  if (c.not) parts.push(`not(${conditionText(c.not)})`);
  return parts.length ? parts.join(" · ") : "any request";
}

const ROUTE_ANNOTATION = /^(retry|timeout)\.linkerd\.io\//;

function authentications(a: Json): string[] {
  return (a?.spec?.requiredAuthenticationRefs ?? []).map((r: Json) => `${r?.kind ?? "?"}/${r?.name ?? "?"}`);
}

/**
 * The policy that applies: for Server parents, the Servers and the AuthorizationPolicies that target this
 * route, one of those Servers, or the namespace (as the policy controller indexes them). Pure.
 */
export function routePolicy(
  kind: RouteRef["kind"],
  name: string,
  namespace: string,
  parents: readonly RouteParent[],
  objects: { servers: Json[]; authorizationPolicies: Json[] },
): RoutePolicy {
  if (kind === "ServiceProfile") {
    return {
      servers: [],
      authorizations: [],
      note: "A ServiceProfile is applied by the clients' proxies; the servers' own policy authorizes.",
    };
  }
  const serverNames = new Set(
    parents.filter((p) => p.kind === "Server" && p.namespace === namespace).map((p) => p.name),
  );
  const servers = objects.servers.filter((s) => serverNames.has(s?.metadata?.name)).map((s) => ({
    name: String(s.metadata.name),
    port: String(s.spec?.port ?? "?"),
    proxyProtocol: String(s.spec?.proxyProtocol ?? "unknown"),
  }));
  const authorizations: RouteAuthorization[] = [];
  if (serverNames.size) {
    for (const a of objects.authorizationPolicies) {
      const t = a?.spec?.targetRef ?? {};
      const target = t.kind === kind && t.name === name
        ? `${kind} ${name}`
        : t.kind === "Server" && serverNames.has(t.name)
        ? `Server ${t.name}`
        : t.kind === "Namespace" && (t.name ?? namespace) === namespace
        ? `Namespace ${namespace}`
        : undefined;
      if (target) {
        authorizations.push({ name: String(a.metadata.name), target, authentications: authentications(a) });
      }
    }
  }
  authorizations.sort((a, b) => a.name.localeCompare(b.name));
  const outbound = parents.some((p) => p.kind === "Service" || p.kind === "EgressNetwork");
  const note = serverNames.size === 0
    ? "A route on a Service is applied by the clients' proxies (outbound); the backends' Servers and " +
      "AuthorizationPolicies authorize the requests — see each backend's page."
    : outbound
    ? "Its Service parents are applied by the clients' proxies; the Server parents' policy is below."
    : undefined;
  return { servers, authorizations, ...(note ? { note } : {}) };
}

/** The page's view of a route object. Pure. */
export function routeView(
  kind: RouteRef["kind"],
  group: string,
  obj: Json,
  policyObjects: { servers: Json[]; authorizationPolicies: Json[] },
): RouteView {
  const namespace = String(obj?.metadata?.namespace ?? "");
  const name = String(obj?.metadata?.name ?? "");
  const spec = obj?.spec ?? {};
  const annotations = Object.fromEntries(
    Object.entries((obj?.metadata?.annotations ?? {}) as Record<string, string>).filter(([k]) =>
      ROUTE_ANNOTATION.test(k)
    ),
  );
  const statuses = obj?.status?.parents ?? [];
  const parents: RouteParent[] = kind === "ServiceProfile"
    ? []
    : (spec.parentRefs ?? []).map((p: Json) => parentView(p, namespace, statuses));
  const rules = kind === "ServiceProfile"
    ? []
    : (spec.rules ?? []).map((r: Json) => ruleView(r, namespace, kind === "GRPCRoute"));
  const profileRoutes: ProfileRoute[] = kind === "ServiceProfile"
    ? (spec.routes ?? []).map((r: Json) => ({
      name: String(r?.name ?? ""),
      condition: conditionText(r?.condition),
      retryable: r?.isRetryable === true,
      ...(r?.timeout ? { timeout: String(r.timeout) } : {}),
    }))
    : [];
  return {
    kind,
    group,
    otherGroups: [],
    namespace,
    name,
    hostnames: (spec.hostnames ?? []).map(String),
    parents,
    rules,
    profileRoutes,
    annotations,
    directions: routeDirections(kind, parents.map((p) => p.kind)),
    policy: routePolicy(kind, name, namespace, parents, policyObjects),
  };
}

/** Reads the route (`plural` is a page path's: httproutes, grpcroutes, serviceprofiles) and its policy. */
export async function readRoute(
  kube: Kube,
  plural: string,
  namespace: string,
  name: string,
  group?: string,
): Promise<RouteView> {
  const k = ROUTE_KINDS[plural];
  if (!k) {
    throw new ApiError(
      400,
      `kind: "${plural.slice(0, 40)}" is not one of ${Object.keys(ROUTE_KINDS).join(", ")}`,
    );
  }
  if (group !== undefined && !k.apis.some((a) => a.group === group)) {
    throw new ApiError(400, `group: "${group.slice(0, 60)}" does not hold ${plural}`);
  }
  const e = encodeURIComponent(namespace);
  const found = await Promise.all(
    k.apis.map(async (a) => ({
      group: a.group,
      obj: await kube.get<Json>(`${a.path}/namespaces/${e}/${plural}/${encodeURIComponent(name)}`).catch(
        (err) => {
          // A cluster without that API group's CRD has no such route there.
          if ((err as { status?: number }).status === 404) return undefined;
          throw err;
        },
      ),
    })),
  );
  const present = found.filter((f) => f.obj);
  const pick = group ? present.find((f) => f.group === group) : present[0];
  if (!pick) {
    throw new ApiError(
      404,
      `${k.kind} ${namespace}/${name} does not exist${group ? ` in ${group}` : ""} (looked in ${
        k.apis.map((a) => a.group).join(", ")
      })`,
    );
  }
  const [servers, authorizationPolicies] = k.kind === "ServiceProfile" ? [[], []] : await Promise.all([
    listOrNone(kube, `/apis/${POLICY_GROUP}/v1beta3/namespaces/${e}/servers`),
    listOrNone(kube, `/apis/${POLICY_GROUP}/v1alpha1/namespaces/${e}/authorizationpolicies`),
  ]);
  const view = routeView(k.kind, pick.group, pick.obj, { servers, authorizationPolicies });
  view.otherGroups = present.filter((f) => f !== pick).map((f) => f.group);
  return view;
}
