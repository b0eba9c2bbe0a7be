// A Service's outbound policy with TLSRoutes and TCPRoutes attached (issue 24), as Linkerd's
// controller builds it: protocol Tls or Opaque with the routes and nothing appended, precedence
// gRPC > HTTP > TLS > TCP, Service backendRefs as balancers, refused backends kept at their weight.
import { assertEquals } from "./assert.ts";
import { toTcpAddress } from "../../proto/ip.ts";
import { defaultPolicyConfig } from "./config.ts";
import {
  EGRESS_BACKEND_SERVICE_PARENT,
  outboundPolicy,
  resolveTarget,
  targetShareKey,
} from "./outbound_index.ts";
import type { Kind, Obj } from "./resources.ts";

type OutboundPolicy = ReturnType<typeof outboundPolicy>;
type TrafficSpec = Parameters<typeof outboundPolicy>[2];
import { httpRoute, meta, service, storeWith } from "./testing.ts";

const cfg = defaultPolicyConfig();
const NS = "shop";
const CLIENT = '{"ns":"shop","pod":"client"}';
const db = (annotations?: Record<string, string>, appProtocol?: string) =>
  service(NS, "db", {
    clusterIP: "10.96.0.20",
    ports: [{ port: 443 }, { port: 5432, ...(appProtocol ? { appProtocol } : {}) }],
  }, annotations);
const dbBackend = service(NS, "db-backend", { clusterIP: "10.96.0.21", ports: [{ port: 8443 }] });
const egressNet: Obj = {
  metadata: meta("linkerd-egress", "internet"),
  spec: { trafficPolicy: "Allow" },
};
const route = (ns: string, name: string, spec: Record<string, unknown>, created?: string): Obj => ({
  metadata: { ...meta(ns, name, { created }), generation: 1 },
  spec,
});
const parent = (port?: number) => ({ kind: "Service", name: "db", ...(port ? { port } : {}) });
const to = (port: number, src = CLIENT): TrafficSpec => ({
  sourceWorkload: src,
  target: { $case: "addr", value: toTcpAddress("10.96.0.20", port) },
});
const get = (objects: [Kind, Obj][], spec: TrafficSpec) => outboundPolicy(storeWith(...objects), cfg, spec);

const queue = { capacity: 100, failfastTimeout: { seconds: 3n, nanos: 0 } };
const svcMeta = (name: string, port: number) => ({
  kind: {
    $case: "resource" as const,
    value: { group: "core", kind: "Service", name, namespace: NS, section: "", port },
  },
});
const balancer = (name: string, port: number) => ({
  metadata: svcMeta(name, port),
  queue,
  kind: {
    $case: "balancer" as const,
    value: {
      discovery: {
        kind: { $case: "dst" as const, value: { path: `${name}.${NS}.svc.cluster.local:${port}` } },
      },
      load: {
        $case: "peakEwma" as const,
        value: { defaultRtt: { seconds: 0n, nanos: 30_000_000 }, decay: { seconds: 10n, nanos: 0 } },
      },
    },
  },
});
const routeMeta = (kind: string, name: string, ns = NS) => ({
  kind: {
    $case: "resource" as const,
    value: { group: "gateway.networking.k8s.io", kind, name, namespace: ns, section: "", port: 0 },
  },
});
/** The rule of a route without backendRefs: the parent Service's own port. */
const toParent = (port: number) => ({
  backends: {
    kind: {
      $case: "firstAvailable" as const,
      value: { backends: [{ backend: balancer("db", port), filters: [] }] },
    },
  },
  filters: [],
});
const caseOf = (p: OutboundPolicy) => p.protocol?.kind?.$case;
const routeNames = (p: OutboundPolicy): string[] => {
  const k = p.protocol?.kind;
  const routes = k?.$case === "tls" || k?.$case === "opaque" ? k.value.routes : [];
  return routes.map((r) => {
    const m = r.metadata?.kind;
    return m?.$case === "resource" ? `${m.value.kind}/${m.value.name}` : `default/${m?.value}`;
  });
};

Deno.test("TLSRoute on a Service port: protocol tls with the route's SNIs and backends, nothing appended", () => {
  const tls = route(NS, "api", {
    parentRefs: [parent(443)],
    hostnames: ["api.example.test", "*.internal.test"],
    rules: [{
      backendRefs: [
        { name: "db-backend", port: 8443, weight: 3 },
        { name: "gone", port: 8443 },
        { group: "policy.linkerd.io", kind: "EgressNetwork", name: "internet", namespace: "linkerd-egress" },
      ],
    }],
  });
  const p = get(
    [["Service", db()], ["Service", dbBackend], ["EgressNetwork", egressNet], ["TLSRoute", tls]],
    to(443),
  );
  assertEquals(p, {
    metadata: svcMeta("db", 443),
    protocol: {
      kind: {
        $case: "tls",
        value: {
          routes: [{
            metadata: routeMeta("TLSRoute", "api"),
            snis: [
              { match: { $case: "exact", value: "api.example.test" } },
              { match: { $case: "suffix", value: { reverseLabels: ["test", "internal"] } } },
            ],
            rules: [{
              backends: {
                kind: {
                  $case: "randomAvailable",
                  value: {
                    backends: [
                      { weight: 3, backend: { backend: balancer("db-backend", 8443), filters: [] } },
                      {
                        // As Linkerd: a missing Service keeps its metadata and weight and refuses connections.
                        weight: 1,
                        backend: {
                          backend: { metadata: svcMeta("gone", 8443), queue },
                          filters: [{
                            kind: { $case: "invalid", value: { message: "Service not found gone" } },
                          }],
                        },
                      },
                      {
                        weight: 1,
                        backend: {
                          backend: {
                            metadata: {
                              kind: {
                                $case: "resource",
                                value: {
                                  group: "policy.linkerd.io",
                                  kind: "EgressNetwork",
                                  name: "internet",
                                  namespace: "linkerd-egress",
                                  section: "",
                                  port: 443,
                                },
                              },
                            },
                            queue,
                          },
                          filters: [{
                            kind: { $case: "invalid", value: { message: EGRESS_BACKEND_SERVICE_PARENT } },
                          }],
                        },
                      },
                    ],
                  },
                },
              },
              filters: [],
            }],
          }],
        },
      },
    },
  });
});

Deno.test("TCPRoute without backendRefs on a Service port: protocol opaque, its rule goes to the Service port", () => {
  const tcp = route(NS, "pg", { parentRefs: [parent(5432)], rules: [{}] });
  assertEquals(get([["Service", db()], ["TCPRoute", tcp]], to(5432)), {
    metadata: svcMeta("db", 5432),
    protocol: {
      kind: {
        $case: "opaque",
        value: { routes: [{ metadata: routeMeta("TCPRoute", "pg"), rules: [toParent(5432)] }] },
      },
    },
  });
  // A route on another port does not attach; one without a port attaches to every port.
  assertEquals(caseOf(get([["Service", db()], ["TCPRoute", tcp]], to(443))), "detect");
  const any = route(NS, "any", { parentRefs: [parent()], rules: [{}] });
  assertEquals(routeNames(get([["Service", db()], ["TCPRoute", any]], to(443))), ["TCPRoute/any"]);
});

Deno.test("precedence on one Service port: gRPC > HTTP > TLS > TCP; routes of a kind oldest first", () => {
  const tls1 = route(NS, "b-tls", { parentRefs: [parent(443)], rules: [{}] }, "2026-01-02T00:00:00Z");
  const tls2 = route(NS, "a-tls", { parentRefs: [parent(443)], rules: [{}] }, "2026-01-03T00:00:00Z");
  const tcp = route(NS, "tcp", { parentRefs: [parent(443)], rules: [{}] });
  const http = httpRoute(NS, "web", { parentRefs: [parent(443)], rules: [{}] });
  const objs: [Kind, Obj][] = [["Service", db()], ["TLSRoute", tls1], ["TLSRoute", tls2], ["TCPRoute", tcp]];
  const p = get(objs, to(443));
  assertEquals(caseOf(p), "tls");
  assertEquals(routeNames(p), ["TLSRoute/b-tls", "TLSRoute/a-tls"]);
  assertEquals(routeNames(get([["Service", db()], ["TCPRoute", tcp]], to(443))), ["TCPRoute/tcp"]);
  const withHttp = get([...objs, ["GatewayHTTPRoute", http]], to(443));
  assertEquals(caseOf(withHttp), "detect");
  const k = withHttp.protocol?.kind;
  if (k?.$case !== "detect") throw new Error("detect expected");
  assertEquals(
    k.value.http1!.routes.map((r) =>
      r.metadata?.kind?.$case === "resource" ? r.metadata.kind.value.name : ""
    ),
    ["web"],
  );
});

Deno.test("opaque port: its TCPRoutes route it, TLSRoutes do not; an HTTP appProtocol ignores both", () => {
  const tcp = route(NS, "pg", { parentRefs: [parent(5432)], rules: [{}] });
  const tls = route(NS, "pg-tls", { parentRefs: [parent(5432)], rules: [{}] });
  const opaque = db({ "config.linkerd.io/opaque-ports": "5432" });
  const p = get([["Service", opaque], ["TCPRoute", tcp], ["TLSRoute", tls]], to(5432));
  assertEquals(caseOf(p), "opaque");
  assertEquals(routeNames(p), ["TCPRoute/pg"]);
  // Without TCPRoutes: weft's one default opaque route, named by the Service.
  assertEquals(routeNames(get([["Service", opaque], ["TLSRoute", tls]], to(5432))), ["Service/db"]);
  const h1 = db(undefined, "http");
  assertEquals(caseOf(get([["Service", h1], ["TCPRoute", tcp], ["TLSRoute", tls]], to(5432))), "http1");
});

Deno.test("consumer TCPRoutes: a client namespace's own route wins there only, and its policy is not shared", () => {
  const producer = route(NS, "producer", { parentRefs: [parent(5432)], rules: [{}] });
  const consumer = route("billing", "consumer", {
    parentRefs: [{ ...parent(5432), namespace: NS }],
    rules: [{}],
  });
  const objs: [Kind, Obj][] = [["Service", db()], ["TCPRoute", producer], ["TCPRoute", consumer]];
  const billing = '{"ns":"billing","pod":"x"}', other = '{"ns":"other","pod":"y"}';
  assertEquals(routeNames(get(objs, to(5432, billing))), ["TCPRoute/consumer"]);
  assertEquals(routeNames(get(objs, to(5432, other))), ["TCPRoute/producer"]);
  const store = storeWith(...objs);
  const key = (src: string) => targetShareKey(store, resolveTarget(store, cfg, to(5432, src)));
  assertEquals(key(billing) === key(other), false);
  assertEquals(key(other), key(CLIENT));
});
