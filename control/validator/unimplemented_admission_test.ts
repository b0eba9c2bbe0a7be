import assert from "node:assert/strict";
import { policyAdmissionHandler } from "./policy_validator.ts";

const handler = policyAdmissionHandler({ servers: () => [] });
const P = "policy.linkerd.io", G = "gateway.networking.k8s.io";

async function problems(group: string, kind: string, spec: unknown): Promise<string[]> {
  const d = await handler({
    uid: "u1",
    kind: { group, version: "v1", kind },
    namespace: "shop",
    name: "r",
    operation: "CREATE",
    object: { metadata: { name: "r", namespace: "shop" }, spec },
  } as never);
  return d.problems;
}
const toWeb = [{ kind: "Service", name: "web", port: 80 }];

// Linkerd admits these and lets route status say what happens; weft does the same.
const admitted: [string, string, string, unknown][] = [
  ["Gateway HTTPRoute with RequestMirror, URLRewrite and ExtensionRef", G, "HTTPRoute", {
    parentRefs: toWeb,
    rules: [{
      filters: [
        { type: "RequestMirror", requestMirror: { backendRef: { name: "shadow", port: 80 } } },
        { type: "URLRewrite", urlRewrite: { hostname: "x" } },
        { type: "ExtensionRef", extensionRef: { group: "example.com", kind: "Thing", name: "t" } },
      ],
      backendRefs: [{ name: "web", port: 80 }],
    }],
  }],
  ["GRPCRoute with RequestMirror and ExtensionRef", G, "GRPCRoute", {
    parentRefs: toWeb,
    rules: [{ filters: [{ type: "RequestMirror" }, { type: "ExtensionRef" }] }],
  }],
  ["Gateway HTTPRoute with a backend of another kind", G, "HTTPRoute", {
    parentRefs: toWeb,
    rules: [{ backendRefs: [{ group: "example.com", kind: "Bucket", name: "b" }] }],
  }],
  ["GRPCRoute with a backend of another kind", G, "GRPCRoute", {
    parentRefs: toWeb,
    rules: [{ backendRefs: [{ group: "example.com", kind: "Bucket", name: "b" }] }],
  }],
  ["policy HTTPRoute with a backend of another kind", P, "HTTPRoute", {
    parentRefs: [{ group: P, kind: "Server", name: "web" }],
    rules: [{ backendRefs: [{ group: "example.com", kind: "Bucket", name: "b" }] }],
  }],
  // Linkerd compares exactly there: `group: core` is "not a Service" to its admission check.
  ["Gateway HTTPRoute: group core Service backend without a port", G, "HTTPRoute", {
    parentRefs: toWeb,
    rules: [{ backendRefs: [{ group: "core", kind: "Service", name: "web" }] }],
  }],
];
for (const [title, group, kind, spec] of admitted) {
  Deno.test(`admitted as Linkerd admits it: ${title}`, async () => {
    assert.deepEqual(await problems(group, kind, spec), []);
  });
}

Deno.test("still refused as Linkerd refuses: a Service backend without a port; URLRewrite on a policy HTTPRoute", async () => {
  const a = await problems(G, "HTTPRoute", {
    parentRefs: toWeb,
    rules: [{ backendRefs: [{ name: "web" }] }],
  });
  assert.ok(a.some((m) => m.startsWith("spec.rules[0].backendRefs[0].port:")), a.join("; "));
  const g = await problems(G, "GRPCRoute", {
    parentRefs: toWeb,
    rules: [{ backendRefs: [{ name: "web" }] }],
  });
  assert.ok(g.some((m) => m.startsWith("spec.rules[0].backendRefs[0].port:")), g.join("; "));
  const b = await problems(P, "HTTPRoute", {
    parentRefs: [{ group: P, kind: "Server", name: "web" }],
    rules: [{ filters: [{ type: "URLRewrite" }] }],
  });
  assert.ok(b.some((m) => m.includes('filter "URLRewrite" is not supported')), b.join("; "));
});
