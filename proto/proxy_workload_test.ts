import assert from "node:assert/strict";
import { destinationContext, policyWorkload } from "./proxy_workload.ts";

Deno.test("proxy workload strings: the injector's Downward API form and a real pod's", () => {
  assert.equal(policyWorkload("$(_pod_ns)", "$(_pod_name)"), '{"ns":"$(_pod_ns)", "pod":"$(_pod_name)"}');
  assert.equal(
    destinationContext("$(_pod_ns)", "$(_pod_nodeName)", "$(_pod_name)"),
    '{"ns":"$(_pod_ns)", "nodeName":"$(_pod_nodeName)", "pod":"$(_pod_name)"}',
  );
  assert.deepEqual(JSON.parse(policyWorkload("web", "web-0")), { ns: "web", pod: "web-0" });
  // A name with a quote stays valid JSON (names from the API are never trusted to be clean).
  assert.deepEqual(JSON.parse(destinationContext('a"b', "n", "p")), { ns: 'a"b', nodeName: "n", pod: "p" });
});
