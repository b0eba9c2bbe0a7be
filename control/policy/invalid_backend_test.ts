import { assertEquals } from "./assert.ts";
import { toTcpAddress } from "../../proto/ip.ts";
import { defaultPolicyConfig } from "./config.ts";
import { INVALID_BACKEND_GRPC_CODE } from "./invalid_backend.ts";
import { outboundPolicy } from "./outbound_index.ts";
import type { HttpRoute as HttpRouteObj, Kind, Obj } from "./resources.ts";
import { routeStatus } from "./route_status.ts";
import { grpcRoute, httpRoute, service, storeWith } from "./testing.ts";

const cfg = defaultPolicyConfig();
const NS = "shop";
const web = service(NS, "web", { clusterIP: "10.96.0.10", ports: [{ port: 80 }] });
const canary = service(NS, "canary", { clusterIP: "10.96.0.11", ports: [{ port: 80 }] });
// The generated message types, taken from the index's signature (tests stay off the proto/gen allowlist).
type OutboundPolicy = ReturnType<typeof outboundPolicy>;
type TrafficSpec = Parameters<typeof outboundPolicy>[2];
type Protocol = NonNullable<NonNullable<OutboundPolicy["protocol"]>["kind"]>;
type HttpRoute = Extract<Protocol, { $case: "http1" }>["value"]["routes"][number];
type ProtoGrpcRoute = Extract<Protocol, { $case: "grpc" }>["value"]["routes"][number];
const spec: TrafficSpec = {
  sourceWorkload: "",
  target: { $case: "addr", value: toTcpAddress("10.96.0.10", 80) },
};
const toWeb = [{ kind: "Service", name: "web", port: 80 }];

function routes(p: OutboundPolicy): HttpRoute[] {
  const k = p.protocol?.kind;
  if (k?.$case === "detect") return k.value.http1!.routes;
  throw new Error(`unexpected protocol ${k?.$case}`);
}
function grpcRoutes(p: OutboundPolicy): ProtoGrpcRoute[] {
  const k = p.protocol?.kind;
  if (k?.$case === "grpc") return k.value.routes;
  throw new Error(`unexpected protocol ${k?.$case}`);
}
/** Each weighted backend of the route's first rule as "weight kind filters". */
function backends(r: { rules: { backends?: { kind?: { $case: string; value: unknown } } }[] }): string[] {
  const d = r.rules[0].backends?.kind;
  if (d?.$case !== "randomAvailable") throw new Error(`distribution ${d?.$case}`);
  const list = (d.value as {
    backends: {
      weight: number;
      backend: {
        backend: { metadata?: { kind?: { $case: string; value: unknown } }; kind?: { $case: string } };
        filters: { kind?: { $case: string; value: { status?: number; code?: number; message?: string } } }[];
      };
    }[];
  }).backends;
  return list.map(({ weight, backend: { backend, filters } }) => {
    const meta = backend.metadata?.kind;
    const name = meta?.$case === "default" ? `default:${meta.value}` : (meta?.value as { name: string }).name;
    const fs = filters.map((f) =>
      f.kind?.$case === "failureInjector"
        ? `fail(${f.kind.value.status ?? f.kind.value.code}: ${f.kind.value.message})`
        : f.kind?.$case
    );
    return `${weight} ${name} ${backend.kind?.$case ?? "-"} [${fs.join(", ")}]`;
  });
}

const cases: [string, [Kind, Obj][], Record<string, unknown>[], string[]][] = [
  [
    "a backend of another kind fails its share with 500; the Service backend still routes",
    [["Service", canary]],
    [{ name: "canary", port: 80, weight: 9 }, { group: "example.com", kind: "Bucket", name: "b", weight: 1 }],
    ["9 canary balancer []", "1 default:invalid - [fail(500: unsupported backend type example.com Bucket)]"],
  ],
  [
    "a Service that does not exist",
    [],
    [{ name: "gone", port: 80 }],
    ["1 default:invalid - [fail(500: Service not found gone)]"],
  ],
  [
    "a Service backend without a port",
    [["Service", canary]],
    [{ name: "canary" }],
    ["1 default:invalid - [fail(500: missing port for backend Service canary)]"],
  ],
  [
    "a backend filter weft does not implement",
    [["Service", canary]],
    [{
      name: "canary",
      port: 80,
      filters: [{ type: "RequestMirror", requestMirror: { backendRef: { name: "x" } } }],
    }],
    [
      '1 default:invalid - [fail(500: unsupported backend filter: spec.rules[0].backendRefs[0].filters[0].type: filter "RequestMirror" is not supported)]',
    ],
  ],
  [
    "kind and group in any case are still a Service",
    [["Service", canary]],
    [{ group: "core", kind: "service", name: "canary", port: 80 }],
    ["1 canary balancer []"],
  ],
];
for (const [title, objs, refs, want] of cases) {
  Deno.test(`invalid backends (HTTP): ${title}`, () => {
    const r = httpRoute(NS, "r", { parentRefs: toWeb, rules: [{ backendRefs: refs as never }] });
    const p = outboundPolicy(storeWith(["Service", web], ...objs, ["GatewayHTTPRoute", r]), cfg, spec);
    assertEquals(backends(routes(p)[0]), want);
  });
}

Deno.test("invalid backends (gRPC): the failure is a gRPC status weft's proxy accepts", () => {
  const r = grpcRoute(NS, "g", {
    parentRefs: toWeb,
    rules: [{ backendRefs: [{ group: "example.com", kind: "Bucket", name: "b" }] }],
  });
  const p = outboundPolicy(storeWith(["Service", web], ["GRPCRoute", r]), cfg, spec);
  assertEquals(backends(grpcRoutes(p)[0]), [
    `1 default:invalid - [fail(${INVALID_BACKEND_GRPC_CODE}: unsupported backend type example.com Bucket)]`,
  ]);
});

Deno.test("a route with a rule filter weft does not implement is left out; its status says why", () => {
  for (const type of ["RequestMirror", "URLRewrite", "ExtensionRef"]) {
    const r = httpRoute(NS, "r", {
      parentRefs: toWeb,
      rules: [{ filters: [{ type }] as never, backendRefs: [{ name: "web", port: 80 }] }],
    });
    const store = storeWith(["Service", web], ["GatewayHTTPRoute", r]);
    const p = outboundPolicy(store, cfg, spec);
    // Only the default route: the route was skipped, as Linkerd skips a route it cannot convert.
    assertEquals(routes(p).map((x) => x.metadata?.kind?.$case), ["default"], type);
    const st = routeStatus(store, cfg, "GatewayHTTPRoute", r as HttpRouteObj, "2026-01-01T00:00:00Z");
    assertEquals(st[0].conditions.map((c) => `${c.type}=${c.status}:${c.reason}`), [
      "Accepted=False:UnsupportedValue",
      "ResolvedRefs=True:ResolvedRefs",
    ]);
  }
});

Deno.test("ResolvedRefs judges backends in order, as Linkerd: the first problem decides", () => {
  const st = (refs: Record<string, unknown>[]) =>
    routeStatus(
      storeWith(["Service", web]),
      cfg,
      "GatewayHTTPRoute",
      httpRoute(NS, "r", { parentRefs: toWeb, rules: [{ backendRefs: refs as never }] }) as HttpRouteObj,
      "2026-01-01T00:00:00Z",
    )[0].conditions.find((c) => c.type === "ResolvedRefs")?.reason;
  assertEquals(
    st([{ name: "gone", port: 80 }, { kind: "Bucket", group: "x.io", name: "b" }]),
    "BackendNotFound",
  );
  assertEquals(st([{ kind: "Bucket", group: "x.io", name: "b" }, { name: "gone", port: 80 }]), "InvalidKind");
  assertEquals(st([{ name: "web", port: 80 }]), "ResolvedRefs");
});
