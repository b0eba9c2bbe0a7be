import assert from "node:assert/strict";
import { parse } from "yaml";

type Version = { name: string; served: boolean; storage: boolean; schema: { openAPIV3Schema: Schema } };
type Schema = { properties: Record<string, Schema>; required?: string[]; oneOf?: unknown[] };
const dir = new URL("./", import.meta.url);

async function versions(file: string): Promise<Map<string, Version>> {
  const crd = parse(await Deno.readTextFile(new URL(file, dir))) as { spec: { versions: Version[] } };
  return new Map(crd.spec.versions.map((v) => [v.name, v]));
}
const spec = (v: Version | undefined) => v!.schema.openAPIV3Schema.properties.spec;

Deno.test("Server: the four versions Linkerd serves, one storage version, fields by version", async () => {
  const vs = await versions("server.yaml");
  assert.deepEqual([...vs.keys()], ["v1alpha1", "v1beta1", "v1beta2", "v1beta3"]);
  assert.deepEqual([...vs.values()].filter((v) => v.storage).map((v) => v.name), ["v1beta3"]);
  assert.ok([...vs.values()].every((v) => v.served));
  const fields = (n: string) => Object.keys(spec(vs.get(n)).properties).sort();
  assert.deepEqual(fields("v1beta3"), [
    "accessPolicy",
    "externalWorkloadSelector",
    "podSelector",
    "port",
    "proxyProtocol",
  ]);
  assert.deepEqual(fields("v1beta2"), ["externalWorkloadSelector", "podSelector", "port", "proxyProtocol"]);
  assert.deepEqual(fields("v1beta1"), ["podSelector", "port", "proxyProtocol"]);
  assert.deepEqual(fields("v1alpha1"), ["podSelector", "port", "proxyProtocol"]);
  assert.deepEqual(spec(vs.get("v1beta1")).required, ["podSelector", "port"]);
  assert.equal(spec(vs.get("v1beta1")).oneOf, undefined);
  // v1alpha1 wants a non-empty selector; later versions select every pod with {}.
  assert.ok(spec(vs.get("v1alpha1")).properties.podSelector.oneOf);
  assert.equal(spec(vs.get("v1beta1")).properties.podSelector.oneOf, undefined);
  // Every version states proxyProtocol the same way, so the controller reads any of them alike.
  const pp = [...vs.keys()].map((n) => JSON.stringify(spec(vs.get(n)).properties.proxyProtocol));
  assert.equal(new Set(pp).size, 1);
});

Deno.test("policy HTTPRoute: rule timeouts only from v1beta3 (storage)", async () => {
  const vs = await versions("httproute.yaml");
  const ruleFields = (n: string) =>
    Object.keys(
      (spec(vs.get(n)).properties.rules as unknown as { items: Schema }).items.properties,
    );
  for (const n of ["v1alpha1", "v1beta1", "v1beta2"]) assert.ok(!ruleFields(n).includes("timeouts"), n);
  assert.ok(ruleFields("v1beta3").includes("timeouts"));
  assert.deepEqual([...vs.values()].filter((v) => v.storage).map((v) => v.name), ["v1beta3"]);
});

Deno.test("ServiceProfile: v1alpha1 served (routes required), stored as v1alpha2", async () => {
  const vs = await versions("../serviceprofile.yaml");
  assert.deepEqual([...vs.keys()], ["v1alpha1", "v1alpha2"]);
  assert.equal(vs.get("v1alpha1")!.served, true);
  assert.equal(vs.get("v1alpha1")!.storage, false);
  assert.equal(vs.get("v1alpha2")!.storage, true);
  assert.deepEqual(spec(vs.get("v1alpha1")).required, ["routes"]);
  assert.equal(spec(vs.get("v1alpha2")).required, undefined);
  // Otherwise the same fields, so the destination controller (which watches v1alpha2) reads both alike.
  assert.deepEqual(spec(vs.get("v1alpha1")).properties, spec(vs.get("v1alpha2")).properties);
});
