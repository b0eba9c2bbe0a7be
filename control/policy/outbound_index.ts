/**
 * The outbound policy of one traffic target, computed purely from the store: a Service port
 * gets a balancer backend and its GRPCRoutes, HTTPRoutes (with timeouts, retries and failure
 * accrual from annotations), TLSRoutes or TCPRoutes, in that precedence as Linkerd's; an address
 * under an EgressNetwork the egress policy; anything else the forward-to-original-destination
 * fallback.
 */
import type { Metadata } from "../../proto/gen/meta.ts";
import type {
  Backend,
  GrpcRoute as ProtoGrpcRoute,
  GrpcRoute_Filter,
  HttpRoute as ProtoHttpRoute,
  HttpRoute_Filter,
  OpaqueRoute,
  OutboundPolicy,
  ProxyProtocol,
  TrafficSpec,
} from "../../proto/gen/outbound.ts";
import { Annotations } from "../../proto/annotations.ts";
import { fromIpAddress } from "../../proto/ip.ts";
import type { TcpAddress } from "../../proto/gen/net.ts";
import { RequestError } from "../grpc/request_error.ts";
import type { PolicyConfig } from "./config.ts";
import { durationFromMs } from "./duration.ts";
import { opaquePortsInclude } from "./opaque_ports.ts";
import { failureAccrual, grpcRetry, httpRetry, routeTimeouts } from "./outbound_annotations.ts";
import type {
  BackendRef,
  EgressNetwork,
  GrpcRoute,
  HttpRoute,
  HttpRouteRule,
  ObjectRef,
  RouteFilter,
  Service,
  ServicePort,
  TcpRoute,
  TlsRoute,
} from "./resources.ts";
import { GATEWAY_GROUP } from "./resources.ts";
import { isServiceRef } from "./ref_kind.ts";
import { backendProblem, grpcFailure, httpFailure, invalidBackend } from "./invalid_backend.ts";
import {
  convertFilter,
  convertOrSkip,
  grpcMatch,
  hostMatch,
  httpMatch,
  routeMetadata,
  routeOrder,
} from "./route_convert.ts";
import type { PolicyStore } from "./store.ts";
import { egressMeta, egressPolicy, isEgressNetworkRef, resolveEgressNetwork } from "./egress_index.ts";
import { type L4Parent, l4TcpRoute, l4TlsRoute, type ResolvedBackend } from "./l4_routes.ts";

/** What a TrafficSpec resolved to. */
export type OutboundTarget =
  | { kind: "service"; service: Service; port: number; sourceNamespace?: string }
  | { kind: "egress"; network: EgressNetwork; addr: TcpAddress; sourceNamespace?: string }
  | { kind: "fallback"; addr: TcpAddress };

export function sourceNamespace(sourceWorkload: string): string | undefined {
  const t = sourceWorkload.trim();
  if (t.startsWith("{")) {
    try {
      const v = JSON.parse(t) as { ns?: unknown };
      return typeof v.ns === "string" ? v.ns : undefined;
    } catch {
      return undefined;
    }
  }
  const i = t.indexOf(":");
  return i > 0 ? t.slice(0, i) : undefined;
}

/** Resolves a TrafficSpec; throws invalid_argument for a malformed one, not_found for an unknown authority. */
export function resolveTarget(store: PolicyStore, cfg: PolicyConfig, spec: TrafficSpec): OutboundTarget {
  const srcNs = sourceNamespace(spec.sourceWorkload);
  const t = spec.target;
  if (!t) throw new RequestError("invalid_argument", "TrafficSpec has no target (addr or authority)");
  if (t.$case === "addr") {
    if (!t.value.ip) throw new RequestError("invalid_argument", "TrafficSpec.addr has no ip");
    const port = t.value.port;
    if (!Number.isInteger(port) || port < 1 || port > 65535) {
      throw new RequestError("invalid_argument", `TrafficSpec.addr port ${port} is not in 1..65535`);
    }
    let ip: string;
    try {
      ip = fromIpAddress(t.value.ip);
    } catch (e) {
      throw new RequestError("invalid_argument", `TrafficSpec.addr: ${(e as Error).message}`);
    }
    const svc = store.serviceByIp(ip);
    if (svc && (svc.spec?.ports ?? []).some((p) => p.port === port)) {
      return { kind: "service", service: svc, port, sourceNamespace: srcNs };
    }
    const network = resolveEgressNetwork(store, cfg, ip, srcNs);
    if (network) return { kind: "egress", network, addr: t.value, sourceNamespace: srcNs };
    return { kind: "fallback", addr: t.value };
  }
  const authority = t.value;
  const m = /^([a-z0-9-]+)\.([a-z0-9-]+)\.svc(?:\.(.+?))?\.?(?::([0-9]+))?$/.exec(authority);
  if (!m || (m[3] !== undefined && m[3] !== cfg.clusterDomain)) {
    throw new RequestError(
      "not_found",
      `authority ${JSON.stringify(authority)} is not a Service of this cluster`,
    );
  }
  const port = m[4] ? Number(m[4]) : 80;
  const svc = store.service(m[2], m[1]);
  if (!svc) throw new RequestError("not_found", `Service ${m[2]}/${m[1]} not found`);
  if (!(svc.spec?.ports ?? []).some((p) => p.port === port)) {
    throw new RequestError("not_found", `Service ${m[2]}/${m[1]} has no port ${port}`);
  }
  return { kind: "service", service: svc, port, sourceNamespace: srcNs };
}

function queue(cfg: PolicyConfig) {
  return { capacity: cfg.backendQueueCapacity, failfastTimeout: durationFromMs(cfg.backendFailfastMs) };
}

function serviceMeta(name: string, namespace: string, port: number): Metadata {
  return {
    kind: {
      $case: "resource",
      value: { group: "core", kind: "Service", name, namespace, section: "", port },
    },
  };
}

/** A balancer over a Service port's endpoints, discovered through Destination.Get. */
export function serviceBackend(
  name: string,
  namespace: string,
  port: number,
  exists: boolean,
  cfg: PolicyConfig,
): Backend {
  const b: Backend = { metadata: serviceMeta(name, namespace, port), queue: queue(cfg) };
  // A missing Service leaves `kind` unset: the proxy fails requests to it (ResolvedRefs=False).
  if (exists) {
    b.kind = {
      $case: "balancer",
      value: {
        discovery: {
          kind: { $case: "dst", value: { path: `${name}.${namespace}.svc.${cfg.clusterDomain}:${port}` } },
        },
        load: { $case: "peakEwma", value: { defaultRtt: durationFromMs(30), decay: durationFromMs(10_000) } },
      },
    };
  }
  return b;
}

function forwardBackend(addr: TcpAddress, cfg: PolicyConfig): Backend {
  return {
    metadata: { kind: { $case: "default", value: "forward" } },
    queue: queue(cfg),
    kind: { $case: "forward", value: { addr, weight: 1, metricLabels: {} } },
  };
}

/**
 * A backendRef of a TLS or TCP route that is not an EgressNetwork, as Linkerd resolves it under
 * any parent: a Service (its port, else `defaultPort`) is a balancer, or invalid when it does not
 * exist; any other kind is invalid.
 */
export function serviceRefBackend(
  store: PolicyStore,
  cfg: PolicyConfig,
  ref: BackendRef,
  routeNs: string,
  defaultPort: number,
): ResolvedBackend<Backend> {
  const kind = ref.kind ?? "Service";
  if (kind.toLowerCase() === "service" && ["", "core"].includes((ref.group ?? "").toLowerCase())) {
    const ns = ref.namespace ?? routeNs;
    const exists = store.service(ns, ref.name) !== undefined;
    const backend = serviceBackend(ref.name, ns, ref.port ?? defaultPort, exists, cfg);
    return exists ? { backend } : { backend, invalid: `Service not found ${ref.name}` };
  }
  return {
    backend: { metadata: { kind: { $case: "default", value: "invalid" } }, queue: queue(cfg) },
    invalid: `unsupported backend kind ${ref.group ?? ""}/${kind}`,
  };
}

/** Linkerd's message for an EgressNetwork backend of a route whose parent is a Service. */
export const EGRESS_BACKEND_SERVICE_PARENT = "EgressNetwork backends attach to EgressNetwork parents only";

/** A Service port as the parent of TLS and TCP routes: rules without backends go to the Service. */
function serviceL4Parent(
  store: PolicyStore,
  svc: Service,
  port: number,
  cfg: PolicyConfig,
): L4Parent<Backend> {
  return {
    deflt: serviceBackend(svc.metadata.name, svc.metadata.namespace ?? "", port, true, cfg),
    resolve: (ref, routeNs) => {
      if (!isEgressNetworkRef(ref)) return serviceRefBackend(store, cfg, ref, routeNs, port);
      const ns = ref.namespace ?? routeNs;
      const exists = store.get("EgressNetwork", ns, ref.name) !== undefined;
      return {
        backend: { metadata: egressMeta(ref.name, ns, ref.port ?? port), queue: queue(cfg) },
        invalid: exists ? EGRESS_BACKEND_SERVICE_PARENT : `EgressNetwork not found ${ref.name}`,
      };
    },
  };
}

/** A TLSRoute or TCPRoute attached to a Service port, converted as the Service's policy sends it. */
export function outboundL4Route(
  store: PolicyStore,
  kind: "TLSRoute" | "TCPRoute",
  route: TlsRoute | TcpRoute,
  svc: Service,
  port: number,
  cfg: PolicyConfig,
) {
  const parent = serviceL4Parent(store, svc, port, cfg);
  return kind === "TLSRoute" ? l4TlsRoute(parent, route as TlsRoute) : l4TcpRoute(parent, route as TcpRoute);
}

const ALL = { headers: [], queryParams: [] };

/** Linkerd's fallback: forward to the original destination, detecting HTTP. */
export function fallbackPolicy(addr: TcpAddress, cfg: PolicyConfig): OutboundPolicy {
  const backend = forwardBackend(addr, cfg);
  const meta: Metadata = { kind: { $case: "default", value: "egress-fallback" } };
  const http: ProtoHttpRoute = {
    metadata: meta,
    hosts: [],
    rules: [{
      matches: [ALL],
      filters: [],
      backends: { kind: { $case: "firstAvailable", value: { backends: [{ backend, filters: [] }] } } },
      allowL5dRequestHeaders: false,
    }],
  };
  return {
    metadata: meta,
    protocol: {
      kind: {
        $case: "detect",
        value: {
          timeout: durationFromMs(cfg.detectTimeoutMs),
          opaque: { routes: [opaqueRoute(meta, backend)] },
          http1: { routes: [http] },
          http2: { routes: [http] },
        },
      },
    },
  };
}

function opaqueRoute(meta: Metadata, backend: Backend): OpaqueRoute {
  return {
    metadata: meta,
    rules: [{
      backends: { kind: { $case: "firstAvailable", value: { backends: [{ backend, filters: [] }] } } },
      filters: [],
    }],
  };
}

/** Whether a route's parentRef names this Service port. */
export function routeAttachesToService(
  route: { metadata: { namespace?: string }; spec?: { parentRefs?: ObjectRef[] } },
  svc: Service,
  port: number | undefined,
): boolean {
  return (route.spec?.parentRefs ?? []).some((p) =>
    isServiceRef(p) && p.name === svc.metadata.name &&
    (p.namespace ?? route.metadata.namespace) === svc.metadata.namespace &&
    (port === undefined || p.port === undefined || p.port === port)
  );
}

/**
 * Routes for a Service port: consumer routes in the client's namespace win over the Service's
 * own (producer) routes, as GAMMA specifies.
 */
function attached<T extends HttpRoute | GrpcRoute | TlsRoute | TcpRoute>(
  candidates: (ns: string) => Iterable<T>,
  svc: Service,
  port: number,
  srcNs: string | undefined,
): T[] {
  const svcNs = svc.metadata.namespace ?? "";
  const pick = (ns: string) =>
    [...candidates(ns)].filter((r) => routeAttachesToService(r, svc, port)).sort(routeOrder);
  if (srcNs && srcNs !== svcNs) {
    const consumer = pick(srcNs);
    if (consumer.length > 0) return consumer;
  }
  return pick(svcNs);
}

function backendFor(
  store: PolicyStore,
  ref: BackendRef,
  routeNs: string,
  cfg: PolicyConfig,
): { backend: Backend; problem?: string } {
  const problem = backendProblem(ref, routeNs, (ns, name) => store.service(ns, name) !== undefined);
  if (problem !== undefined) return { backend: invalidBackend(queue(cfg)), problem };
  return { backend: serviceBackend(ref.name, ref.namespace ?? routeNs, ref.port!, true, cfg) };
}

function httpFilters(filters: HttpRouteRule["filters"], field: string): HttpRoute_Filter[] {
  return (filters ?? []).map((f, j) => {
    const c = convertFilter(f, `${field}[${j}]`);
    switch (c.kind) {
      case "requestHeaderModifier":
        return { kind: { $case: "requestHeaderModifier", value: c.value } };
      case "responseHeaderModifier":
        return { kind: { $case: "responseHeaderModifier", value: c.value } };
      case "redirect":
        return { kind: { $case: "redirect", value: c.value } };
    }
  });
}

export function outboundHttpRoute(
  store: PolicyStore,
  group: string,
  route: HttpRoute,
  svc: Service,
  port: number,
  cfg: PolicyConfig,
): ProtoHttpRoute {
  const ns = route.metadata.namespace ?? "";
  const objs = [route, svc];
  const retry = httpRetry(objs);
  return {
    metadata: routeMetadata(group, "HTTPRoute", route),
    hosts: (route.spec?.hostnames ?? []).map(hostMatch),
    rules: (route.spec?.rules ?? []).map((rule, i) => {
      const backends = ruleBackends(
        store,
        svc,
        ns,
        port,
        cfg,
        rule.backendRefs,
        (ref, j) => httpFilters(ref.filters, `spec.rules[${i}].backendRefs[${j}].filters`),
        httpFailure,
      );
      return {
        matches: (rule.matches ?? []).map((m, j) => httpMatch(m, `spec.rules[${i}].matches[${j}]`)),
        filters: httpFilters(rule.filters, `spec.rules[${i}].filters`),
        backends,
        timeouts: routeTimeouts(objs, rule),
        retry,
        allowL5dRequestHeaders: cfg.allowL5dRequestHeaders,
      };
    }),
  };
}

/**
 * A rule's backend distribution, the same for HTTP and gRPC routes: the parent Service itself
 * when the rule names no backends, otherwise a weighted random pick over the named ones.
 */
function ruleBackends<F>(
  store: PolicyStore,
  svc: Service,
  routeNs: string,
  port: number,
  cfg: PolicyConfig,
  refs: BackendRef[] | undefined,
  refFilters: (ref: BackendRef, index: number) => F[],
  failure: (message: string) => NoInfer<F>,
) {
  if (!refs || refs.length === 0) {
    return {
      kind: {
        $case: "firstAvailable" as const,
        value: {
          backends: [{
            backend: serviceBackend(svc.metadata.name, svc.metadata.namespace ?? "", port, true, cfg),
            filters: [] as F[],
          }],
        },
      },
    };
  }
  return {
    kind: {
      $case: "randomAvailable" as const,
      value: {
        backends: refs.map((ref, j) => {
          const b = backendFor(store, ref, routeNs, cfg);
          let problem = b.problem, filters: F[] = [];
          if (problem === undefined) {
            try {
              filters = refFilters(ref, j);
            } catch (e) {
              problem = `unsupported backend filter: ${(e as Error).message}`;
            }
          }
          // As Linkerd: an unusable backend keeps its weight and fails its share of requests.
          const backend = problem === undefined
            ? { backend: b.backend, filters }
            : { backend: invalidBackend(queue(cfg)), filters: [failure(problem)] };
          return { weight: ref.weight ?? 1, backend };
        }),
      },
    },
  };
}

export function outboundGrpcRoute(
  store: PolicyStore,
  route: GrpcRoute,
  svc: Service,
  port: number,
  cfg: PolicyConfig,
): ProtoGrpcRoute {
  const ns = route.metadata.namespace ?? "";
  const objs = [route, svc];
  const retry = grpcRetry(objs);
  const filters = (list: RouteFilter[] | undefined, field: string): GrpcRoute_Filter[] =>
    (list ?? []).flatMap((f, j) => {
      const c = convertFilter(f, `${field}[${j}]`);
      return c.kind === "requestHeaderModifier"
        ? [{ kind: { $case: "requestHeaderModifier" as const, value: c.value } }]
        : [];
    });
  return {
    metadata: routeMetadata(GATEWAY_GROUP, "GRPCRoute", route),
    hosts: (route.spec?.hostnames ?? []).map(hostMatch),
    rules: (route.spec?.rules ?? []).map((rule, i) => {
      return {
        matches: (rule.matches ?? []).map((m, j) => grpcMatch(m, `spec.rules[${i}].matches[${j}]`)),
        filters: filters(rule.filters, `spec.rules[${i}].filters`),
        backends: ruleBackends(
          store,
          svc,
          ns,
          port,
          cfg,
          rule.backendRefs,
          (ref, j) => filters(ref.filters, `spec.rules[${i}].backendRefs[${j}].filters`),
          grpcFailure,
        ),
        timeouts: routeTimeouts(objs),
        retry,
        allowL5dRequestHeaders: cfg.allowL5dRequestHeaders,
      };
    }),
  };
}

function isOpaquePort(svc: Service, sp: ServicePort | undefined): boolean {
  const a = svc.metadata.annotations?.[Annotations.opaquePorts];
  if (sp?.appProtocol === "linkerd.io/opaque") return true;
  // Names in a Service's annotation are the Service's port names.
  return a !== undefined && sp !== undefined &&
    opaquePortsInclude(a, sp.port, (n) => svc.spec?.ports?.find((p) => p.name === n)?.port);
}

export function servicePolicy(
  store: PolicyStore,
  svc: Service,
  port: number,
  cfg: PolicyConfig,
  srcNs?: string,
): OutboundPolicy {
  const ns = svc.metadata.namespace ?? "";
  const name = svc.metadata.name;
  const meta = serviceMeta(name, ns, port);
  const backend = serviceBackend(name, ns, port, true, cfg);
  const sp = (svc.spec?.ports ?? []).find((p) => p.port === port);
  const accrual = failureAccrual(svc);

  const grpcRoutes = attached((n) => store.grpcRoutes(n), svc, port, srcNs)
    .flatMap((r) => convertOrSkip(() => outboundGrpcRoute(store, r, svc, port, cfg)));
  if (grpcRoutes.length > 0) {
    return {
      metadata: meta,
      protocol: { kind: { $case: "grpc", value: { routes: grpcRoutes, failureAccrual: accrual } } },
    };
  }
  const l4Parent = serviceL4Parent(store, svc, port, cfg);
  const tlsRoutes = () =>
    attached((n) => store.list<TlsRoute>("TLSRoute", n), svc, port, srcNs)
      .flatMap((r) => convertOrSkip(() => l4TlsRoute(l4Parent, r)));
  const tcpRoutes = () =>
    attached((n) => store.list<TcpRoute>("TCPRoute", n), svc, port, srcNs)
      .flatMap((r) => convertOrSkip(() => l4TcpRoute(l4Parent, r)));
  if (isOpaquePort(svc, sp)) {
    // As Linkerd: an opaque port is routed by its TCPRoutes, if any; other kinds do not apply.
    const tcp = tcpRoutes();
    return {
      metadata: meta,
      protocol: {
        kind: { $case: "opaque", value: { routes: tcp.length > 0 ? tcp : [opaqueRoute(meta, backend)] } },
      },
    };
  }
  const httpCandidates = (n: string) => [...store.httpRoutes(n)].map((x) => x.route);
  const groups = new Map<HttpRoute, string>();
  for (const n of new Set([ns, srcNs ?? ns])) {
    for (const r of store.httpRoutes(n)) groups.set(r.route, r.group);
  }
  let routes = attached(httpCandidates, svc, port, srcNs)
    .flatMap((r) =>
      convertOrSkip(() => outboundHttpRoute(store, groups.get(r) ?? GATEWAY_GROUP, r, svc, port, cfg))
    );
  // Without HTTP routes, a port with no appProtocol is routed by its TLSRoutes, else its
  // TCPRoutes (Linkerd's precedence); the Service itself is their parent, so no default route.
  if (routes.length === 0 && sp?.appProtocol !== "kubernetes.io/h2c" && sp?.appProtocol !== "http") {
    const tls = tlsRoutes();
    if (tls.length > 0) {
      return { metadata: meta, protocol: { kind: { $case: "tls", value: { routes: tls } } } };
    }
    const tcp = tcpRoutes();
    if (tcp.length > 0) {
      return { metadata: meta, protocol: { kind: { $case: "opaque", value: { routes: tcp } } } };
    }
  }
  if (routes.length === 0) {
    const objs = [svc];
    routes = [{
      metadata: { kind: { $case: "default", value: "http" } },
      hosts: [],
      rules: [{
        matches: [{ path: { kind: { $case: "prefix", value: "/" } }, headers: [], queryParams: [] }],
        filters: [],
        backends: { kind: { $case: "firstAvailable", value: { backends: [{ backend, filters: [] }] } } },
        timeouts: routeTimeouts(objs),
        retry: httpRetry(objs),
        allowL5dRequestHeaders: cfg.allowL5dRequestHeaders,
      }],
    }];
  }
  let protocol: ProxyProtocol;
  if (sp?.appProtocol === "kubernetes.io/h2c") {
    protocol = { kind: { $case: "http2", value: { routes, failureAccrual: accrual } } };
  } else if (sp?.appProtocol === "http") {
    protocol = { kind: { $case: "http1", value: { routes, failureAccrual: accrual } } };
  } else {
    protocol = {
      kind: {
        $case: "detect",
        value: {
          timeout: durationFromMs(cfg.detectTimeoutMs),
          opaque: { routes: [opaqueRoute(meta, backend)] },
          http1: { routes, failureAccrual: accrual },
          http2: { routes, failureAccrual: accrual },
        },
      },
    };
  }
  return { metadata: meta, protocol };
}

/**
 * Equal for two resolved targets exactly when their policies are equal in the current store: the
 * Service port, plus the client's namespace only when it has consumer routes for that port (without
 * them every client namespace gets the producer routes); or the fallback's address. Undefined for
 * egress, whose answer depends on the client in more ways.
 */
export function targetShareKey(store: PolicyStore, target: OutboundTarget): string | undefined {
  if (target.kind === "fallback") return `addr|${fromIpAddress(target.addr.ip!)}|${target.addr.port}`;
  if (target.kind === "egress") return undefined;
  const svc = target.service, svcNs = svc.metadata.namespace ?? "", srcNs = target.sourceNamespace;
  const attaches = (r: HttpRoute | GrpcRoute | TlsRoute | TcpRoute) =>
    routeAttachesToService(r, svc, target.port);
  const consumer = srcNs !== undefined && srcNs !== svcNs &&
    ([...store.httpRoutes(srcNs)].some((r) => attaches(r.route)) ||
      [...store.grpcRoutes(srcNs)].some(attaches) ||
      [...store.list<TlsRoute>("TLSRoute", srcNs)].some(attaches) ||
      [...store.list<TcpRoute>("TCPRoute", srcNs)].some(attaches));
  return `svc|${svcNs}/${svc.metadata.name}|${target.port}|${consumer ? srcNs : ""}`;
}

export function outboundPolicy(store: PolicyStore, cfg: PolicyConfig, spec: TrafficSpec): OutboundPolicy {
  const target = resolveTarget(store, cfg, spec);
  return policyForTarget(store, cfg, target);
}

export function policyForTarget(
  store: PolicyStore,
  cfg: PolicyConfig,
  target: OutboundTarget,
): OutboundPolicy {
  if (target.kind === "egress") {
    return egressPolicy(store, cfg, target.network, target.addr, target.sourceNamespace);
  }
  return target.kind === "service"
    ? servicePolicy(store, target.service, target.port, cfg, target.sourceNamespace)
    : fallbackPolicy(target.addr, cfg);
}
