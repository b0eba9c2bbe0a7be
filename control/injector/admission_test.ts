import assert from "node:assert/strict";
import type { V1Namespace } from "@kubernetes/client-node";
import { Registry } from "prom-client";
import { defaultInjectorConfig } from "./config.ts";
import { review } from "./admission.ts";
import { AdmissionError } from "../webhook/admission_review.ts";
import type { InjectionEvent } from "./events.ts";
import { InjectorMetrics } from "./metrics.ts";

const namespaces: Record<string, V1Namespace> = {
  meshed: { metadata: { name: "meshed", annotations: { "linkerd.io/inject": "enabled" } } },
  plain: { metadata: { name: "plain" } },
  typo: { metadata: { name: "typo", annotations: { "linkerd.io/inject": "true" } } },
  badconfig: {
    metadata: {
      name: "badconfig",
      annotations: { "linkerd.io/inject": "enabled", "config.linkerd.io/proxy-memory-limit": "lots" },
    },
  },
};

function deps() {
  const registry = new Registry();
  const events: InjectionEvent[] = [];
  return {
    registry,
    events,
    deps: {
      config: defaultInjectorConfig("anchors"),
      namespace: (n: string) => Promise.resolve(namespaces[n]),
      metrics: new InjectorMetrics(registry),
      events: { record: (e: InjectionEvent) => events.push(e) },
    },
  };
}

const reviewOf = (namespace: string, pod: unknown, operation = "CREATE") => ({
  apiVersion: "admission.k8s.io/v1",
  kind: "AdmissionReview",
  request: { uid: "u-1", kind: { group: "", version: "v1", kind: "Pod" }, operation, namespace, object: pod },
});

const pod = (annotations: Record<string, string> = {}) => ({
  metadata: {
    generateName: "web-",
    annotations,
    ownerReferences: [{
      apiVersion: "apps/v1",
      kind: "ReplicaSet",
      name: "web-5d9",
      uid: "rs-1",
      controller: true,
    }],
  },
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
    /proxy_inject_admission_requests_total\{owner_kind="replicaset",namespace="meshed",annotation_at="namespace"\} 1/,
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

Deno.test("an invalid linkerd.io/inject on the pod refuses it; on the namespace it warns and records an event", async () => {
  const d = deps();
  const refused = await review(reviewOf("meshed", pod({ "linkerd.io/inject": "yes" })), d.deps);
  assert.equal(refused.response.allowed, false);
  assert.equal(
    refused.response.status?.message,
    'weft proxy injection refused: pod annotation linkerd.io/inject="yes" is not one of enabled, ingress, disabled',
  );
  const warned = await review(reviewOf("typo", pod()), d.deps);
  assert.equal(warned.response.allowed, true);
  assert.equal(warned.response.patch, undefined);
  assert.deepEqual(warned.response.warnings, [
    'namespace annotation linkerd.io/inject="true" is not one of enabled, ingress, disabled; the pod is not injected',
  ]);
  assert.deepEqual(d.events.map((e) => [e.namespace, e.involved.kind, e.involved.name, e.reason]), [
    ["typo", "ReplicaSet", "web-5d9", "InjectionWarning"],
  ]);
  const m = await d.registry.metrics();
  assert.match(m, /skip_reason="invalid_inject_annotation_at_workload"\} 1/);
  assert.match(m, /skip_reason="invalid_inject_annotation_at_ns"\} 1/);
});

Deno.test("a bad namespace override is ignored with a warning and an event on the owner, not on dry runs", async () => {
  const d = deps();
  const res = await review(reviewOf("badconfig", pod()), d.deps);
  assert.equal(res.response.allowed, true);
  assert.equal(res.response.patchType, "JSONPatch");
  assert.match(res.response.warnings![0], /proxy-memory-limit="lots" is invalid/);
  assert.equal(d.events.length, 1);
  assert.equal(d.events[0].involved.uid, "rs-1");
  const dry = reviewOf("badconfig", pod()) as ReturnType<typeof reviewOf> & { request: { dryRun?: boolean } };
  dry.request.dryRun = true;
  await review(dry, d.deps);
  assert.equal(d.events.length, 1, "a dry run records no event");
});

Deno.test("other resources are admitted untouched and counted; a pod without containers is refused", async () => {
  const d = deps();
  const svc = {
    ...reviewOf("meshed", { metadata: { name: "s" } }),
  };
  svc.request.kind = { group: "", version: "v1", kind: "Service" };
  const res = await review(svc, d.deps);
  assert.deepEqual([res.response.allowed, res.response.patch], [true, undefined]);
  assert.match(await d.registry.metrics(), /owner_kind="service"[^}]*skip_reason="unsupported_resource"\} 1/);
  const empty = await review(reviewOf("meshed", { metadata: {}, spec: {} }), d.deps);
  assert.equal(empty.response.allowed, false);
  assert.equal(
    empty.response.status?.message,
    "request.object is not a Pod: spec.containers is missing or empty",
  );
  const notObject = await review(reviewOf("meshed", "pod"), d.deps);
  assert.equal(notObject.response.status?.message, "request.object is not a Pod object");
});

Deno.test("an injected pod's namespace gets its trust-roots copy before the answer; a skipped pod's does not", async () => {
  const d = deps();
  const asked: string[] = [];
  const withCopy = {
    ...d.deps,
    trustRootsCopy: async (ns: string) => {
      await new Promise((r) => setTimeout(r, 5));
      asked.push(ns);
    },
  };
  const res = await review(reviewOf("meshed", pod()), withCopy);
  assert.equal(res.response.allowed, true);
  assert.ok(res.response.patch);
  assert.deepEqual(asked, ["meshed"], "awaited before answering");
  await review(reviewOf("plain", pod()), withCopy);
  assert.deepEqual(asked, ["meshed"]);
});
