/**
 * HTTP/1 carried over HTTP/2 between meshed proxies (Linkerd's `l5d-orig-proto`): the outbound
 * proxy multiplexes HTTP/1 requests onto one HTTP/2 connection to the peer proxy and marks each
 * with its original version; the inbound proxy restores it before talking to the application,
 * and marks the response so the outbound side can restore the response's version too.
 */
import type { HttpRequest, HttpResponse, HttpVersion } from "./message.ts";

export const ORIG_PROTO_HEADER = "l5d-orig-proto";

/** Outbound: an HTTP/1 request about to go over HTTP/2. No-op for HTTP/2 requests. */
export function markUpgraded(req: HttpRequest): void {
  if (req.version === "HTTP/2") return;
  req.headers.set(ORIG_PROTO_HEADER, req.version);
}

/**
 * Inbound: if the request arrived over HTTP/2 carrying `l5d-orig-proto`, returns the version to
 * speak to the application and removes the marker; otherwise undefined (leave it as it is).
 * An unknown value is dropped and the request treated as native HTTP/2.
 */
export function takeOrigProto(req: HttpRequest): HttpVersion | undefined {
  if (req.version !== "HTTP/2") {
    // Only proxies set it, and only over HTTP/2: strip it from HTTP/1 input.
    req.headers.delete(ORIG_PROTO_HEADER);
    return undefined;
  }
  const v = req.headers.get(ORIG_PROTO_HEADER);
  if (v === undefined) return undefined;
  req.headers.delete(ORIG_PROTO_HEADER);
  // The value a proxy sends, without parsing it (no split strings per request).
  if (v === "HTTP/1.1" || v === "HTTP/1.0") return v;
  const base = v.split(";", 1)[0].trim();
  return base === "HTTP/1.1" || base === "HTTP/1.0" ? base : undefined;
}

/** Inbound: the response of a downgraded request, going back over HTTP/2. */
export function markDowngradedResponse(res: HttpResponse, version: HttpVersion): void {
  res.headers.set(ORIG_PROTO_HEADER, version);
}

/** Outbound: strips the marker from a response before it reaches the HTTP/1 application. */
export function clearResponseMark(res: HttpResponse): void {
  res.headers.delete(ORIG_PROTO_HEADER);
}
