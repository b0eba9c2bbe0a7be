// Route status for TLSRoutes and TCPRoutes, and for routes of any kind with an EgressNetwork parent, as
// Linkerd's status controller writes them (issue 24): exact status objects, messages included.
import { assertEquals } from "./assert.ts";
import { defaultPolicyConfig } from "./config.ts";
import type { Kind, Obj, RouteParentStatus } from "./resources.ts";
import {
  type AnyRoute,
  CONFLICTED_REASON,
  mergedStatus,
  type RouteKind,
  routeStatus,
  RouteStatusWriter,
} from "./route_status.ts";
import { PolicyStore } from "./store.ts";
import { grpcRoute, httpRoute, meta, server, service, storeWith } from "./testing.ts";

const cfg = defaultPolicyConfig();
const NS = "shop";
const NOW = "2026-01-01T00:00:00Z";
const CONTROLLER = cfg.controllerName;

const svc = service(NS, "db", { clusterIP: "10.96.0.20", ports: [{ port: 5432 }] });
const backend = service(NS, "db-backend", { clusterIP: "10.96.0.21", ports: [{ port: 5432 }] });
const srv = server(NS, "db-tcp", { podSelector: {}, port: 5432 });
const egressNet = (name: string, cidr?: string): Obj => ({
  metadata: meta(NS, name),
  spec: { trafficPolicy: "Allow", ...(cidr ? { networks: [{ cidr }] } : {}) },
});
const open = egressNet("internet");
// Overlaps the cluster networks, so its own status is not Accepted.
const clashing = egressNet("clash", "10.0.0.0/8");

const l4 = (name: string, spec: Record<string, unknown>): Obj => ({
  metadata: { ...meta(NS, name), generation: 2 },
  spec,
});
const enParent = (name: string, port = 443) => ({
  group: "policy.linkerd.io",
  kind: "EgressNetwork",
  name,
  port,
});
const enBackend = (name: string) => ({ group: "policy.linkerd.io", kind: "EgressNetwork", name });

function accepted(message = "Route was valid") {
  return {
    type: "Accepted",
    status: "True" as const,
    reason: "Accepted",
    message,
    lastTransitionTime: NOW,
    observedGeneration: 2,
  };
}
function refused(reason: string, message: string) {
  return { ...accepted(), status: "False" as const, reason, message };
}
function resolved() {
  return { ...accepted(), type: "ResolvedRefs", reason: "ResolvedRefs", message: "Resolved all references" };
}
function unresolved(reason: string, message: string) {
  return { ...resolved(), status: "False" as const, reason, message };
}

function status(objs: [Kind, Obj][], kind: RouteKind, route: Obj): RouteParentStatus[] {
  return routeStatus(storeWith(...objs, [kind, route]), cfg, kind, route as AnyRoute, NOW);
}

Deno.test("TLSRoute with an EgressNetwork parent and no backends: Accepted and ResolvedRefs, parentRef as Linkerd writes it", () => {
  const r = l4("sni", { parentRefs: [enParent("internet")], hostnames: ["api.example.test"], rules: [{}] });
  assertEquals(status([["EgressNetwork", open]], "TLSRoute", r), [{
    parentRef: {
      group: "policy.linkerd.io",
      kind: "EgressNetwork",
      namespace: NS,
      name: "internet",
      port: 443,
    },
    controllerName: CONTROLLER,
    conditions: [accepted(), resolved()],
  }]);
});

Deno.test("TCPRoute with an EgressNetwork parent whose backend is that EgressNetwork: resolved", () => {
  const r = l4("tcp", {
    parentRefs: [{ ...enParent("internet", 5432), kind: "egressnetwork" }],
    rules: [{ backendRefs: [enBackend("internet")] }],
  });
  assertEquals(status([["EgressNetwork", open]], "TCPRoute", r), [{
    parentRef: {
      group: "policy.linkerd.io",
      kind: "EgressNetwork",
      namespace: NS,
      name: "internet",
      port: 5432,
    },
    controllerName: CONTROLLER,
    conditions: [accepted(), resolved()],
  }]);
});

Deno.test("EgressNetwork parent missing or not accepted: NoMatchingParent (Linkerd's message when not accepted)", () => {
  const missing = l4("a", { parentRefs: [enParent("nowhere")], rules: [{}] });
  assertEquals(status([], "TLSRoute", missing)[0].conditions, [
    refused("NoMatchingParent", `EgressNetwork ${NS}/nowhere not found`),
    resolved(),
  ]);
  const notAccepted = l4("b", { parentRefs: [enParent("clash", 5432)], rules: [{}] });
  assertEquals(status([["EgressNetwork", clashing]], "TCPRoute", notAccepted)[0].conditions, [
    refused("NoMatchingParent", "EgressNetwork parent has not been accepted"),
    resolved(),
  ]);
});

Deno.test("EgressNetwork backends: another EgressNetwork is InvalidKind, a missing one BackendNotFound", () => {
  const other = egressNet("other", "203.0.113.0/24");
  const wrong = l4("w", {
    parentRefs: [enParent("internet")],
    rules: [{ backendRefs: [enBackend("other")] }],
  });
  assertEquals(status([["EgressNetwork", open], ["EgressNetwork", other]], "TLSRoute", wrong)[0].conditions, [
    accepted(),
    unresolved(
      "InvalidKind",
      "EgressNetwork backend needs to be on a route that has an EgressNetwork parent",
    ),
  ]);
  const gone = l4("g", { parentRefs: [enParent("internet")], rules: [{ backendRefs: [enBackend("gone")] }] });
  assertEquals(status([["EgressNetwork", open]], "TLSRoute", gone)[0].conditions, [
    accepted(),
    unresolved("BackendNotFound", `backend EgressNetwork ${NS}/gone not found`),
  ]);
  // Under a Service parent even an existing EgressNetwork backend is InvalidKind, as in Linkerd.
  const onSvc = l4("s", {
    parentRefs: [{ kind: "Service", name: "db", port: 5432 }],
    rules: [{ backendRefs: [enBackend("internet")] }],
  });
  assertEquals(
    status([["Service", svc], ["EgressNetwork", open]], "TCPRoute", onSvc)[0].conditions[1],
    unresolved(
      "InvalidKind",
      "EgressNetwork backend needs to be on a route that has an EgressNetwork parent",
    ),
  );
});

Deno.test("HTTPRoute and GRPCRoute with an EgressNetwork parent get status too", () => {
  const h = httpRoute(NS, "h", {
    parentRefs: [enParent("internet", 80)],
    rules: [{ backendRefs: [{ ...enBackend("internet"), port: 8080 }] }],
  });
  assertEquals(status([["EgressNetwork", open]], "GatewayHTTPRoute", h), [{
    parentRef: {
      group: "policy.linkerd.io",
      kind: "EgressNetwork",
      namespace: NS,
      name: "internet",
      port: 80,
    },
    controllerName: CONTROLLER,
    conditions: [{ ...accepted(), observedGeneration: 1 }, { ...resolved(), observedGeneration: 1 }],
  }]);
  // A route the egress policy leaves out (an invalid regex) says why, as for Service parents.
  const g = grpcRoute(NS, "g", {
    parentRefs: [enParent("internet", 80)],
    rules: [{ matches: [{ method: { type: "RegularExpression", service: "(" } }] }],
  });
  const c = status([["EgressNetwork", open]], "GRPCRoute", g)[0].conditions;
  assertEquals([c[0].status, c[0].reason, c[1].reason], ["False", "UnsupportedValue", "ResolvedRefs"]);
});

Deno.test("TLSRoute and TCPRoute with a Service parent: accepted, with Linkerd's parentRef and ResolvedRefs", () => {
  const t = l4("svc-tls", {
    parentRefs: [{ kind: "Service", name: "db", port: 5432 }],
    rules: [{ backendRefs: [{ name: "db-backend", port: 5432 }, { name: "gone", port: 5432 }] }],
  });
  assertEquals(status([["Service", svc], ["Service", backend]], "TLSRoute", t), [{
    parentRef: { group: "core", kind: "Service", namespace: NS, name: "db", port: 5432 },
    controllerName: CONTROLLER,
    conditions: [accepted(), unresolved("BackendNotFound", `backend Service ${NS}/gone not found`)],
  }]);
  const c = l4("svc-tcp", { parentRefs: [{ kind: "Service", name: "db", port: 5432 }], rules: [{}] });
  assertEquals(status([["Service", svc]], "TCPRoute", c)[0].conditions, [accepted(), resolved()]);
  const headless = service(NS, "hl", { clusterIP: "None", ports: [{ port: 5432 }] });
  const h = l4("hl", { parentRefs: [{ kind: "Service", name: "hl", port: 5432 }], rules: [{}] });
  assertEquals(status([["Service", headless]], "TCPRoute", h)[0].conditions, [
    refused("NoMatchingParent", "parent service must have a ClusterIP"),
    resolved(),
  ]);
});

Deno.test("TLSRoute and TCPRoute with a Server parent: only Accepted, as Linkerd", () => {
  const t = l4("srv", {
    parentRefs: [{ group: "policy.linkerd.io", kind: "Server", name: "db-tcp" }],
    rules: [{ backendRefs: [{ name: "gone", port: 1 }] }],
  });
  assertEquals(status([["Server", srv]], "TCPRoute", t), [{
    parentRef: { group: "policy.linkerd.io", kind: "Server", namespace: NS, name: "db-tcp" },
    controllerName: CONTROLLER,
    conditions: [accepted()],
  }]);
  assertEquals(status([], "TLSRoute", t)[0].conditions, [
    refused("NoMatchingParent", `Server ${NS}/db-tcp not found`),
  ]);
});

Deno.test("conflicts as Linkerd: gRPC > HTTP > TLS > TCP on the same parent (port included)", () => {
  const tls = l4("tls", { parentRefs: [enParent("internet", 443)], rules: [{}] });
  const tcp = l4("tcp", { parentRefs: [enParent("internet", 443)], rules: [{}] });
  const tcpOther = l4("tcp-other", { parentRefs: [enParent("internet", 444)], rules: [{}] });
  const objs: [Kind, Obj][] = [["EgressNetwork", open], ["TLSRoute", tls], ["TCPRoute", tcpOther]];
  assertEquals(status(objs, "TCPRoute", tcp)[0].conditions, [
    refused(
      CONFLICTED_REASON,
      "a GRPCRoute or HTTPRoute or TLSRoute with the same parent takes precedence over this TCPRoute",
    ),
    resolved(),
  ]);
  assertEquals(status(objs, "TCPRoute", tcpOther)[0].conditions, [accepted(), resolved()]);
  assertEquals(status(objs, "TLSRoute", tls)[0].conditions, [accepted(), resolved()]);
  // An HTTPRoute in another namespace naming the same parent outranks the TLSRoute.
  const consumer = httpRoute("client", "h", {
    parentRefs: [{ ...enParent("internet", 443), namespace: NS }],
  });
  assertEquals(
    status([...objs, ["GatewayHTTPRoute", consumer]], "TLSRoute", tls)[0].conditions[0].reason,
    CONFLICTED_REASON,
  );
  // And a GRPCRoute outranks the HTTPRoute on a Service parent, which weft's Service policy honours too.
  const g = grpcRoute(NS, "g", { parentRefs: [{ kind: "Service", name: "db", port: 5432 }] });
  const h = httpRoute(NS, "h", { parentRefs: [{ kind: "Service", name: "db", port: 5432 }] });
  assertEquals(
    status([["Service", svc], ["GRPCRoute", g]], "GatewayHTTPRoute", h)[0].conditions[0],
    {
      ...refused(CONFLICTED_REASON, "a GRPCRoute with the same parent takes precedence over this HTTPRoute"),
      observedGeneration: 1,
    },
  );
});

Deno.test("mergedStatus keeps other controllers' parents next to a TLSRoute's", () => {
  const r = l4("sni", { parentRefs: [enParent("internet")], rules: [{}] });
  const ours = status([["EgressNetwork", open]], "TLSRoute", r);
  const theirs = { parentRef: { name: "gw" }, controllerName: "example.com/gateway", conditions: [] };
  assertEquals(mergedStatus({ parents: [theirs] }, ours, CONTROLLER), { parents: [theirs, ...ours] });
});

Deno.test("RouteStatusWriter writes TLSRoute and TCPRoute status, and rewrites a TCPRoute when a TLSRoute in another namespace takes its parent", async () => {
  const store = new PolicyStore();
  const patches: [string, string, string][] = [];
  const writer = new RouteStatusWriter(store, cfg, {
    patchStatus(kind, ns, name, st) {
      const parents = (st as { parents: RouteParentStatus[] }).parents;
      patches.push([kind, `${ns}/${name}`, parents.map((p) => p.conditions[0].reason).join()]);
      const cur = store.get<AnyRoute>(kind, ns, name)!;
      store.apply({
        type: "modified",
        kind,
        object: {
          ...cur,
          metadata: { ...cur.metadata, resourceVersion: `w${patches.length}` },
          status: st as never,
        },
      });
      return Promise.resolve();
    },
  }, { delayMs: 1 });
  const settle = () => new Promise((r) => setTimeout(r, 30));
  store.apply({ type: "added", kind: "EgressNetwork", object: open });
  store.apply({ type: "added", kind: "TCPRoute", object: l4("tcp", { parentRefs: [enParent("internet")] }) });
  await settle();
  assertEquals(patches, [["TCPRoute", `${NS}/tcp`, "Accepted"]]);
  const consumerTls: Obj = {
    metadata: { ...meta("client", "tls"), generation: 1 },
    spec: { parentRefs: [{ ...enParent("internet"), namespace: NS }] },
  };
  store.apply({ type: "added", kind: "TLSRoute", object: consumerTls });
  await settle();
  assertEquals(patches.slice(1).sort(), [
    ["TCPRoute", `${NS}/tcp`, CONFLICTED_REASON],
    ["TLSRoute", "client/tls", "Accepted"],
  ]);
  await settle();
  assertEquals(patches.length, 3);
  writer.close();
});
