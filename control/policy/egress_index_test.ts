import { assertEquals } from "./assert.ts";
import type {
  Backend,
  GrpcRoute,
  HttpRoute,
  OpaqueRoute,
  OutboundPolicy,
  TlsRoute,
  TrafficSpec,
} from "../../proto/gen/outbound.ts";
import type { Metadata } from "../../proto/gen/meta.ts";
import { toTcpAddress } from "../../proto/ip.ts";
import { defaultPolicyConfig } from "./config.ts";
import { outboundPolicy } from "./outbound_index.ts";
import type { EgressNetworkSpec, Kind, Obj, ObjectRef } from "./resources.ts";
import { grpcRoute, httpRoute, meta, service, storeWith } from "./testing.ts";

// Addresses from the documentation ranges: nothing is sent anywhere by these tests.
const EXT = "203.0.113.7";
const cfg = defaultPolicyConfig();
const GLOBAL = cfg.globalEgressNetworkNamespace;
const CLIENT_NS = "app";

const egressNet = (
  ns: string,
  name: string,
  spec: EgressNetworkSpec,
  created?: string,
): Obj<EgressNetworkSpec> => ({
  metadata: meta(ns, name, { created }),
  spec,
});
const enParent = (ns: string, name: string, port?: number): ObjectRef => ({
  group: "policy.linkerd.io",
  kind: "EgressNetwork",
  name,
  namespace: ns,
  port,
});
const l4Route = (ns: string, name: string, spec: Record<string, unknown>): Obj =>
  ({ metadata: { ...meta(ns, name), generation: 1 }, spec }) as Obj;
const spec = (ip: string, port: number, ns = CLIENT_NS): TrafficSpec => ({
  sourceWorkload: JSON.stringify({ ns, pod: "client" }),
  target: { $case: "addr", value: toTcpAddress(ip, port) },
});
const get = (objects: [Kind, Obj][], s: TrafficSpec) => outboundPolicy(storeWith(...objects), cfg, s);

function resource(p: { metadata?: { kind?: unknown } }) {
  const k = p.metadata?.kind as { $case: string; value: unknown } | undefined;
  return k;
}
function detect(p: OutboundPolicy) {
  const k = p.protocol?.kind;
  if (k?.$case !== "detect") throw new Error(`expected detect, got ${k?.$case}`);
  return k.value;
}
function first(r: { rules: { backends?: { kind?: unknown } }[] }, rule = 0): Backend {
  const d = r.rules[rule].backends?.kind as
    | { $case: "firstAvailable"; value: { backends: { backend?: Backend }[] } }
    | { $case: "randomAvailable"; value: { backends: { backend?: { backend?: Backend } }[] } };
  if (d.$case === "firstAvailable") return d.value.backends[0].backend!;
  return d.value.backends[0].backend!.backend!;
}
const enMeta = (ns: string, name: string, port: number): Metadata => ({
  kind: {
    $case: "resource" as const,
    value: { group: "policy.linkerd.io", kind: "EgressNetwork", name, namespace: ns, section: "", port },
  },
});

Deno.test("egress: an outside address under a global Allow EgressNetwork forwards, labelled with it", () => {
  const p = get([["EgressNetwork", egressNet(GLOBAL, "all", { trafficPolicy: "Allow" })]], spec(EXT, 443));
  assertEquals(p.metadata, enMeta(GLOBAL, "all", 443));
  const d = detect(p);
  const routes = d.http1!.routes;
  assertEquals(routes.length, 1);
  assertEquals(resource(routes[0]), { $case: "default", value: "http-egress-allow" });
  assertEquals(routes[0].rules[0].filters, []);
  const b = first(routes[0]);
  assertEquals(b.metadata, enMeta(GLOBAL, "all", 443));
  assertEquals(b.kind, {
    $case: "forward",
    value: { addr: toTcpAddress(EXT, 443), weight: 1, metricLabels: {} },
  });
  const opaque = d.opaque!.routes[0];
  assertEquals(resource(opaque), { $case: "default", value: "tcp-egress-allow" });
  assertEquals(opaque.rules[0].filters, []);
  assertEquals(first(opaque).kind, b.kind);
});

Deno.test("egress: Deny refuses unmatched HTTP with 403 and unmatched TCP as forbidden", () => {
  const p = get([["EgressNetwork", egressNet(GLOBAL, "all", { trafficPolicy: "Deny" })]], spec(EXT, 80));
  const d = detect(p);
  const http = d.http1!.routes.at(-1)!;
  assertEquals(resource(http), { $case: "default", value: "http-egress-deny" });
  assertEquals(http.rules[0].filters, [{
    kind: { $case: "failureInjector", value: { status: 403, message: "traffic not allowed" } },
  }]);
  const opaque = d.opaque!.routes[0];
  assertEquals(resource(opaque), { $case: "default", value: "tcp-egress-deny" });
  assertEquals(opaque.rules[0].filters, [{ kind: { $case: "forbidden", value: {} } }]);
});

Deno.test("egress: addresses inside the cluster networks keep the forward fallback", () => {
  const p = get(
    [["EgressNetwork", egressNet(GLOBAL, "all", { trafficPolicy: "Deny" })]],
    spec("10.1.2.3", 80),
  );
  assertEquals(p.metadata, { kind: { $case: "default", value: "egress-fallback" } });
});

Deno.test("egress: without an EgressNetwork the forward fallback applies", () => {
  const p = get([], spec(EXT, 80));
  assertEquals(p.metadata, { kind: { $case: "default", value: "egress-fallback" } });
});

Deno.test("egress: the client's namespace's EgressNetworks shadow the global ones, others are ignored", () => {
  const global = egressNet(GLOBAL, "global", { trafficPolicy: "Allow" });
  const own = egressNet(CLIENT_NS, "own", { trafficPolicy: "Deny" });
  const other = egressNet("elsewhere", "other", { trafficPolicy: "Deny" });
  assertEquals(
    get([["EgressNetwork", global], ["EgressNetwork", own]], spec(EXT, 80)).metadata,
    enMeta(CLIENT_NS, "own", 80),
  );
  assertEquals(
    get([["EgressNetwork", global], ["EgressNetwork", other]], spec(EXT, 80)).metadata,
    enMeta(GLOBAL, "global", 80),
  );
  // Linkerd looks only at the client's own namespace when it has any, even if none covers the address.
  const narrow = egressNet(CLIENT_NS, "narrow", {
    trafficPolicy: "Allow",
    networks: [{ cidr: "198.51.100.0/24" }],
  });
  assertEquals(
    get([["EgressNetwork", global], ["EgressNetwork", narrow]], spec(EXT, 80)).metadata,
    { kind: { $case: "default", value: "egress-fallback" } },
  );
});

Deno.test("egress: the most specific network wins, then the oldest, then by name; except is honoured", () => {
  const wide = egressNet(GLOBAL, "wide", { trafficPolicy: "Allow", networks: [{ cidr: "203.0.0.0/8" }] });
  const narrow = egressNet(GLOBAL, "narrow", {
    trafficPolicy: "Allow",
    networks: [{ cidr: "203.0.113.0/24" }],
  });
  assertEquals(
    get([["EgressNetwork", wide], ["EgressNetwork", narrow]], spec(EXT, 80)).metadata,
    enMeta(GLOBAL, "narrow", 80),
  );
  const young = egressNet(GLOBAL, "a-young", { trafficPolicy: "Allow" }, "2026-01-02T00:00:00Z");
  const old = egressNet(GLOBAL, "b-old", { trafficPolicy: "Allow" }, "2026-01-01T00:00:00Z");
  assertEquals(
    get([["EgressNetwork", young], ["EgressNetwork", old]], spec(EXT, 80)).metadata,
    enMeta(GLOBAL, "b-old", 80),
  );
  const b = egressNet(GLOBAL, "b", { trafficPolicy: "Allow" });
  const a = egressNet(GLOBAL, "a", { trafficPolicy: "Allow" });
  assertEquals(
    get([["EgressNetwork", b], ["EgressNetwork", a]], spec(EXT, 80)).metadata,
    enMeta(GLOBAL, "a", 80),
  );
  const except = egressNet(GLOBAL, "a-except", {
    trafficPolicy: "Allow",
    networks: [{ cidr: "203.0.113.0/24", except: [`${EXT}/32`] }],
  });
  assertEquals(
    get([["EgressNetwork", except], ["EgressNetwork", b]], spec(EXT, 80)).metadata,
    enMeta(GLOBAL, "b", 80),
  );
});

Deno.test("egress: an HTTPRoute on the EgressNetwork's port comes before the default route", () => {
  const en = egressNet(GLOBAL, "all", { trafficPolicy: "Deny" });
  const route = httpRoute(GLOBAL, "allow-get", {
    parentRefs: [enParent(GLOBAL, "all", 80)],
    rules: [{ matches: [{ path: { type: "PathPrefix", value: "/get" } }] }],
  });
  const otherPort = httpRoute(GLOBAL, "other-port", {
    parentRefs: [enParent(GLOBAL, "all", 8080)],
    rules: [{}],
  });
  const p = get(
    [["EgressNetwork", en], ["GatewayHTTPRoute", route], ["GatewayHTTPRoute", otherPort]],
    spec(EXT, 80),
  );
  const routes: HttpRoute[] = detect(p).http1!.routes;
  assertEquals(routes.map((r) => resource(r)), [
    {
      $case: "resource",
      value: {
        group: "gateway.networking.k8s.io",
        kind: "HTTPRoute",
        name: "allow-get",
        namespace: GLOBAL,
        section: "",
        port: 0,
      },
    },
    { $case: "default", value: "http-egress-deny" },
  ]);
  assertEquals(routes[0].rules[0].filters, []);
  assertEquals(first(routes[0]).kind, {
    $case: "forward",
    value: { addr: toTcpAddress(EXT, 80), weight: 1, metricLabels: {} },
  });
});

Deno.test("egress: route backends: the parent EgressNetwork forwards, another is invalid, a Service balances", () => {
  const en = egressNet(GLOBAL, "all", { trafficPolicy: "Allow" });
  const other = egressNet(GLOBAL, "other", { trafficPolicy: "Allow" });
  const svc = service(GLOBAL, "proxy-svc", { clusterIP: "10.96.0.50", ports: [{ port: 3128 }] });
  const route = httpRoute(GLOBAL, "r", {
    parentRefs: [enParent(GLOBAL, "all", 80)],
    rules: [{
      backendRefs: [
        { group: "policy.linkerd.io", kind: "EgressNetwork", name: "all" },
        { group: "policy.linkerd.io", kind: "EgressNetwork", name: "other" },
        { name: "proxy-svc", port: 3128 },
      ],
    }],
  });
  const p = get(
    [["EgressNetwork", en], ["EgressNetwork", other], ["Service", svc], ["GatewayHTTPRoute", route]],
    spec(EXT, 80),
  );
  const d = detect(p).http1!.routes[0].rules[0].backends!.kind!;
  if (d.$case !== "randomAvailable") throw new Error("weighted backends expected");
  const [same, wrong, balanced] = d.value.backends.map((b) => b.backend!);
  assertEquals(same.backend!.kind?.$case, "forward");
  assertEquals(same.filters, []);
  assertEquals(wrong.backend!.kind, undefined);
  assertEquals(wrong.filters[0].kind?.$case, "failureInjector");
  assertEquals(balanced.backend!.kind?.$case, "balancer");
});

Deno.test("egress: TLSRoutes make a TLS policy with SNI matches and the tls default route last", () => {
  const en = egressNet(GLOBAL, "all", { trafficPolicy: "Deny" });
  const tls = l4Route(GLOBAL, "allowed-sni", {
    parentRefs: [enParent(GLOBAL, "all", 443)],
    hostnames: ["api.example.com", "*.example.org"],
    rules: [{ backendRefs: [{ group: "policy.linkerd.io", kind: "EgressNetwork", name: "all" }] }],
  });
  const p = get([["EgressNetwork", en], ["TLSRoute", tls]], spec(EXT, 443));
  const k = p.protocol?.kind;
  if (k?.$case !== "tls") throw new Error(`expected tls, got ${k?.$case}`);
  const routes: TlsRoute[] = k.value.routes;
  assertEquals(routes.length, 2);
  assertEquals(routes[0].snis, [
    { match: { $case: "exact", value: "api.example.com" } },
    { match: { $case: "suffix", value: { reverseLabels: ["org", "example"] } } },
  ]);
  assertEquals(routes[0].rules[0].filters, []);
  assertEquals(first(routes[0]).kind?.$case, "forward");
  assertEquals(resource(routes[1]), { $case: "default", value: "tls-egress-deny" });
  assertEquals(routes[1].rules[0].filters, [{ kind: { $case: "forbidden", value: {} } }]);
});

Deno.test("egress: TCPRoutes make an opaque policy; a route without a port attaches to every port", () => {
  const en = egressNet(GLOBAL, "all", { trafficPolicy: "Allow" });
  const tcp = l4Route(GLOBAL, "db", { parentRefs: [enParent(GLOBAL, "all")], rules: [{}] });
  const p = get([["EgressNetwork", en], ["TCPRoute", tcp]], spec(EXT, 5432));
  const k = p.protocol?.kind;
  if (k?.$case !== "opaque") throw new Error(`expected opaque, got ${k?.$case}`);
  const routes: OpaqueRoute[] = k.value.routes;
  assertEquals(routes.map((r) => (resource(r)?.value as { name?: string }).name ?? resource(r)?.value), [
    "db",
    "tcp-egress-allow",
  ]);
  assertEquals(first(routes[0]).metadata, enMeta(GLOBAL, "all", 5432));
});

Deno.test("egress: GRPCRoutes make a gRPC policy; Deny answers PERMISSION_DENIED", () => {
  const en = egressNet(GLOBAL, "all", { trafficPolicy: "Deny" });
  const g = grpcRoute(GLOBAL, "rpc", {
    parentRefs: [enParent(GLOBAL, "all", 50051)],
    rules: [{ matches: [{ method: { service: "echo.Echo" } }] }],
  });
  const p = get([["EgressNetwork", en], ["GRPCRoute", g]], spec(EXT, 50051));
  const k = p.protocol?.kind;
  if (k?.$case !== "grpc") throw new Error(`expected grpc, got ${k?.$case}`);
  const routes: GrpcRoute[] = k.value.routes;
  assertEquals(resource(routes[1]), { $case: "default", value: "grpc-egress-deny" });
  assertEquals(routes[1].rules[0].filters, [{
    kind: { $case: "failureInjector", value: { code: 7, message: "traffic not allowed" } },
  }]);
});

Deno.test("egress: consumer routes in the client's namespace win over the global namespace's", () => {
  const en = egressNet(GLOBAL, "all", { trafficPolicy: "Allow" });
  const producer = httpRoute(GLOBAL, "producer", { parentRefs: [enParent(GLOBAL, "all", 80)], rules: [{}] });
  const consumer = httpRoute(CLIENT_NS, "consumer", {
    parentRefs: [enParent(GLOBAL, "all", 80)],
    rules: [{}],
  });
  const objs: [Kind, Obj][] = [["EgressNetwork", en], ["GatewayHTTPRoute", producer], [
    "GatewayHTTPRoute",
    consumer,
  ]];
  const names = (s: TrafficSpec) =>
    detect(get(objs, s)).http1!.routes.map((r) =>
      (resource(r)?.value as { name?: string }).name ?? "default"
    );
  assertEquals(names(spec(EXT, 80)), ["consumer", "default"]);
  assertEquals(names(spec(EXT, 80, "third")), ["producer", "default"]);
});
