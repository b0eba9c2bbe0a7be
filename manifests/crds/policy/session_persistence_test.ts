import assert from "node:assert/strict";
import { parse } from "yaml";
import { defaultPolicyConfig } from "../../../control/policy/config.ts";
import { outboundPolicy } from "../../../control/policy/outbound_index.ts";
import { httpRoute, service, storeWith } from "../../../control/policy/testing.ts";
import { toTcpAddress } from "../../../proto/ip.ts";
import { policyAdmissionHandler } from "../../../control/validator/policy_validator.ts";

type Schema = { properties: Record<string, Schema>; items?: Schema };
const dir = new URL("./", import.meta.url);

async function ruleFields(file: string): Promise<Map<string, string[]>> {
  const crd = parse(await Deno.readTextFile(new URL(file, dir))) as {
    spec: { versions: { name: string; schema: { openAPIV3Schema: Schema } }[] };
  };
  return new Map(
    crd.spec.versions.map((v) => [
      v.name,
      Object.keys(v.schema.openAPIV3Schema.properties.spec.properties.rules.items!.properties),
    ]),
  );
}

Deno.test("sessionPersistence: on every served Gateway API HTTPRoute and GRPCRoute version, not on policy HTTPRoute", async () => {
  for (const f of ["gateway-httproute.yaml", "gateway-grpcroute.yaml"]) {
    const vs = await ruleFields(f);
    assert.ok(vs.size >= 2, f);
    for (const [v, fields] of vs) assert.ok(fields.includes("sessionPersistence"), `${f} ${v}`);
  }
  for (const [v, fields] of await ruleFields("httproute.yaml")) {
    assert.ok(!fields.includes("sessionPersistence"), `policy HTTPRoute ${v}`);
  }
});

const SP = {
  type: "Cookie",
  sessionName: "s",
  absoluteTimeout: "1h",
  cookieConfig: { lifetimeType: "Permanent" },
};
const svc = service("ns", "web", { clusterIP: "10.96.0.10", ports: [{ port: 80 }] });
const route = (withSp: boolean) =>
  httpRoute("ns", "r", {
    parentRefs: [{ kind: "Service", name: "web", port: 80 }],
    rules: [{
      backendRefs: [{ name: "web", port: 80 }],
      ...(withSp ? { sessionPersistence: SP } : {}),
    }] as never,
  });

Deno.test("sessionPersistence is admitted and ignored: the outbound policy is the same without it", async () => {
  const handler = policyAdmissionHandler({ servers: () => [] });
  const d = await handler({
    uid: "u",
    kind: { group: "gateway.networking.k8s.io", version: "v1", kind: "HTTPRoute" },
    namespace: "ns",
    name: "r",
    operation: "CREATE",
    object: route(true),
  } as never);
  assert.deepEqual(d.problems, []);
  const cfg = defaultPolicyConfig();
  const spec = {
    sourceWorkload: "",
    target: { $case: "addr" as const, value: toTcpAddress("10.96.0.10", 80) },
  };
  const withSp = outboundPolicy(storeWith(["Service", svc], ["GatewayHTTPRoute", route(true)]), cfg, spec);
  const without = outboundPolicy(storeWith(["Service", svc], ["GatewayHTTPRoute", route(false)]), cfg, spec);
  assert.ok(
    JSON.stringify(withSp, (_, v) => typeof v === "bigint" ? String(v) : v).includes('"name":"r"'),
    "the route attached",
  );
  assert.deepEqual(withSp, without);
});
