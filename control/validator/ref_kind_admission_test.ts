import assert from "node:assert/strict";
import { policyAdmissionHandler } from "./policy_validator.ts";

const handler = policyAdmissionHandler({ servers: () => [] });
const P = "policy.linkerd.io", G = "gateway.networking.k8s.io";

async function problems(group: string, kind: string, spec: unknown): Promise<string[]> {
  const d = await handler({
    uid: "u1",
    kind: { group, version: "v1", kind },
    namespace: "emojivoto",
    name: "x",
    operation: "CREATE",
    object: { metadata: { name: "x", namespace: "emojivoto" }, spec },
  } as never);
  return d.problems;
}

// Linkerd compares a reference's group and kind ignoring ASCII case; these are all admitted.
const admitted: [string, string, string, unknown][] = [
  ["AuthorizationPolicy targeting HttpRoute", P, "AuthorizationPolicy", {
    targetRef: { group: "policy.linkerd.io", kind: "HttpRoute", name: "r" },
    requiredAuthenticationRefs: [],
  }],
  ["AuthorizationPolicy targeting server in an upper-case group", P, "AuthorizationPolicy", {
    targetRef: { group: "POLICY.LINKERD.IO", kind: "server", name: "web" },
    requiredAuthenticationRefs: [{ group: "policy.linkerd.io", kind: "meshtlsauthentication", name: "m" }],
  }],
  ["AuthorizationPolicy targeting namespace, serviceaccount ref in group core", P, "AuthorizationPolicy", {
    targetRef: { kind: "namespace", name: "emojivoto" },
    requiredAuthenticationRefs: [{ group: "core", kind: "serviceaccount", name: "web" }],
  }],
  ["MeshTLSAuthentication identityRefs in lower case", P, "MeshTLSAuthentication", {
    identityRefs: [{ kind: "serviceaccount", name: "web" }, { kind: "NAMESPACE", name: "emojivoto" }],
  }],
  ["policy HTTPRoute with a server parent", P, "HTTPRoute", {
    parentRefs: [{ group: "policy.linkerd.io", kind: "server", name: "web" }],
  }],
  ["Gateway HTTPRoute with a service parent and SERVICE backend", G, "HTTPRoute", {
    parentRefs: [{ kind: "service", name: "web", port: 80 }],
    rules: [{ backendRefs: [{ group: "core", kind: "SERVICE", name: "web", port: 80 }] }],
  }],
];
for (const [title, group, kind, spec] of admitted) {
  Deno.test(`admission ignores reference case: ${title}`, async () => {
    assert.deepEqual(await problems(group, kind, spec), []);
  });
}

Deno.test("admission still refuses other kinds and groups whatever their case", async () => {
  const p = await problems(P, "AuthorizationPolicy", {
    targetRef: { kind: "deployment", name: "web" },
    requiredAuthenticationRefs: [],
  });
  assert.ok(p.some((m) => m.startsWith('spec.targetRef.kind: "deployment"')), p.join("; "));
  const q = await problems(P, "AuthorizationPolicy", {
    targetRef: { group: "apps", kind: "SERVER", name: "web" },
    requiredAuthenticationRefs: [],
  });
  assert.ok(q.some((m) => m.startsWith('spec.targetRef.group: "apps"')), q.join("; "));
});
