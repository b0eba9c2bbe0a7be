/**
 * The AdmissionReview v1 handler of the proxy injector: decides, builds the patch and answers.
 * Pure apart from the namespace lookup passed in; the HTTPS server lives in main.ts.
 */
import { type AdmissionResponse, parseReview } from "../webhook/admission_review.ts";
import type { V1Namespace, V1Pod } from "@kubernetes/client-node";
import type { InjectorConfig } from "./config.ts";
import { decide } from "./decision.ts";
import type { InjectorMetrics } from "./metrics.ts";
import { buildPatch } from "./patch.ts";

export interface AdmissionResponseBody {
  apiVersion: "admission.k8s.io/v1";
  kind: "AdmissionReview";
  response: AdmissionResponse;
}

export interface InjectorDeps {
  config: InjectorConfig;
  /** Looks the pod's namespace up (from an informer cache, so admission never waits on the API). */
  namespace(name: string): V1Namespace | undefined;
  metrics: InjectorMetrics;
  /** Records a Kubernetes Event about the pod's owner; must not block. */
  event?(ns: string, reason: string, message: string): void;
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
  if (r.request.kind.kind !== "Pod" || r.request.operation !== "CREATE") {
    // Only pod creation is mutated; anything else is let through untouched.
    return answer({ allowed: true });
  }
  const pod = r.request.object as V1Pod;
  if (typeof pod !== "object" || pod === null) {
    return answer({ allowed: false, status: { code: 400, message: "request.object is not a pod" } });
  }
  const nsName = r.request.namespace ?? pod.metadata?.namespace ?? "default";
  pod.metadata = { ...pod.metadata, namespace: nsName };
  const ns = deps.namespace(nsName);
  const ownerKind = (pod.metadata.ownerReferences?.[0]?.kind ?? "pod").toLowerCase();
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
  if (!decision.inject) {
    respond(true, decision.reason);
    return answer({ allowed: true });
  }
  const result = await buildPatch(pod, ns, deps.config);
  if (!result.ok) {
    respond(true, "invalid_config_annotation");
    const message = `weft proxy injection refused: ${result.problems.map((p) => p.message).join("; ")}`;
    return answer({ allowed: false, status: { code: 400, message } });
  }
  respond(false, "");
  for (const w of result.warnings) deps.event?.(nsName, "InjectionWarning", w);
  return answer({
    allowed: true,
    patchType: "JSONPatch",
    patch: toBase64(JSON.stringify(result.patch)),
    ...(result.warnings.length ? { warnings: result.warnings } : {}),
  });
}
