import assert from "node:assert/strict";
import { policyAdmissionHandler } from "./policy_validator.ts";

const handler = policyAdmissionHandler({ servers: () => [] });
const P = "policy.linkerd.io", G = "gateway.networking.k8s.io";

async function problems(group: string, kind: string, spec: unknown): Promise<string[]> {
  const d = await handler({
    uid: "u1",
    kind: { group, version: "v1", kind },
    namespace: "app",
    name: "x",
    operation: "CREATE",
    object: { metadata: { name: "x", namespace: "app" }, spec },
  } as never);
  return d.problems;
}

const enParent = (port?: number, kind = "EgressNetwork", group = P) => ({
  group,
  kind,
  name: "ext",
  namespace: "app",
  ...(port === undefined ? {} : { port }),
});

Deno.test("egress admission: EgressNetworks with Allow or Deny and good networks are admitted", async () => {
  assert.deepEqual(await problems(P, "EgressNetwork", { trafficPolicy: "Allow" }), []);
  assert.deepEqual(
    await problems(P, "EgressNetwork", {
      trafficPolicy: "Deny",
      networks: [{ cidr: "0.0.0.0/0", except: ["10.0.0.0/8", "192.168.1.1"] }, { cidr: "::/0" }],
    }),
    [],
  );
});

Deno.test("egress admission: an EgressNetwork without a valid trafficPolicy or with bad networks is refused", async () => {
  assert.match((await problems(P, "EgressNetwork", {}))[0], /^spec\.trafficPolicy: required/);
  assert.match(
    (await problems(P, "EgressNetwork", { trafficPolicy: "Maybe" }))[0],
    /^spec\.trafficPolicy: "Maybe"/,
  );
  const bad = await problems(P, "EgressNetwork", {
    trafficPolicy: "Allow",
    networks: [{ cidr: "300.0.0.0/8" }, { cidr: "192.0.2.0/24", except: ["198.51.100.0/24"] }],
  });
  assert.equal(bad.length, 2);
  assert.match(bad[0], /^spec\.networks\[0\]\.cidr: /);
  assert.match(bad[1], /^spec\.networks\[1\]\.except\[0\]: "198\.51\.100\.0\/24" is not inside/);
});

Deno.test("egress admission: HTTPRoutes and GRPCRoutes with an EgressNetwork parent and a port are admitted", async () => {
  const rules = [{ matches: [{ path: { type: "PathPrefix", value: "/" } }] }];
  assert.deepEqual(await problems(G, "HTTPRoute", { parentRefs: [enParent(80)], rules }), []);
  assert.deepEqual(await problems(P, "HTTPRoute", { parentRefs: [enParent(80)], rules }), []);
  assert.deepEqual(
    await problems(G, "GRPCRoute", {
      parentRefs: [enParent(50051)],
      rules: [{ matches: [{ method: { service: "a.B" } }] }],
    }),
    [],
  );
  // Linkerd compares kind and group ignoring case.
  assert.deepEqual(
    await problems(G, "HTTPRoute", {
      parentRefs: [enParent(80, "egressnetwork", "Policy.Linkerd.io")],
      rules,
    }),
    [],
  );
});

Deno.test("egress admission: an EgressNetwork parent of an HTTPRoute or GRPCRoute without a port is refused, naming the field", async () => {
  for (const [group, kind] of [[G, "HTTPRoute"], [P, "HTTPRoute"], [G, "GRPCRoute"]]) {
    const p = await problems(group, kind, {
      parentRefs: [{ name: "svc", kind: "Service", port: 80 }, enParent()],
    });
    assert.deepEqual(
      p,
      [`spec.parentRefs[1].port: an EgressNetwork parent of a ${kind} needs a port`],
      `${group}/${kind}`,
    );
  }
});

Deno.test("egress admission: EgressNetwork backends are admitted on routes", async () => {
  const backendRefs = [{ group: P, kind: "EgressNetwork", name: "ext" }];
  assert.deepEqual(
    await problems(G, "HTTPRoute", { parentRefs: [enParent(80)], rules: [{ backendRefs }] }),
    [],
  );
  assert.deepEqual(
    await problems(G, "GRPCRoute", { parentRefs: [enParent(80)], rules: [{ backendRefs }] }),
    [],
  );
});

Deno.test("egress admission: TLSRoutes and TCPRoutes with a ported EgressNetwork parent and one rule are admitted", async () => {
  const rules = [{ backendRefs: [{ group: P, kind: "EgressNetwork", name: "ext" }] }];
  assert.deepEqual(
    await problems(G, "TLSRoute", {
      parentRefs: [enParent(443)],
      hostnames: ["api.example.com", "*.example.org"],
      rules,
    }),
    [],
  );
  assert.deepEqual(await problems(G, "TCPRoute", { parentRefs: [enParent(5432)], rules }), []);
  assert.deepEqual(
    await problems(G, "TCPRoute", {
      parentRefs: [enParent(5432)],
      rules: [{ backendRefs: [{ name: "db", port: 5432 }] }],
    }),
    [],
  );
});

Deno.test("egress admission: TLSRoutes and TCPRoutes need the EgressNetwork parent's port and exactly one rule", async () => {
  const rule = { backendRefs: [{ group: P, kind: "EgressNetwork", name: "ext" }] };
  assert.deepEqual(await problems(G, "TCPRoute", { parentRefs: [enParent()], rules: [rule] }), [
    "spec.parentRefs[0].port: an EgressNetwork parent of a TCPRoute needs a port",
  ]);
  assert.deepEqual(await problems(G, "TLSRoute", { parentRefs: [enParent(443)], rules: [rule, rule] }), [
    "spec.rules: a TLSRoute has exactly one rule, got 2",
  ]);
});

Deno.test("egress admission: EgressNetwork networks given empty, or an except covering its cidr, are refused", async () => {
  assert.deepEqual(await problems(P, "EgressNetwork", { trafficPolicy: "Allow", networks: [] }), [
    "spec.networks: must list at least one network (leave it out for every address outside the cluster)",
  ]);
  assert.deepEqual(
    await problems(P, "EgressNetwork", {
      trafficPolicy: "Allow",
      networks: [{ cidr: "203.0.113.0/24", except: ["203.0.0.0/16"] }],
    }),
    ['spec.networks[0].except[0]: "203.0.0.0/16" covers all of cidr "203.0.113.0/24"'],
  );
});

Deno.test("egress admission: bad TLSRoute and TCPRoute fields are refused with the field named", async () => {
  const tls = await problems(G, "TLSRoute", {
    parentRefs: [enParent(443)],
    hostnames: ["Bad_Host"],
    rules: [{ backendRefs: [{ name: "db" }, { kind: "Pod", name: "p" }] }],
  });
  assert.deepEqual(tls, [
    "spec.rules[0].backendRefs[0].port: a Service backend needs a port (1..65535)",
    "spec.rules[0].backendRefs[1].kind: backends must be Services or EgressNetworks, got /Pod",
    'spec.hostnames[0]: "Bad_Host" is not a hostname or a "*." wildcard',
  ]);
  assert.deepEqual(await problems(G, "TCPRoute", { parentRefs: [enParent(5432)], rules: [] }), [
    "spec.rules: a TCPRoute has exactly one rule, got 0",
  ]);
});
