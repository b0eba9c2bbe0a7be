import assert from "node:assert/strict";
import type { V1Namespace, V1Pod } from "@kubernetes/client-node";
import { decide } from "./decision.ts";

const pod = (inject?: string, extra: Partial<V1Pod["spec"]> = {}): V1Pod => ({
  metadata: {
    name: "p",
    namespace: "app",
    annotations: inject === undefined ? {} : { "linkerd.io/inject": inject },
  },
  spec: { containers: [{ name: "app", image: "x" }], ...extra },
});
const ns = (inject?: string): V1Namespace => ({
  metadata: { name: "app", annotations: inject === undefined ? {} : { "linkerd.io/inject": inject } },
});

Deno.test("inject decision follows the namespace/pod truth table", () => {
  const table: [string | undefined, string | undefined, string][] = [
    // [namespace, pod, expected]
    ["enabled", undefined, "enabled@namespace"],
    ["enabled", "enabled", "enabled@workload"],
    ["ingress", undefined, "ingress@namespace"],
    ["enabled", "disabled", "skip:injection_disable_annotation_present"],
    [undefined, "enabled", "enabled@workload"],
    ["disabled", "enabled", "enabled@workload"],
    ["disabled", "ingress", "ingress@workload"],
    [undefined, undefined, "skip:injection_enable_annotation_absent"],
    ["disabled", undefined, "skip:injection_enable_annotation_absent"],
    ["disabled", "disabled", "skip:injection_disable_annotation_present"],
    ["yes", undefined, "skip:invalid_inject_annotation_at_ns"],
    ["enabled", "on", "skip:invalid_inject_annotation_at_workload"],
  ];
  for (const [n, p, want] of table) {
    const d = decide(pod(p), ns(n), []);
    const got = d.inject ? `${d.mode}@${d.annotationAt}` : `skip:${d.reason}`;
    assert.equal(got, want, `namespace=${n} pod=${p}`);
  }
});

Deno.test("hostNetwork pods, pods with a proxy and excluded namespaces are skipped", () => {
  assert.deepEqual(
    (decide(pod("enabled", { hostNetwork: true }), ns(), []) as { reason: string }).reason,
    "host_network_enabled",
  );
  const withProxy = pod("enabled", { containers: [{ name: "app" }, { name: "linkerd-proxy" }] });
  assert.equal((decide(withProxy, ns(), []) as { reason: string }).reason, "sidecar_already_exists");
  const native = pod("enabled", { initContainers: [{ name: "linkerd-proxy", restartPolicy: "Always" }] });
  assert.equal((decide(native, ns(), []) as { reason: string }).reason, "sidecar_already_exists");
  assert.equal((decide(pod("enabled"), ns(), ["app"]) as { reason: string }).reason, "namespace_excluded");
});

Deno.test("an invalid pod value names the annotation and the accepted values", () => {
  const d = decide(pod("true"), ns(), []);
  assert.equal(d.inject, false);
  if (d.inject) return;
  assert.match(d.message, /linkerd\.io\/inject="true" is not one of enabled, ingress, disabled/);
});
