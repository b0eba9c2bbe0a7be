/**
 * AdmissionReview v1, as the API server sends it to a validating webhook, and the handler
 * seam: each validator (policy here; ServiceProfile later) is an `AdmissionHandler` served on its
 * own path by `serveWebhook`.
 */

export interface AdmissionRequest {
  uid: string;
  kind: { group: string; version: string; kind: string };
  resource?: { group: string; version: string; resource: string };
  name?: string;
  namespace?: string;
  operation: "CREATE" | "UPDATE" | "DELETE" | "CONNECT" | string;
  object?: unknown;
  oldObject?: unknown;
  dryRun?: boolean;
}

export interface AdmissionReview {
  apiVersion: string;
  kind: string;
  request?: AdmissionRequest;
  response?: AdmissionResponse;
}

export interface AdmissionResponse {
  uid: string;
  allowed: boolean;
  status?: { code: number; reason?: string; message: string };
  warnings?: string[];
}

/** What a handler decides: allowed, or the problems (each naming its field). */
export interface AdmissionDecision {
  problems: string[];
  warnings?: string[];
}

export type AdmissionHandler = (req: AdmissionRequest) => Promise<AdmissionDecision> | AdmissionDecision;

/** Parses a request body into an AdmissionReview; throws naming what is missing. */
export function parseReview(body: unknown): AdmissionReview & { request: AdmissionRequest } {
  const r = body as AdmissionReview;
  if (!r || typeof r !== "object") throw new Error("body is not a JSON object");
  if (r.apiVersion !== "admission.k8s.io/v1" || r.kind !== "AdmissionReview") {
    throw new Error(
      `want apiVersion admission.k8s.io/v1 kind AdmissionReview, got ${r.apiVersion} ${r.kind}`,
    );
  }
  if (!r.request || typeof r.request.uid !== "string" || !r.request.kind) {
    throw new Error("AdmissionReview has no request with a uid and kind");
  }
  return r as AdmissionReview & { request: AdmissionRequest };
}

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
