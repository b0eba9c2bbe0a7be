import assert from "node:assert/strict";
import type { V1Namespace } from "@kubernetes/client-node";
import { Registry } from "prom-client";
import { defaultInjectorConfig } from "./config.ts";
import { review } from "./admission.ts";
import { AdmissionError } from "../webhook/admission_review.ts";
import { InjectorMetrics } from "./metrics.ts";

const namespaces: Record<string, V1Namespace> = {
  meshed: { metadata: { name: "meshed", annotations: { "linkerd.io/inject": "enabled" } } },
  plain: { metadata: { name: "plain" } },
};

function deps() {
  const registry = new Registry();
  const events: string[] = [];
  return {
    registry,
    events,
    deps: {
      config: defaultInjectorConfig("anchors"),
      namespace: (n: string) => namespaces[n],
      metrics: new InjectorMetrics(registry),
      event: (_ns: string, reason: string, message: string) => events.push(`${reason}: ${message}`),
    },
  };
}

const reviewOf = (namespace: string, pod: unknown, operation = "CREATE") => ({
  apiVersion: "admission.k8s.io/v1",
  kind: "AdmissionReview",
  request: { uid: "u-1", kind: { group: "", version: "v1", kind: "Pod" }, operation, namespace, object: pod },
});

const pod = (annotations: Record<string, string> = {}) => ({
  metadata: { generateName: "web-", annotations },
  spec: { containers: [{ name: "web", image: "x", ports: [{ containerPort: 8080 }] }] },
});

Deno.test("a pod in an injected namespace gets a JSON patch and counts as not skipped", async () => {
  const d = deps();
  const res = await review(reviewOf("meshed", pod()), d.deps);
  assert.equal(res.response.uid, "u-1");
  assert.equal(res.response.allowed, true);
  assert.equal(res.response.patchType, "JSONPatch");
  const ops = JSON.parse(atob(res.response.patch!)) as { path: string }[];
  assert.ok(ops.some((o) => o.path === "/spec/initContainers/1"));
  const m = await d.registry.metrics();
  assert.match(
    m,
    /proxy_inject_admission_requests_total\{owner_kind="pod",namespace="meshed",annotation_at="namespace"\} 1/,
  );
  assert.match(m, /proxy_inject_admission_responses_total\{[^}]*skip="false"[^}]*\} 1/);
});

Deno.test("pods that are not injected are admitted unchanged with the skip reason counted", async () => {
  const d = deps();
  const res = await review(reviewOf("plain", pod()), d.deps);
  assert.equal(res.response.allowed, true);
  assert.equal(res.response.patch, undefined);
  assert.match(
    await d.registry.metrics(),
    /proxy_inject_admission_responses_total\{[^}]*skip="true",skip_reason="injection_enable_annotation_absent"\} 1/,
  );
  const update = await review(reviewOf("meshed", pod(), "UPDATE"), d.deps);
  assert.equal(update.response.allowed, true);
  assert.equal(update.response.patch, undefined);
});

Deno.test("a pod with an invalid override is refused with a message naming the annotation", async () => {
  const d = deps();
  const res = await review(reviewOf("meshed", pod({ "config.linkerd.io/proxy-cpu-limit": "two" })), d.deps);
  assert.equal(res.response.allowed, false);
  assert.equal(res.response.status?.code, 400);
  assert.match(res.response.status!.message, /config\.linkerd\.io\/proxy-cpu-limit="two" is invalid/);
});

Deno.test("malformed reviews are rejected with what is wrong", async () => {
  const d = deps();
  await assert.rejects(() => review("nope", d.deps), AdmissionError);
  await assert.rejects(
    () => review({ kind: "AdmissionReview", apiVersion: "v1beta9" }, d.deps),
    /want admission\.k8s\.io\/v1/,
  );
  await assert.rejects(
    () =>
      review({ kind: "AdmissionReview", apiVersion: "admission.k8s.io/v1", request: { kind: {} } }, d.deps),
    /request\.uid is missing/,
  );
});
