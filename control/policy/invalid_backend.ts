/**
 * Backends the proxy cannot reach, sent as Linkerd sends them: a backend with metadata
 * `default: invalid`, a queue and no kind, whose route-backend filters are one failure injector
 * that fails every request with a message saying why. So a route with one bad backendRef still
 * routes its other backends by weight, and the bad share of requests fails visibly.
 */
// Plain objects, structurally the generated messages (this file stays off the proto/gen import allowlist).
import { isServiceBackendRef } from "./ref_kind.ts";
import type { BackendRef } from "./resources.ts";

/** HTTP status of the failure injected for an invalid backend (Linkerd's). */
export const INVALID_BACKEND_HTTP_STATUS = 500;
/**
 * gRPC status of the failure injected for an invalid backend. Linkerd's controller sends 500,
 * which is not a gRPC code (clients read an unknown code as UNKNOWN, and weft's proxy refuses
 * codes above 16), so weft sends UNKNOWN (2) itself.
 */
export const INVALID_BACKEND_GRPC_CODE = 2;

/**
 * Why a backendRef cannot be used, in Linkerd's order and words, or undefined when it can:
 * a kind other than Service, a Service without a port, a Service that does not exist.
 */
export function backendProblem(
  ref: BackendRef,
  routeNs: string,
  serviceExists: (namespace: string, name: string) => boolean,
): string | undefined {
  if (!isServiceBackendRef(ref)) {
    return `unsupported backend type ${ref.group ?? "core"} ${ref.kind || "<empty>"}`;
  }
  if (!ref.port) return `missing port for backend Service ${ref.name}`;
  if (!serviceExists(ref.namespace ?? routeNs, ref.name)) return `Service not found ${ref.name}`;
  return undefined;
}

/** The backend message: metadata `default: invalid`, the given queue, no kind. */
export function invalidBackend<Q>(queue: Q) {
  return { metadata: { kind: { $case: "default" as const, value: "invalid" } }, queue };
}

/** An HTTP route-backend filter failing every request (no ratio: all of them). */
export function httpFailure(message: string) {
  return {
    kind: { $case: "failureInjector" as const, value: { status: INVALID_BACKEND_HTTP_STATUS, message } },
  };
}

/** A gRPC route-backend filter failing every call. */
export function grpcFailure(message: string) {
  return {
    kind: { $case: "failureInjector" as const, value: { code: INVALID_BACKEND_GRPC_CODE, message } },
  };
}
