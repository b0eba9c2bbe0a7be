/**
 * Outbound policy for traffic leaving the cluster, as Linkerd's egress feature: an address outside
 * the cluster networks that an EgressNetwork covers gets a policy whose parent is that
 * EgressNetwork, with the HTTPRoutes, GRPCRoutes, TLSRoutes or TCPRoutes attached to it, backends
 * that forward to the address the client dialled, and a last default route that lets unmatched
 * traffic through (`trafficPolicy: Allow`) or refuses it (`Deny`: HTTP 403, gRPC
 * PERMISSION_DENIED, a refused TLS or TCP connection).
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
  TlsRoute as ProtoTlsRoute,
} from "../../proto/gen/outbound.ts";
import type { TcpAddress } from "../../proto/gen/net.ts";
import type { IPNetwork } from "../../proto/gen/net.ts";
import type { PolicyConfig } from "./config.ts";
import { durationFromMs } from "./duration.ts";
import { networkContains, parseNetwork } from "./network_cidr.ts";
import { grpcRetry, httpRetry, routeTimeouts } from "./outbound_annotations.ts";
import type {
  BackendRef,
  EgressNetwork,
  GrpcRoute,
  HttpRoute,
  NetworkSpec,
  ObjectRef,
  RouteFilter,
  TcpRoute,
  TlsRoute,
} from "./resources.ts";
import { GATEWAY_GROUP, POLICY_GROUP } from "./resources.ts";
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
import { serviceRefBackend } from "./outbound_index.ts";
import { type L4Parent, l4TcpRoute, l4TlsRoute, type ResolvedBackend } from "./l4_routes.ts";

/** Linkerd's default for the namespace whose EgressNetworks apply to clients of every namespace. */
export const DEFAULT_GLOBAL_EGRESS_NETWORK_NAMESPACE = "linkerd-egress";

/** The values of an EgressNetwork's `spec.trafficPolicy`. */
export const TRAFFIC_POLICIES = ["Allow", "Deny"] as const;

/** Linkerd's message for traffic a Deny EgressNetwork refuses. */
export const EGRESS_DENIED_MESSAGE = "traffic not allowed";

const lower = (s: string | undefined) => (s ?? "").toLowerCase();

/** Whether a parentRef or backendRef names an EgressNetwork (group and kind compared as Linkerd: ignoring case). */
export function isEgressNetworkRef(ref: { group?: string; kind?: string } | undefined): boolean {
  return lower(ref?.group) === POLICY_GROUP && lower(ref?.kind) === "egressnetwork";
}

interface Block {
  net: IPNetwork;
  except: IPNetwork[];
}

/** An EgressNetwork's networks; unset means everything outside the cluster networks, per family. */
export function egressNetworkBlocks(en: EgressNetwork, clusterNetworks: string[]): NetworkSpec[] {
  if (en.spec?.networks) return en.spec.networks;
  const v6 = clusterNetworks.filter((c) => c.includes(":"));
  const v4 = clusterNetworks.filter((c) => !c.includes(":"));
  return [{ cidr: "0.0.0.0/0", except: v4 }, { cidr: "::/0", except: v6 }];
}

function compile(nets: NetworkSpec[]): Block[] {
  const out: Block[] = [];
  for (const n of nets) {
    try {
      out.push({ net: parseNetwork(n.cidr), except: (n.except ?? []).map(parseNetwork) });
    } catch {
      // The validator refuses bad networks; one that slipped through matches nothing.
    }
  }
  return out;
}

function hostNet(ip: string): IPNetwork {
  return parseNetwork(ip);
}

/** The prefix length of the most specific block containing `ip` (longer = smaller), if any. */
function matchPrefix(blocks: Block[], host: IPNetwork): number | undefined {
  let best: number | undefined;
  for (const b of blocks) {
    if (!networkContains(b.net, host)) continue;
    if (b.except.some((e) => networkContains(e, host))) continue;
    if (best === undefined || b.net.prefixLen > best) best = b.net.prefixLen;
  }
  return best;
}

/** Whether `ip` is in one of the cluster networks (pods and Services never count as egress). */
export function inClusterNetworks(ip: string, clusterNetworks: string[]): boolean {
  const host = hostNet(ip);
  return clusterNetworks.some((c) => {
    try {
      return networkContains(parseNetwork(c), host);
    } catch {
      return false;
    }
  });
}

/**
 * The EgressNetwork an address resolves to for a client namespace, as Linkerd picks it: only the
 * client's own namespace's EgressNetworks when it has any, else the global egress namespace's;
 * among those covering the address the most specific network wins, then the oldest, then the
 * first by namespace and name.
 */
export function resolveEgressNetwork(
  store: PolicyStore,
  cfg: PolicyConfig,
  ip: string,
  sourceNamespace: string | undefined,
): EgressNetwork | undefined {
  if (inClusterNetworks(ip, cfg.clusterNetworks)) return undefined;
  const own = sourceNamespace ? [...store.list<EgressNetwork>("EgressNetwork", sourceNamespace)] : [];
  const candidates = own.length > 0
    ? own
    : [...store.list<EgressNetwork>("EgressNetwork", cfg.globalEgressNetworkNamespace)];
  const host = hostNet(ip);
  let best: { en: EgressNetwork; prefix: number } | undefined;
  for (const en of candidates) {
    const prefix = matchPrefix(compile(egressNetworkBlocks(en, cfg.clusterNetworks)), host);
    if (prefix === undefined) continue;
    if (!best || better({ en, prefix }, best)) best = { en, prefix };
  }
  return best?.en;
}

function better(a: { en: EgressNetwork; prefix: number }, b: { en: EgressNetwork; prefix: number }): boolean {
  if (a.prefix !== b.prefix) return a.prefix > b.prefix;
  // A missing timestamp sorts first, as Linkerd's reversed Option ordering does.
  const ta = a.en.metadata.creationTimestamp ?? "", tb = b.en.metadata.creationTimestamp ?? "";
  if (ta !== tb) return ta < tb;
  const na = a.en.metadata.namespace ?? "", nb = b.en.metadata.namespace ?? "";
  if (na !== nb) return na < nb;
  return a.en.metadata.name < b.en.metadata.name;
}

/** Whether `route` attaches to EgressNetwork `en` for traffic to `port`. */
export function routeAttachesToEgressNetwork(
  route: { metadata: { namespace?: string }; spec?: { parentRefs?: ObjectRef[] } },
  en: EgressNetwork,
  port: number,
): boolean {
  return (route.spec?.parentRefs ?? []).some((p) =>
    isEgressNetworkRef(p) && p.name === en.metadata.name &&
    (p.namespace ?? route.metadata.namespace) === en.metadata.namespace &&
    (p.port === undefined || p.port === port)
  );
}

/** Routes of the EgressNetwork's namespace apply to every client; a client's own (consumer) routes win. */
function attached<T extends { metadata: { namespace?: string; name: string; creationTimestamp?: string } }>(
  list: (ns: string) => Iterable<T>,
  en: EgressNetwork,
  port: number,
  srcNs: string | undefined,
): T[] {
  const enNs = en.metadata.namespace ?? "";
  const pick = (ns: string) =>
    [...list(ns)].filter((r) => routeAttachesToEgressNetwork(r as never, en, port)).sort(routeOrder);
  if (srcNs && srcNs !== enNs) {
    const consumer = pick(srcNs);
    if (consumer.length > 0) return consumer;
  }
  return pick(enNs);
}

export function egressMeta(name: string, namespace: string, port: number): Metadata {
  return {
    kind: {
      $case: "resource",
      value: { group: POLICY_GROUP, kind: "EgressNetwork", name, namespace, section: "", port },
    },
  };
}

function queue(cfg: PolicyConfig) {
  return { capacity: cfg.backendQueueCapacity, failfastTimeout: durationFromMs(cfg.backendFailfastMs) };
}

/** Forwards to the address the client dialled, labelled with the EgressNetwork. */
function forwardBackend(en: EgressNetwork, addr: TcpAddress, port: number, cfg: PolicyConfig): Backend {
  return {
    metadata: egressMeta(en.metadata.name, en.metadata.namespace ?? "", port),
    queue: queue(cfg),
    kind: { $case: "forward", value: { addr, weight: 1, metricLabels: {} } },
  };
}

function resolveBackend(
  store: PolicyStore,
  ref: BackendRef,
  routeNs: string,
  en: EgressNetwork,
  addr: TcpAddress,
  cfg: PolicyConfig,
): ResolvedBackend<Backend> {
  if (isEgressNetworkRef(ref)) {
    const ns = ref.namespace ?? routeNs;
    const meta = egressMeta(ref.name, ns, ref.port ?? addr.port);
    if (ref.name === en.metadata.name && ns === en.metadata.namespace) {
      return { backend: { ...forwardBackend(en, addr, ref.port ?? addr.port, cfg), metadata: meta } };
    }
    const exists = store.get("EgressNetwork", ns, ref.name) !== undefined;
    return {
      backend: { metadata: meta, queue: queue(cfg) },
      invalid: exists
        ? "Route with EgressNetwork backend needs to have the same EgressNetwork as a parent"
        : `EgressNetwork not found ${ref.name}`,
    };
  }
  return serviceRefBackend(store, cfg, ref, routeNs, addr.port);
}

function httpFilters(filters: RouteFilter[] | undefined, field: string): HttpRoute_Filter[] {
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

function grpcFilters(filters: RouteFilter[] | undefined, field: string): GrpcRoute_Filter[] {
  return (filters ?? []).flatMap((f, j) => {
    const c = convertFilter(f, `${field}[${j}]`);
    return c.kind === "requestHeaderModifier"
      ? [{ kind: { $case: "requestHeaderModifier" as const, value: c.value } }]
      : [];
  });
}

interface Ctx {
  store: PolicyStore;
  cfg: PolicyConfig;
  en: EgressNetwork;
  addr: TcpAddress;
  port: number;
  deflt: Backend;
}

function egressHttpRoute(c: Ctx, group: string, route: HttpRoute): ProtoHttpRoute {
  const ns = route.metadata.namespace ?? "";
  const objs = [route];
  return {
    metadata: routeMetadata(group, "HTTPRoute", route),
    hosts: (route.spec?.hostnames ?? []).map(hostMatch),
    rules: (route.spec?.rules ?? []).map((rule, i) => {
      const refs = rule.backendRefs ?? [];
      return {
        matches: (rule.matches ?? []).map((m, j) => httpMatch(m, `spec.rules[${i}].matches[${j}]`)),
        filters: httpFilters(rule.filters, `spec.rules[${i}].filters`),
        backends: refs.length === 0
          ? { kind: { $case: "firstAvailable", value: { backends: [{ backend: c.deflt, filters: [] }] } } }
          : {
            kind: {
              $case: "randomAvailable",
              value: {
                backends: refs.map((ref, j) => {
                  const r = resolveBackend(c.store, ref, ns, c.en, c.addr, c.cfg);
                  const filters: HttpRoute_Filter[] = r.invalid
                    ? [{ kind: { $case: "failureInjector", value: { status: 500, message: r.invalid } } }]
                    : httpFilters(ref.filters, `spec.rules[${i}].backendRefs[${j}].filters`);
                  return { weight: ref.weight ?? 1, backend: { backend: r.backend, filters } };
                }),
              },
            },
          },
        timeouts: routeTimeouts(objs, rule),
        retry: httpRetry(objs),
        allowL5dRequestHeaders: c.cfg.allowL5dRequestHeaders,
      };
    }),
  };
}

function egressGrpcRoute(c: Ctx, route: GrpcRoute): ProtoGrpcRoute {
  const ns = route.metadata.namespace ?? "";
  const objs = [route];
  return {
    metadata: routeMetadata(GATEWAY_GROUP, "GRPCRoute", route),
    hosts: (route.spec?.hostnames ?? []).map(hostMatch),
    rules: (route.spec?.rules ?? []).map((rule, i) => {
      const refs = rule.backendRefs ?? [];
      return {
        matches: (rule.matches ?? []).map((m, j) => grpcMatch(m, `spec.rules[${i}].matches[${j}]`)),
        filters: grpcFilters(rule.filters, `spec.rules[${i}].filters`),
        backends: refs.length === 0
          ? { kind: { $case: "firstAvailable", value: { backends: [{ backend: c.deflt, filters: [] }] } } }
          : {
            kind: {
              $case: "randomAvailable",
              value: {
                backends: refs.map((ref, j) => {
                  const r = resolveBackend(c.store, ref, ns, c.en, c.addr, c.cfg);
                  const filters: GrpcRoute_Filter[] = r.invalid
                    // gRPC INTERNAL: the backend cannot be used.
                    ? [{ kind: { $case: "failureInjector", value: { code: 13, message: r.invalid } } }]
                    : grpcFilters(ref.filters, `spec.rules[${i}].backendRefs[${j}].filters`);
                  return { weight: ref.weight ?? 1, backend: { backend: r.backend, filters } };
                }),
              },
            },
          },
        timeouts: routeTimeouts(objs),
        retry: grpcRetry(objs),
        allowL5dRequestHeaders: c.cfg.allowL5dRequestHeaders,
      };
    }),
  };
}

/** The EgressNetwork as the parent of TLS and TCP routes. */
function l4Parent(c: Ctx): L4Parent<Backend> {
  return { deflt: c.deflt, resolve: (ref, ns) => resolveBackend(c.store, ref, ns, c.en, c.addr, c.cfg) };
}

function egressTlsRoute(c: Ctx, route: TlsRoute): ProtoTlsRoute {
  return l4TlsRoute(l4Parent(c), route);
}

function egressTcpRoute(c: Ctx, route: TcpRoute): OpaqueRoute {
  return l4TcpRoute(l4Parent(c), route);
}

/**
 * Why `route` would be left out of the policy of EgressNetwork `en` on `port` (its conversion
 * error), or undefined when it converts; for route status. The address only labels forward
 * backends, so a placeholder stands in for the one a client would dial.
 */
export function egressRouteProblem(
  store: PolicyStore,
  cfg: PolicyConfig,
  en: EgressNetwork,
  kind: "HTTPRoute" | "GatewayHTTPRoute" | "GRPCRoute" | "TLSRoute" | "TCPRoute",
  route: HttpRoute | GrpcRoute | TlsRoute | TcpRoute,
  port: number,
): string | undefined {
  const addr: TcpAddress = { port };
  const c: Ctx = { store, cfg, en, addr, port, deflt: forwardBackend(en, addr, port, cfg) };
  try {
    if (kind === "GRPCRoute") egressGrpcRoute(c, route as GrpcRoute);
    else if (kind === "TLSRoute") egressTlsRoute(c, route as TlsRoute);
    else if (kind === "TCPRoute") egressTcpRoute(c, route as TcpRoute);
    else egressHttpRoute(c, kind === "HTTPRoute" ? POLICY_GROUP : GATEWAY_GROUP, route as HttpRoute);
    return undefined;
  } catch (e) {
    return (e as Error).message;
  }
}

const deny = (en: EgressNetwork) => en.spec?.trafficPolicy !== "Allow";

function defaultName(proto: "http" | "grpc" | "tls" | "tcp", en: EgressNetwork): string {
  return `${proto}-egress-${deny(en) ? "deny" : "allow"}`;
}

function defaultHttpRoute(c: Ctx): ProtoHttpRoute {
  return {
    metadata: { kind: { $case: "default", value: defaultName("http", c.en) } },
    hosts: [],
    rules: [{
      matches: [{ path: { kind: { $case: "prefix", value: "/" } }, headers: [], queryParams: [] }],
      filters: deny(c.en)
        ? [{ kind: { $case: "failureInjector", value: { status: 403, message: EGRESS_DENIED_MESSAGE } } }]
        : [],
      backends: {
        kind: { $case: "firstAvailable", value: { backends: [{ backend: c.deflt, filters: [] }] } },
      },
      allowL5dRequestHeaders: c.cfg.allowL5dRequestHeaders,
    }],
  };
}

function defaultGrpcRoute(c: Ctx): ProtoGrpcRoute {
  return {
    metadata: { kind: { $case: "default", value: defaultName("grpc", c.en) } },
    hosts: [],
    rules: [{
      matches: [{ headers: [] }],
      // gRPC PERMISSION_DENIED (7), Linkerd's code for denied egress.
      filters: deny(c.en)
        ? [{ kind: { $case: "failureInjector", value: { code: 7, message: EGRESS_DENIED_MESSAGE } } }]
        : [],
      backends: {
        kind: { $case: "firstAvailable", value: { backends: [{ backend: c.deflt, filters: [] }] } },
      },
      allowL5dRequestHeaders: c.cfg.allowL5dRequestHeaders,
    }],
  };
}

function defaultL4Rule(c: Ctx) {
  return {
    backends: {
      kind: { $case: "firstAvailable" as const, value: { backends: [{ backend: c.deflt, filters: [] }] } },
    },
    filters: deny(c.en) ? [{ kind: { $case: "forbidden" as const, value: {} } }] : [],
  };
}

function defaultTlsRoute(c: Ctx): ProtoTlsRoute {
  return {
    metadata: { kind: { $case: "default", value: defaultName("tls", c.en) } },
    snis: [],
    rules: [defaultL4Rule(c)],
  };
}

function defaultTcpRoute(c: Ctx): OpaqueRoute {
  return {
    metadata: { kind: { $case: "default", value: defaultName("tcp", c.en) } },
    rules: [defaultL4Rule(c)],
  };
}

/**
 * The policy for `addr` under EgressNetwork `en`. The protocol follows the kinds of route
 * attached, in Linkerd's order: gRPC, then HTTP (detected), then TLS, then TCP; with none, HTTP
 * is detected and anything else is opaque.
 */
export function egressPolicy(
  store: PolicyStore,
  cfg: PolicyConfig,
  en: EgressNetwork,
  addr: TcpAddress,
  sourceNamespace: string | undefined,
): OutboundPolicy {
  const port = addr.port;
  const meta = egressMeta(en.metadata.name, en.metadata.namespace ?? "", port);
  const c: Ctx = { store, cfg, en, addr, port, deflt: forwardBackend(en, addr, port, cfg) };

  const grpc = attached((n) => store.list<GrpcRoute>("GRPCRoute", n), en, port, sourceNamespace)
    .flatMap((r) => convertOrSkip(() => egressGrpcRoute(c, r)));
  let protocol: ProxyProtocol;
  if (grpc.length > 0) {
    protocol = { kind: { $case: "grpc", value: { routes: [...grpc, defaultGrpcRoute(c)] } } };
    return { metadata: meta, protocol };
  }
  const groups = new Map<HttpRoute, string>();
  const httpList = (n: string) => {
    const out: HttpRoute[] = [];
    for (const { group, route } of store.httpRoutes(n)) {
      groups.set(route, group);
      out.push(route);
    }
    return out;
  };
  const http = attached(httpList, en, port, sourceNamespace)
    .flatMap((r) => convertOrSkip(() => egressHttpRoute(c, groups.get(r) ?? GATEWAY_GROUP, r)));
  const tls = attached((n) => store.list<TlsRoute>("TLSRoute", n), en, port, sourceNamespace)
    .flatMap((r) => convertOrSkip(() => egressTlsRoute(c, r)));
  const tcp = attached((n) => store.list<TcpRoute>("TCPRoute", n), en, port, sourceNamespace)
    .flatMap((r) => convertOrSkip(() => egressTcpRoute(c, r)));
  if (http.length === 0 && tls.length > 0) {
    protocol = { kind: { $case: "tls", value: { routes: [...tls, defaultTlsRoute(c)] } } };
  } else if (http.length === 0 && tcp.length > 0) {
    protocol = { kind: { $case: "opaque", value: { routes: [...tcp, defaultTcpRoute(c)] } } };
  } else {
    const routes = [...http, defaultHttpRoute(c)];
    protocol = {
      kind: {
        $case: "detect",
        value: {
          timeout: durationFromMs(cfg.detectTimeoutMs),
          opaque: { routes: [defaultTcpRoute(c)] },
          http1: { routes },
          http2: { routes },
        },
      },
    };
  }
  return { metadata: meta, protocol };
}
