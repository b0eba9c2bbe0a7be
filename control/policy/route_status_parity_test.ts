import { assertEquals } from "./assert.ts";
import { defaultPolicyConfig } from "./config.ts";
import type { HttpRoute, Kind, Obj } from "./resources.ts";
import { routeStatus } from "./route_status.ts";
import { grpcRoute, httpRoute, server, service, storeWith } from "./testing.ts";

const cfg = defaultPolicyConfig();
const NS = "shop";
const NOW = "2026-01-01T00:00:00Z";
const srv = server(NS, "web-http", { podSelector: {}, port: 8080 });
const svc = service(NS, "web", { clusterIP: "10.96.0.10", ports: [{ port: 80 }] });
const headless = service(NS, "db", { clusterIP: "None", ports: [{ port: 5432 }] });

function status(objs: [Kind, Obj][], kind: "HTTPRoute" | "GatewayHTTPRoute" | "GRPCRoute", route: Obj) {
  return routeStatus(storeWith(...objs), cfg, kind, route as HttpRoute, NOW).map((p) => ({
    parentRef: p.parentRef,
    conditions: p.conditions.map((c) => `${c.type}=${c.status}:${c.reason}`),
  }));
}

Deno.test("status parentRef as Linkerd writes it: canonical group and kind, namespace filled in", () => {
  const r = httpRoute(NS, "r", {
    parentRefs: [
      { group: "policy.linkerd.io", kind: "server", name: "web-http", sectionName: "x" },
      { kind: "Service", name: "web", port: 80 },
      { group: "", kind: "SERVICE", name: "web" },
    ],
  });
  assertEquals(status([["Server", srv], ["Service", svc]], "GatewayHTTPRoute", r), [
    {
      parentRef: { group: "policy.linkerd.io", kind: "Server", namespace: NS, name: "web-http" },
      conditions: ["Accepted=True:Accepted"],
    },
    {
      parentRef: { group: "core", kind: "Service", namespace: NS, name: "web", port: 80 },
      conditions: ["Accepted=True:Accepted", "ResolvedRefs=True:ResolvedRefs"],
    },
    {
      parentRef: { group: "core", kind: "Service", namespace: NS, name: "web" },
      conditions: ["Accepted=True:Accepted", "ResolvedRefs=True:ResolvedRefs"],
    },
  ]);
});

Deno.test("Server parents get only Accepted, also on GRPCRoutes and with unresolved backends", () => {
  const g = grpcRoute(NS, "g", {
    parentRefs: [{ group: "policy.linkerd.io", kind: "Server", name: "web-http" }],
    rules: [{ backendRefs: [{ name: "gone", port: 80 }] }],
  });
  assertEquals(status([["Server", srv]], "GRPCRoute", g).map((p) => p.conditions), [[
    "Accepted=True:Accepted",
  ]]);
});

Deno.test("a headless Service parent is not accepted (NoMatchingParent), as Linkerd", () => {
  const r = httpRoute(NS, "r", { parentRefs: [{ kind: "Service", name: "db", port: 5432 }] });
  assertEquals(status([["Service", headless]], "GatewayHTTPRoute", r)[0].conditions, [
    "Accepted=False:NoMatchingParent",
    "ResolvedRefs=True:ResolvedRefs",
  ]);
});
