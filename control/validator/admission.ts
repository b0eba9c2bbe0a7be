/**
 * AdmissionReview v1, as the API server sends it to a validating webhook, and the handler
 * seam: each validator (policy here; ServiceProfile later) is an `AdmissionHandler` served on its
 * own path by `serveWebhook`.
 */

import type { AdmissionRequest, AdmissionResponse, AdmissionReview } from "../webhook/admission_review.ts";

export { parseReview } from "../webhook/admission_review.ts";
export type { AdmissionRequest, AdmissionResponse, AdmissionReview };

/** What a handler decides: allowed, or the problems (each naming its field). */
export interface AdmissionDecision {
  problems: string[];
  warnings?: string[];
}

export type AdmissionHandler = (req: AdmissionRequest) => Promise<AdmissionDecision> | AdmissionDecision;

export function reviewResponse(req: AdmissionRequest, d: AdmissionDecision): AdmissionReview {
  const what = `${req.kind.kind} ${req.namespace ? `${req.namespace}/` : ""}${req.name ?? ""}`.trim();
  const response: AdmissionResponse = { uid: req.uid, allowed: d.problems.length === 0 };
  if (d.problems.length > 0) {
    response.status = {
      code: 400,
      reason: "Invalid",
      message: `${what} is invalid: ${d.problems.join("; ")}`,
    };
  }
  if (d.warnings?.length) response.warnings = d.warnings;
  return { apiVersion: "admission.k8s.io/v1", kind: "AdmissionReview", response };
}
