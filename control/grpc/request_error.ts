/**
 * Domain errors that a request handler raises. They carry the kind of failure, and become a gRPC
 * status only at the server edge (`toServiceError`), so domain code stays transport-free.
 */
import * as grpc from "@grpc/grpc-js";

export type RequestErrorKind =
  | "invalid_argument"
  | "failed_precondition"
  | "not_found"
  | "permission_denied"
  | "unauthenticated"
  | "unavailable"
  | "resource_exhausted"
  | "internal";

export class RequestError extends Error {
  override name = "RequestError";
  constructor(readonly kind: RequestErrorKind, message: string) {
    super(message);
  }
}

const CODES: Record<RequestErrorKind, grpc.status> = {
  invalid_argument: grpc.status.INVALID_ARGUMENT,
  failed_precondition: grpc.status.FAILED_PRECONDITION,
  not_found: grpc.status.NOT_FOUND,
  permission_denied: grpc.status.PERMISSION_DENIED,
  unauthenticated: grpc.status.UNAUTHENTICATED,
  unavailable: grpc.status.UNAVAILABLE,
  resource_exhausted: grpc.status.RESOURCE_EXHAUSTED,
  internal: grpc.status.INTERNAL,
};

/** Maps any thrown value to a grpc-js status error; unknown errors become INTERNAL. */
export function toServiceError(e: unknown): Partial<grpc.StatusObject> & Error {
  if (e instanceof RequestError) {
    return Object.assign(new Error(e.message), { code: CODES[e.kind], details: e.message });
  }
  const message = e instanceof Error ? e.message : String(e);
  return Object.assign(new Error(message), {
    code: grpc.status.INTERNAL,
    details: `internal error: ${message}`,
  });
}
