/**
 * gRPC status codes (the numbers are the wire contract, grpc/doc/statuscodes.md) and the error the
 * proxy's gRPC client rejects with. Callers compare `code` against `Status`.
 */
import { ErrorCode } from "../http/h2/frame.ts";

export const Status = {
  OK: 0,
  CANCELLED: 1,
  UNKNOWN: 2,
  INVALID_ARGUMENT: 3,
  DEADLINE_EXCEEDED: 4,
  NOT_FOUND: 5,
  ALREADY_EXISTS: 6,
  PERMISSION_DENIED: 7,
  RESOURCE_EXHAUSTED: 8,
  FAILED_PRECONDITION: 9,
  ABORTED: 10,
  OUT_OF_RANGE: 11,
  UNIMPLEMENTED: 12,
  INTERNAL: 13,
  UNAVAILABLE: 14,
  DATA_LOSS: 15,
  UNAUTHENTICATED: 16,
} as const;

export type StatusCode = (typeof Status)[keyof typeof Status];

const NAMES = Object.fromEntries(Object.entries(Status).map(([k, v]) => [v, k])) as Record<number, string>;

export function statusName(code: number): string {
  return NAMES[code] ?? `code ${code}`;
}

/** How a call ended: `grpc-status` and `grpc-message` (decoded), or what the client concluded. */
export interface GrpcStatus {
  code: number;
  details: string;
}

export class GrpcError extends Error {
  override name = "GrpcError";
  constructor(readonly code: number, readonly details: string) {
    super(`${statusName(code)}: ${details}`);
  }

  static of(s: GrpcStatus): GrpcError {
    return new GrpcError(s.code, s.details);
  }
}

/**
 * A response that is not gRPC at all: the HTTP status decides (grpc/doc/http-grpc-status-mapping.md),
 * e.g. a proxy in front of the control plane answering 503.
 */
export function statusFromHttp(status: number): number {
  switch (status) {
    case 400:
      return Status.INTERNAL;
    case 401:
      return Status.UNAUTHENTICATED;
    case 403:
      return Status.PERMISSION_DENIED;
    case 404:
      return Status.UNIMPLEMENTED;
    case 429:
    case 502:
    case 503:
    case 504:
      return Status.UNAVAILABLE;
    default:
      return Status.UNKNOWN;
  }
}

/** A stream reset by the server (or lost with its connection) before a status arrived. */
export function statusFromReset(h2Code: number): number {
  switch (h2Code) {
    case ErrorCode.REFUSED_STREAM:
      return Status.UNAVAILABLE; // not processed: safe to retry
    case ErrorCode.CANCEL:
      return Status.CANCELLED;
    case ErrorCode.ENHANCE_YOUR_CALM:
      return Status.RESOURCE_EXHAUSTED;
    case ErrorCode.INADEQUATE_SECURITY:
      return Status.PERMISSION_DENIED;
    default:
      return Status.INTERNAL;
  }
}

/**
 * `grpc-status` as sent: a decimal code. Anything else is the server's bug, reported as UNKNOWN with
 * what was received (the gRPC spec's rule for a status the client cannot read).
 */
export function parseGrpcStatus(raw: string | undefined, message: string | undefined): GrpcStatus {
  if (raw === undefined) {
    return { code: Status.UNKNOWN, details: "the server ended the call without a grpc-status" };
  }
  if (!/^\d{1,3}$/.test(raw)) {
    return {
      code: Status.UNKNOWN,
      details: `the server sent an unreadable grpc-status ${JSON.stringify(raw)}`,
    };
  }
  const code = Number(raw);
  if (code > Status.UNAUTHENTICATED) {
    return {
      code: Status.UNKNOWN,
      details: `the server sent grpc-status ${code}, which is not a gRPC status code`,
    };
  }
  return { code, details: decodeGrpcMessage(message ?? "") };
}

/** `grpc-message` is percent-encoded UTF-8; a malformed escape is kept as sent rather than lost. */
export function decodeGrpcMessage(m: string): string {
  if (!m.includes("%")) return m;
  try {
    return decodeURIComponent(m);
  } catch {
    return m;
  }
}
