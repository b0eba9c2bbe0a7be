/**
 * The AdmissionReview v1 handler of the proxy injector: decides, builds the patch and answers.
 * Pure apart from the namespace lookup passed in; the HTTPS server lives in main.ts.
 */
import { type AdmissionResponse, parseReview } from "../webhook/admission_review.ts";
import type { V1Pod } from "@kubernetes/client-node";
import type { InjectorConfig } from "./config.ts";
import { decide, type NamespaceLike } from "./decision.ts";
import type { EventSink } from "./events.ts";
import type { InjectorMetrics } from "./metrics.ts";
import { buildPatch } from "./patch.ts";

export interface AdmissionResponseBody {
  apiVersion: "admission.k8s.io/v1";
  kind: "AdmissionReview";
  response: AdmissionResponse;
}

export interface InjectorDeps {
  /** Read on every admission, so a new trust-anchor bundle applies to the next pod. */
  config: InjectorConfig;
  /** Looks the pod's namespace up (from an informer cache, so admission never waits on the API). */
  namespace(name: string): NamespaceLike | undefined | Promise<NamespaceLike | undefined>;
  metrics: InjectorMetrics;
  /** Records Kubernetes Events about the pod's owner; must not block. */
  events?: EventSink;
  /**
   * Makes sure the pod's namespace has its copy of the trust-roots ConfigMap before the pod that
   * mounts it is admitted (bounded, never fails the admission: the volume is optional).
   */
  trustRootsCopy?: (namespace: string) => Promise<void>;
}

function toBase64(text: string): string {
  const bytes = new TextEncoder().encode(text);
  let bin = "";
  for (let i = 0; i < bytes.length; i += 0x8000) bin += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(bin);
}

export async function review(body: unknown, deps: InjectorDeps): Promise<AdmissionResponseBody> {
  const r = parseReview(body);
  const uid = r.request.uid;
  const answer = (response: Omit<AdmissionResponse, "uid">): AdmissionResponseBody => ({
    apiVersion: "admission.k8s.io/v1",
    kind: "AdmissionReview",
    response: { uid, ...response },
  });
  const object = r.request.object as V1Pod | undefined;
  const nsName = r.request.namespace ?? object?.metadata?.namespace ?? "default";
  const unsupported = r.request.kind.kind !== "Pod"
    ? "unsupported_resource"
    : r.request.operation !== "CREATE"
    ? "unsupported_operation"
    : undefined;
  if (unsupported) {
    // Only pod creation is mutated; anything else is let through untouched.
    const labels = { owner_kind: r.request.kind.kind.toLowerCase(), namespace: nsName, annotation_at: "" };
    deps.metrics.requests.inc(labels);
    deps.metrics.responses.inc({ ...labels, skip: "true", skip_reason: unsupported });
    return answer({ allowed: true });
  }
  if (typeof object !== "object" || object === null || Array.isArray(object)) {
    return answer({ allowed: false, status: { code: 400, message: "request.object is not a Pod object" } });
  }
  if (!Array.isArray(object.spec?.containers) || object.spec.containers.length === 0) {
    return answer({
      allowed: false,
      status: { code: 400, message: "request.object is not a Pod: spec.containers is missing or empty" },
    });
  }
  const pod: V1Pod = { ...object, metadata: { ...object.metadata, namespace: nsName } };
  const ns = await deps.namespace(nsName);
  const owner = pod.metadata!.ownerReferences?.find((o) => o.controller) ??
    pod.metadata!.ownerReferences?.[0];
  const ownerKind = (owner?.kind ?? "pod").toLowerCase();
  const decision = decide(pod, ns, deps.config.excludedNamespaces);
  const annotationAt = decision.inject ? decision.annotationAt : "";
  deps.metrics.requests.inc({ owner_kind: ownerKind, namespace: nsName, annotation_at: annotationAt });
  const respond = (skip: boolean, reason: string) =>
    deps.metrics.responses.inc({
      owner_kind: ownerKind,
      namespace: nsName,
      annotation_at: annotationAt,
      skip: String(skip),
      skip_reason: reason,
    });
  const warn = (message: string) => {
    if (!owner || r.request.dryRun) return;
    deps.events?.record({
      namespace: nsName,
      involved: { apiVersion: owner.apiVersion, kind: owner.kind, name: owner.name, uid: owner.uid },
      reason: "InjectionWarning",
      message,
    });
  };
  if (!decision.inject) {
    respond(true, decision.reason);
    // An invalid value is never silently ignored. On the pod it refuses the pod (the owner's
    // FailedCreate event carries the message); on the namespace, refusing would stop every rollout
    // there, so the pod is admitted uninjected with a warning and an event.
    if (decision.reason === "invalid_inject_annotation_at_workload") {
      return answer({
        allowed: false,
        status: { code: 400, message: `weft proxy injection refused: ${decision.message}` },
      });
    }
    if (decision.reason === "invalid_inject_annotation_at_ns") {
      const message = `${decision.message}; the pod is not injected`;
      warn(message);
      return answer({ allowed: true, warnings: [message] });
    }
    return answer({ allowed: true });
  }
  const result = await buildPatch(pod, ns, deps.config);
  if (!result.ok) {
    respond(true, "invalid_config_annotation");
    const message = `weft proxy injection refused: ${result.problems.map((p) => p.message).join("; ")}`;
    return answer({ allowed: false, status: { code: 400, message } });
  }
  if (deps.trustRootsCopy && nsName) await deps.trustRootsCopy(nsName);
  respond(false, "");
  for (const message of result.warnings) warn(message);
  return answer({
    allowed: true,
    patchType: "JSONPatch",
    patch: toBase64(JSON.stringify(result.patch)),
    ...(result.warnings.length ? { warnings: result.warnings } : {}),
  });
}
