/**
 * A layer wraps a service with one concern: metrics, retries and timeouts, filters. Stacks compose
 * their layers once per target (a route rule's match, a profile route, a backend, an endpoint), so
 * a request only calls through functions built before it arrived, and the code that builds a
 * target lists its request path in order.
 */
import type { HttpService } from "./message.ts";

export type Layer = (inner: HttpService) => HttpService;

/** `service` inside `layers`, the first one outermost: `layered(s, a, b)` is `a(b(s))`. */
export function layered(service: HttpService, ...layers: Layer[]): HttpService {
  let s = service;
  for (let i = layers.length - 1; i >= 0; i--) s = layers[i](s);
  return s;
}

/** The layer that adds nothing (a rule without response filters, a plan without retries). */
export const passThrough: Layer = (inner) => inner;
