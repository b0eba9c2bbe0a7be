/** The AdmissionReview v1 envelope that the API server sends to every webhook, and its checks. */

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

export interface AdmissionResponse {
  uid: string;
  allowed: boolean;
  patchType?: "JSONPatch";
  patch?: string;
  status?: { code: number; reason?: string; message: string };
  warnings?: string[];
}

export interface AdmissionReview {
  apiVersion: string;
  kind: string;
  request?: AdmissionRequest;
  response?: AdmissionResponse;
}

export class AdmissionError extends Error {
  override name = "AdmissionError";
}

/** Validates the envelope; throws AdmissionError naming what is wrong. */
export function parseReview(body: unknown): AdmissionReview & { request: AdmissionRequest } {
  if (typeof body !== "object" || body === null) throw new AdmissionError("body is not a JSON object");
  const r = body as AdmissionReview;
  if (r.kind !== "AdmissionReview") {
    throw new AdmissionError(`kind is ${JSON.stringify(r.kind)}, want AdmissionReview`);
  }
  if (r.apiVersion !== "admission.k8s.io/v1") {
    throw new AdmissionError(`apiVersion is ${JSON.stringify(r.apiVersion)}, want admission.k8s.io/v1`);
  }
  if (!r.request || typeof r.request.uid !== "string" || r.request.uid === "") {
    throw new AdmissionError("request.uid is missing");
  }
  if (!r.request.kind) throw new AdmissionError("request.kind is missing");
  return r as AdmissionReview & { request: AdmissionRequest };
}
