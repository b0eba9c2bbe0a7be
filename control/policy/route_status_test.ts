import { assertEquals } from "./assert.ts";
import { defaultPolicyConfig } from "./config.ts";
import type { HttpRoute, Kind, Obj } from "./resources.ts";
import { mergedStatus, PROBE_CONDITION, routeStatus, RouteStatusWriter } from "./route_status.ts";
import { PolicyStore } from "./store.ts";
import { httpRoute, pod, server, service, storeWith } from "./testing.ts";

const cfg = defaultPolicyConfig();
const NS = "emojivoto";
const NOW = "2026-01-01T00:00:00Z";
const conds = (store: PolicyStore, kind: "HTTPRoute" | "GatewayHTTPRoute", r: Obj) =>
  routeStatus(store, cfg, kind, r as HttpRoute, NOW).map((p) =>
    p.conditions.map((c) => `${c.type}=${c.status}:${c.reason}`).join(" ")
  );

const probedPod = pod(NS, "web-1", { app: "web" }, {
  containers: [{
    name: "app",
    ports: [{ name: "http", containerPort: 8080 }],
    readinessProbe: { httpGet: { path: "/ready", port: "http" } },
  }],
});
const srv = server(NS, "web-http", { podSelector: { matchLabels: { app: "web" } }, port: "http" });
const toServer = { parentRefs: [{ group: "policy.linkerd.io", kind: "Server", name: "web-http" }] };
const toSvc = { parentRefs: [{ kind: "Service", name: "web-svc", port: 80 }] };
const svc = service(NS, "web-svc", { clusterIP: "10.96.0.10", ports: [{ port: 80 }] });

const cases: [string, [Kind, Obj][], "HTTPRoute" | "GatewayHTTPRoute", Obj, string[]][] = [
  [
    "Server parent with probes: accepted, and probes no longer authorized",
    [["Pod", probedPod], ["Server", srv]],
    "HTTPRoute",
    httpRoute(NS, "r", { ...toServer, rules: [{}] }),
    [`Accepted=True:Accepted ${PROBE_CONDITION}=False:ProbesNotAuthorized`],
  ],
  ["missing Server parent", [], "HTTPRoute", httpRoute(NS, "r", { ...toServer, rules: [{}] }), [
    "Accepted=False:NoMatchingParent",
  ]],
  [
    "invalid regex",
    [["Server", srv]],
    "HTTPRoute",
    httpRoute(NS, "r", {
      ...toServer,
      rules: [{ matches: [{ path: { type: "RegularExpression", value: "(" } }] }],
    }),
    ["Accepted=False:UnsupportedValue"],
  ],
  [
    "Service parent with a missing backend",
    [["Service", svc]],
    "GatewayHTTPRoute",
    httpRoute(NS, "r", { ...toSvc, rules: [{ backendRefs: [{ name: "gone", port: 80 }] }] }),
    ["Accepted=True:Accepted ResolvedRefs=False:BackendNotFound"],
  ],
  [
    "unsupported backend kind",
    [["Service", svc]],
    "GatewayHTTPRoute",
    httpRoute(NS, "r", {
      ...toSvc,
      rules: [{ backendRefs: [{ group: "example.com", kind: "Bucket", name: "b" }] }],
    }),
    ["Accepted=True:Accepted ResolvedRefs=False:InvalidKind"],
  ],
  [
    "a Gateway parent is not ours",
    [],
    "GatewayHTTPRoute",
    httpRoute(NS, "r", { parentRefs: [{ group: "gateway.networking.k8s.io", kind: "Gateway", name: "gw" }] }),
    [],
  ],
];
for (const [title, objects, kind, route, want] of cases) {
  Deno.test(`route status: ${title}`, () => {
    const store = storeWith(...objects, [kind, route]);
    assertEquals(conds(store, kind, route), want);
  });
}

Deno.test("mergedStatus keeps other controllers' parents and transition times; no write when unchanged", () => {
  const store = storeWith(["Service", svc]);
  const route = httpRoute(NS, "r", { ...toSvc, rules: [{}] }) as HttpRoute;
  const ours = routeStatus(store, cfg, "GatewayHTTPRoute", route, NOW);
  const other = {
    parentRef: { name: "gw", kind: "Gateway" },
    controllerName: "example.com/gw",
    conditions: [],
  };
  const merged = mergedStatus({ parents: [other] }, ours, cfg.controllerName)!;
  assertEquals(merged.parents!.map((p) => p.controllerName), ["example.com/gw", cfg.controllerName]);
  const later = routeStatus(store, cfg, "GatewayHTTPRoute", route, "2026-02-02T00:00:00Z");
  assertEquals(mergedStatus(merged, later, cfg.controllerName), undefined);
});

Deno.test("RouteStatusWriter patches once per change and not again for its own write", async () => {
  const store = new PolicyStore();
  const patches: [string, string, unknown][] = [];
  const writer = new RouteStatusWriter(store, cfg, {
    patchStatus(kind, ns, name, status) {
      patches.push([kind, `${ns}/${name}`, status]);
      // The API server echoes the write back as a MODIFIED event.
      const cur = store.get<HttpRoute>(kind, ns, name)!;
      store.apply({
        type: "modified",
        kind,
        object: {
          ...cur,
          metadata: { ...cur.metadata, resourceVersion: "w" + patches.length },
          status: status as HttpRoute["status"],
        },
      });
      return Promise.resolve();
    },
  }, { delayMs: 1 });
  store.apply({ type: "added", kind: "Service", object: svc });
  store.apply({
    type: "added",
    kind: "GatewayHTTPRoute",
    object: httpRoute(NS, "r", { ...toSvc, rules: [{ backendRefs: [{ name: "v2", port: 80 }] }] }),
  });
  await new Promise((r) => setTimeout(r, 30));
  assertEquals(patches.length, 1);
  store.apply({ type: "added", kind: "Service", object: service(NS, "v2", { ports: [{ port: 80 }] }) });
  await new Promise((r) => setTimeout(r, 30));
  assertEquals(patches.length, 2);
  const last = patches[1][2] as { parents: { conditions: { type: string; status: string }[] }[] };
  assertEquals(last.parents[0].conditions.map((c) => `${c.type}=${c.status}`), [
    "Accepted=True",
    "ResolvedRefs=True",
  ]);
  await new Promise((r) => setTimeout(r, 30));
  assertEquals(patches.length, 2);
  writer.close();
});
