/**
 * The inbound policy of one pod port, computed purely from the store: which Server selects it
 * (most specific first), its protocol, authorizations and routes, or the default policy with
 * the kubelet probe routes when no Server does.
 */
import type {
  Authz,
  GrpcRoute as InboundGrpcRoute,
  HttpRoute as InboundHttpRoute,
  HttpRoute_Filter,
  ProxyProtocol,
  Server as ProtoServer,
} from "../../proto/gen/inbound.ts";
import { Annotations } from "../../proto/annotations.ts";
import type { DefaultInboundPolicy } from "../../proto/env.ts";
import { RequestError } from "../grpc/request_error.ts";
import {
  authorizationPolicyAuthz,
  defaultPolicyAuthzs,
  probeAuthz,
  serverAuthorizationAuthz,
} from "./authz.ts";
import { isDefaultPolicy, type PolicyConfig } from "./config.ts";
import { durationFromMs } from "./duration.ts";
import { opaquePortsInclude } from "./opaque_ports.ts";
import type { GrpcRoute, HttpRoute, ObjectRef, Pod, Server } from "./resources.ts";
import { GATEWAY_GROUP, POLICY_GROUP } from "./resources.ts";
import { isNamespaceRef, isServerRef, refTargets } from "./ref_kind.ts";
import {
  convertFilter,
  convertOrSkip,
  grpcMatch,
  hostMatch,
  httpMatch,
  routeMetadata,
  routeOrder,
} from "./route_convert.ts";
import { serverRateLimit, withRateLimit } from "./ratelimit.ts";
import { selects, specificity } from "./selector.ts";
import type { PolicyStore } from "./store.ts";

/** A pod, or (mesh expansion) an ExternalWorkload. */
export type WorkloadRef = { namespace: string; pod: string } | {
  namespace: string;
  externalWorkload: string;
};

/**
 * Parses `PortSpec.workload`: `{"ns":"..","pod":".."}`, `{"ns":"..","external_workload":".."}`
 * (a proxy outside the cluster) or the legacy `ns:pod`.
 */
export function parseWorkload(text: string): WorkloadRef {
  const t = text.trim();
  if (t.startsWith("{")) {
    let v: unknown;
    try {
      v = JSON.parse(t);
    } catch (e) {
      throw new RequestError("invalid_argument", `workload ${JSON.stringify(text)} is not valid JSON: ${e}`);
    }
    const o = v as Record<string, unknown>;
    if (typeof o.ns !== "string" || o.ns === "") {
      throw new RequestError(
        "invalid_argument",
        `workload ${JSON.stringify(text)}: "ns" must be a non-empty string`,
      );
    }
    if (o.external_workload !== undefined) {
      if (typeof o.external_workload !== "string" || o.external_workload === "") {
        throw new RequestError(
          "invalid_argument",
          `workload ${JSON.stringify(text)}: "external_workload" must be a non-empty string`,
        );
      }
      return { namespace: o.ns, externalWorkload: o.external_workload };
    }
    if (typeof o.pod !== "string" || o.pod === "") {
      throw new RequestError(
        "invalid_argument",
        `workload ${JSON.stringify(text)}: "pod" must be a non-empty string`,
      );
    }
    return { namespace: o.ns, pod: o.pod };
  }
  const parts = t.split(":");
  if (parts.length !== 2 || !parts[0] || !parts[1]) {
    throw new RequestError(
      "invalid_argument",
      `workload ${JSON.stringify(text)} is neither {"ns":"..","pod":".."} nor "<namespace>:<pod>"`,
    );
  }
  return { namespace: parts[0], pod: parts[1] };
}

export function checkPort(port: number): void {
  if (!Number.isInteger(port) || port < 1 || port > 65535) {
    throw new RequestError("invalid_argument", `port ${port} is not in 1..65535`);
  }
}

/** Numbers of the pod's container ports named `name` (several containers may reuse a name). */
export function namedPorts(pod: Pod, name: string): number[] {
  const out: number[] = [];
  for (const c of [...(pod.spec?.containers ?? []), ...(pod.spec?.initContainers ?? [])]) {
    for (const p of c.ports ?? []) if (p.name === name) out.push(p.containerPort);
  }
  return out;
}

export function serverSelectsPort(server: Server, pod: Pod, port: number): boolean {
  const p = server.spec?.port;
  if (typeof p === "number") return p === port;
  if (typeof p === "string") {
    if (/^[0-9]+$/.test(p)) return Number(p) === port;
    return namedPorts(pod, p).includes(port);
  }
  return false;
}

/**
 * Servers selecting (pod, port), most specific first: more selector requirements, then a port
 * by number over a port by name, then the oldest, then by name. Admission rejects most
 * overlaps; this order makes the rest deterministic.
 */
export function matchingServers(store: PolicyStore, pod: Pod, port: number): Server[] {
  const ns = pod.metadata.namespace ?? "";
  const out: Server[] = [];
  for (const s of store.servers(ns)) {
    if (!s.spec?.podSelector) continue;
    if (selects(s.spec.podSelector, pod.metadata.labels) && serverSelectsPort(s, pod, port)) out.push(s);
  }
  return out.sort((a, b) => {
    const sa = specificity(a.spec?.podSelector), sb = specificity(b.spec?.podSelector);
    if (sa !== sb) return sb - sa;
    const na = typeof a.spec?.port === "number" ? 0 : 1, nb = typeof b.spec?.port === "number" ? 0 : 1;
    if (na !== nb) return na - nb;
    return routeOrder(a, b);
  });
}

/** HTTP GET probe paths of the pod on `port`. */
export function probePaths(pod: Pod, port: number): string[] {
  const paths = new Set<string>();
  for (const c of [...(pod.spec?.containers ?? []), ...(pod.spec?.initContainers ?? [])]) {
    for (const probe of [c.livenessProbe, c.readinessProbe, c.startupProbe]) {
      const get = probe?.httpGet;
      if (!get) continue;
      const p = typeof get.port === "number"
        ? get.port
        : /^[0-9]+$/.test(get.port)
        ? Number(get.port)
        : (c.ports ?? []).find((cp) => cp.name === get.port)?.containerPort;
      if (p === port) paths.add(get.path || "/");
    }
  }
  return [...paths].sort();
}

/** The number of the pod's container port called `name`. */
export function namedContainerPort(pod: Pod, name: string): number | undefined {
  for (const c of [...(pod.spec?.containers ?? []), ...(pod.spec?.initContainers ?? [])]) {
    const p = (c.ports ?? []).find((cp) => cp.name === name);
    if (p) return p.containerPort;
  }
  return undefined;
}

function annotation(store: PolicyStore, pod: Pod, key: string): string | undefined {
  return pod.metadata.annotations?.[key] ??
    store.namespace(pod.metadata.namespace ?? "")?.metadata.annotations?.[key];
}

/** The default policy of a pod: its annotation, else its namespace's, else the cluster's. */
export function defaultPolicyFor(store: PolicyStore, pod: Pod, cfg: PolicyConfig): DefaultInboundPolicy {
  for (
    const v of [
      pod.metadata.annotations?.[Annotations.defaultInboundPolicy],
      store.namespace(pod.metadata.namespace ?? "")?.metadata.annotations?.[Annotations.defaultInboundPolicy],
    ]
  ) {
    // An unknown value is ignored (the injector and admission report it), not fatal.
    if (v !== undefined && isDefaultPolicy(v)) return v;
  }
  return cfg.defaultPolicy;
}

function labelsFor(kind: "default" | "server", name: string): Record<string, string> {
  return kind === "default"
    ? { group: "", kind: "default", name }
    : { group: POLICY_GROUP, kind: "server", name };
}

const PREFIX_ALL = { path: { kind: { $case: "prefix" as const, value: "/" } }, headers: [], queryParams: [] };

function defaultHttpRoute(): InboundHttpRoute {
  return {
    metadata: { kind: { $case: "default", value: "default" } },
    hosts: [],
    authorizations: [],
    rules: [{ matches: [PREFIX_ALL], filters: [] }],
  };
}

function probeRoute(paths: string[], cfg: PolicyConfig): InboundHttpRoute {
  return {
    metadata: { kind: { $case: "default", value: "probe" } },
    hosts: [],
    authorizations: [probeAuthz(cfg)],
    rules: [{
      matches: paths.map((p) => ({
        path: { kind: { $case: "exact", value: p } },
        headers: [],
        queryParams: [],
        method: { type: { $case: "registered", value: 0 } }, // GET
      })),
      filters: [],
    }],
  };
}

/** The HTTP routes served when no route is attached: everything, plus the probe paths. */
function defaultHttpRoutes(pod: Pod, port: number, cfg: PolicyConfig): InboundHttpRoute[] {
  const routes = [defaultHttpRoute()];
  const paths = probePaths(pod, port);
  if (paths.length > 0 && cfg.probeNetworks.length > 0) routes.push(probeRoute(paths, cfg));
  return routes;
}

function detect(cfg: PolicyConfig, httpRoutes: InboundHttpRoute[]): ProxyProtocol {
  return { kind: { $case: "detect", value: { timeout: durationFromMs(cfg.detectTimeoutMs), httpRoutes } } };
}

export function defaultServer(store: PolicyStore, pod: Pod, port: number, cfg: PolicyConfig): ProtoServer {
  const policy = defaultPolicyFor(store, pod, cfg);
  const opaque = annotation(store, pod, Annotations.opaquePorts);
  const protocol: ProxyProtocol =
    opaque !== undefined && opaquePortsInclude(opaque, port, (n) => namedContainerPort(pod, n))
      ? { kind: { $case: "opaque", value: {} } }
      : detect(cfg, defaultHttpRoutes(pod, port, cfg));
  return {
    protocol,
    serverIps: [],
    authorizations: defaultPolicyAuthzs(policy, cfg),
    labels: labelsFor("default", policy),
  };
}

export function refersTo(ref: ObjectRef, group: string, kind: string, name: string): boolean {
  return refTargets(ref, group, kind) && ref.name === name;
}

/** Whether a route's parentRef names this Server (routes attach within their own namespace). */
export function routeAttachesToServer(
  route: { metadata: { namespace?: string }; spec?: { parentRefs?: ObjectRef[] } },
  server: Server,
): boolean {
  const ns = server.metadata.namespace;
  return (route.spec?.parentRefs ?? []).some((p) =>
    isServerRef(p) && p.name === server.metadata.name &&
    (p.namespace ?? route.metadata.namespace) === ns
  );
}

function sortAuthz(list: Authz[]): Authz[] {
  const k = (a: Authz) => `${a.labels.kind}/${a.labels.name}`;
  return list.sort((a, b) => k(a) < k(b) ? -1 : k(a) > k(b) ? 1 : 0);
}

/** Authorizations from AuthorizationPolicies whose target is `targetOf(policy)`. */
function policyAuthzs(
  store: PolicyStore,
  ns: string,
  cfg: PolicyConfig,
  matches: (target: ObjectRef) => boolean,
): Authz[] {
  const out: Authz[] = [];
  for (const ap of store.authorizationPolicies(ns)) {
    const t = ap.spec?.targetRef;
    if (!t || !matches(t)) continue;
    try {
      out.push(authorizationPolicyAuthz(ap, store, cfg));
    } catch {
      // A policy with a missing or unsupported authentication authorizes nothing.
    }
  }
  return out;
}

export function serverAuthzs(store: PolicyStore, server: Server, cfg: PolicyConfig): Authz[] {
  const ns = server.metadata.namespace ?? "";
  const name = server.metadata.name;
  const out = policyAuthzs(store, ns, cfg, (t) =>
    refersTo(t, POLICY_GROUP, "Server", name) ||
    (isNamespaceRef(t) && t.name === ns));
  for (const saz of store.serverAuthorizations(ns)) {
    const target = saz.spec?.server;
    if (!target) continue;
    const hit = target.name !== undefined
      ? target.name === name
      : selects(target.selector, server.metadata.labels);
    if (!hit) continue;
    try {
      out.push(serverAuthorizationAuthz(saz, cfg));
    } catch {
      // Unparseable networks: the authorization is skipped (admission rejects these).
    }
  }
  const access = server.spec?.accessPolicy;
  if (access !== undefined && isDefaultPolicy(access)) out.push(...defaultPolicyAuthzs(access, cfg));
  return sortAuthz(out);
}

export function inboundHttpRoute(
  store: PolicyStore,
  group: string,
  route: HttpRoute,
  cfg: PolicyConfig,
): InboundHttpRoute {
  const ns = route.metadata.namespace ?? "";
  const rules = (route.spec?.rules ?? []).map((rule, i) => {
    const filters: HttpRoute_Filter[] = [];
    (rule.filters ?? []).forEach((f, j) => {
      const c = convertFilter(f, `spec.rules[${i}].filters[${j}]`);
      // The inbound proxy has no response header modifier; Linkerd drops it the same way.
      if (c.kind === "requestHeaderModifier") {
        filters.push({ kind: { $case: "requestHeaderModifier", value: c.value } });
      } else if (c.kind === "redirect") filters.push({ kind: { $case: "redirect", value: c.value } });
    });
    return {
      matches: (rule.matches ?? []).map((m, j) => httpMatch(m, `spec.rules[${i}].matches[${j}]`)),
      filters,
    };
  });
  return {
    metadata: routeMetadata(group, "HTTPRoute", route),
    hosts: (route.spec?.hostnames ?? []).map(hostMatch),
    authorizations: sortAuthz(
      policyAuthzs(store, ns, cfg, (t) => refersTo(t, group, "HTTPRoute", route.metadata.name)),
    ),
    rules,
  };
}

export function inboundGrpcRoute(store: PolicyStore, route: GrpcRoute, cfg: PolicyConfig): InboundGrpcRoute {
  const ns = route.metadata.namespace ?? "";
  return {
    metadata: routeMetadata(GATEWAY_GROUP, "GRPCRoute", route),
    hosts: (route.spec?.hostnames ?? []).map(hostMatch),
    authorizations: sortAuthz(
      policyAuthzs(store, ns, cfg, (t) => refersTo(t, GATEWAY_GROUP, "GRPCRoute", route.metadata.name)),
    ),
    rules: (route.spec?.rules ?? []).map((rule, i) => ({
      matches: (rule.matches ?? []).map((m, j) => grpcMatch(m, `spec.rules[${i}].matches[${j}]`)),
      filters: (rule.filters ?? []).flatMap((f, j) => {
        const c = convertFilter(f, `spec.rules[${i}].filters[${j}]`);
        return c.kind === "requestHeaderModifier"
          ? [{ kind: { $case: "requestHeaderModifier" as const, value: c.value } }]
          : [];
      }),
    })),
  };
}

/** HTTPRoutes (both groups) attached to a Server, in Gateway API precedence; invalid ones skipped. */
export function attachedHttpRoutes(
  store: PolicyStore,
  server: Server,
): { group: string; route: HttpRoute }[] {
  const out: { group: string; route: HttpRoute }[] = [];
  for (const r of store.httpRoutes(server.metadata.namespace ?? "")) {
    if (routeAttachesToServer(r.route, server)) out.push(r);
  }
  return out.sort((a, b) => routeOrder(a.route, b.route));
}

export function attachedGrpcRoutes(store: PolicyStore, server: Server): GrpcRoute[] {
  const out: GrpcRoute[] = [];
  for (const r of store.grpcRoutes(server.metadata.namespace ?? "")) {
    if (routeAttachesToServer(r, server)) out.push(r);
  }
  return out.sort(routeOrder);
}

export function serverPolicy(
  store: PolicyStore,
  server: Server,
  pod: Pod,
  port: number,
  cfg: PolicyConfig,
): ProtoServer {
  const authorizations = serverAuthzs(store, server, cfg);
  const httpRoutes = () => {
    const routes = attachedHttpRoutes(store, server).flatMap((r) =>
      convertOrSkip(() => inboundHttpRoute(store, r.group, r.route, cfg))
    );
    return routes.length > 0 ? routes : defaultHttpRoutes(pod, port, cfg);
  };
  let protocol: ProxyProtocol;
  switch (server.spec?.proxyProtocol ?? "unknown") {
    case "HTTP/1":
      protocol = { kind: { $case: "http1", value: { routes: httpRoutes() } } };
      break;
    case "HTTP/2":
      protocol = { kind: { $case: "http2", value: { routes: httpRoutes() } } };
      break;
    case "gRPC": {
      const routes = attachedGrpcRoutes(store, server).flatMap((r) =>
        convertOrSkip(() => inboundGrpcRoute(store, r, cfg))
      );
      protocol = {
        kind: {
          $case: "grpc",
          value: {
            routes: routes.length > 0 ? routes : [{
              metadata: { kind: { $case: "default", value: "default" } },
              hosts: [],
              authorizations: [],
              rules: [{ matches: [], filters: [] }],
            }],
          },
        },
      };
      break;
    }
    case "opaque":
      protocol = { kind: { $case: "opaque", value: {} } };
      break;
    case "TLS":
      protocol = { kind: { $case: "tls", value: {} } };
      break;
    default:
      protocol = detect(cfg, httpRoutes());
  }
  protocol = withRateLimit(protocol, serverRateLimit(store, server, cfg));
  return { protocol, serverIps: [], authorizations, labels: labelsFor("server", server.metadata.name) };
}

/** The policy for (namespace, pod, port); throws not_found when the pod is not (yet) known. */
export function inboundPolicy(
  store: PolicyStore,
  cfg: PolicyConfig,
  ns: string,
  podName: string,
  port: number,
): ProtoServer {
  return resolveInbound(store, cfg, ns, podName, port).build();
}

/** Which Server answers a pod port, and the means to build (and share) the answer. */
export interface InboundAnswer {
  /** `namespace/name` of the selecting Server, or undefined for the default policy. */
  server: string | undefined;
  /**
   * Equal for two pod ports exactly when their answers are equal in the current store: the Server,
   * the port and the pod's probe paths on it (the only pod input of a Server's answer). Undefined
   * for the default policy, which reads the pod's and namespace's annotations.
   */
  shareKey: string | undefined;
  build(): ProtoServer;
}

export function resolveInbound(
  store: PolicyStore,
  cfg: PolicyConfig,
  ns: string,
  podName: string,
  port: number,
): InboundAnswer {
  const pod = store.pod(ns, podName);
  if (!pod) throw new RequestError("not_found", `pod ${ns}/${podName} not found`);
  const server = matchingServers(store, pod, port)[0];
  if (!server) {
    return {
      server: undefined,
      shareKey: undefined,
      build: () => defaultServer(store, pod, port, cfg),
    };
  }
  const name = `${server.metadata.namespace ?? ""}/${server.metadata.name}`;
  return {
    server: name,
    shareKey: `server|${name}|${port}|${probePaths(pod, port).join("\n")}`,
    build: () => serverPolicy(store, server, pod, port, cfg),
  };
}
