import assert from "node:assert/strict";
import { assertEquals } from "./assert.ts";
import { defaultPolicyConfig } from "./config.ts";
import { routeAttachesToServer, serverAuthzs } from "./inbound_index.ts";
import { routeAttachesToService } from "./outbound_index.ts";
import {
  asciiEqualFold,
  canonicalKind,
  isNamespaceRef,
  isServerRef,
  isServiceBackendRef,
  isServiceRef,
  refGroupIs,
  refTargets,
} from "./ref_kind.ts";
import type { HttpRoute, Server } from "./resources.ts";
import { routeStatus } from "./route_status.ts";
import { authorizationPolicy, httpRoute, namespace, server, service, storeWith } from "./testing.ts";

const NS = "emojivoto";
const cfg = defaultPolicyConfig();

Deno.test("asciiEqualFold folds ASCII letters only", () => {
  assert(asciiEqualFold("HttpRoute", "HTTPRoute"));
  assert(asciiEqualFold("server", "Server"));
  assert(!asciiEqualFold("Servers", "Server"));
  // U+212A KELVIN SIGN lowercases to "k" in Unicode, but is not ASCII: not equal.
  assert(!asciiEqualFold("\u212Aind", "kind"));
});

Deno.test("group: unset, empty and core (any case) are the core group; others ignore case", () => {
  for (const g of [undefined, "", "core", "CORE", "Core"]) assert(refGroupIs(g, ""), String(g));
  assert(refGroupIs("", "core"));
  assert(refGroupIs("Policy.Linkerd.IO", "policy.linkerd.io"));
  assert(!refGroupIs("", "policy.linkerd.io"));
  assert(!refGroupIs("apps", ""));
});

Deno.test("refTargets: kind ignores case; an unset kind names nothing unless the field has a default", () => {
  assert(isServerRef({ group: "policy.linkerd.io", kind: "server" }));
  assert(isServerRef({ group: "POLICY.LINKERD.IO", kind: "SERVER" }));
  assert(!isServerRef({ kind: "Server" }), "a Server ref needs its group");
  assert(isServiceRef({ kind: "service" }));
  assert(isServiceRef({ group: "core", kind: "SERVICE" }));
  assert(!isServiceRef({}), "a parentRef without a kind names nothing");
  assert(isServiceBackendRef({}), "a backendRef without a kind is a Service");
  assert(isServiceBackendRef({ group: "Core", kind: "service" }));
  assert(!isServiceBackendRef({ group: "example.com", kind: "Service" }));
  assert(isNamespaceRef({ kind: "namespace" }));
  assert(!refTargets({ kind: "Server" }, "policy.linkerd.io", "HTTPRoute"));
  assertEquals(canonicalKind({ group: "example.com", kind: "Bucket" }), "Bucket.example.com");
  assertEquals(canonicalKind({ kind: "Service" }), "Service");
});

const srv = server(NS, "web-http", { podSelector: { matchLabels: { app: "web" } }, port: 8080 }) as Server;
const svc = service(NS, "web-svc", { clusterIP: "10.96.0.10", ports: [{ port: 80 }] });

Deno.test("routes attach to a Server or Service parent named in any case", () => {
  const toServer = httpRoute(NS, "a", {
    parentRefs: [{ group: "Policy.Linkerd.io", kind: "server", name: "web-http" }],
  });
  assert(routeAttachesToServer(toServer, srv));
  const toService = httpRoute(NS, "b", { parentRefs: [{ group: "CORE", kind: "service", name: "web-svc" }] });
  assert(routeAttachesToService(toService, svc, 80));
  const wrongGroup = httpRoute(NS, "c", {
    parentRefs: [{ group: "example.com", kind: "Server", name: "web-http" }],
  });
  assert(!routeAttachesToServer(wrongGroup, srv));
});

Deno.test("AuthorizationPolicy targets in any case: server and namespace", () => {
  const store = storeWith(
    ["Namespace", namespace(NS)],
    ["Server", srv],
    [
      "AuthorizationPolicy",
      authorizationPolicy(NS, "by-server", {
        targetRef: { group: "policy.linkerd.io", kind: "server", name: "web-http" },
        requiredAuthenticationRefs: [],
      }),
    ],
    [
      "AuthorizationPolicy",
      authorizationPolicy(NS, "by-ns", {
        targetRef: { kind: "NAMESPACE", name: NS },
        requiredAuthenticationRefs: [],
      }),
    ],
  );
  const names = serverAuthzs(store, srv, cfg).map((a) => a.labels.name).sort();
  assertEquals(names, ["by-ns", "by-server"]);
});

Deno.test("route status: lower-case parent and backend kinds are served and resolved", () => {
  const store = storeWith(["Service", svc]);
  const route = httpRoute(NS, "r", {
    parentRefs: [{ group: "core", kind: "service", name: "web-svc", port: 80 }],
    rules: [{ backendRefs: [{ group: "CORE", kind: "SERVICE", name: "web-svc", port: 80 }] }],
  });
  const st = routeStatus(store, cfg, "GatewayHTTPRoute", route as HttpRoute, "2026-01-01T00:00:00Z");
  assertEquals(st.length, 1);
  assertEquals(st[0].conditions.map((c) => `${c.type}=${c.status}`), ["Accepted=True", "ResolvedRefs=True"]);
});
