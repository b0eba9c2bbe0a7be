/**
 * Linkerd's proxy HTTP metrics, with Linkerd's names, labels and latency buckets so its dashboards,
 * `linkerd viz stat` queries and alerts work unchanged:
 *
 *   request_total, response_total, response_latency_ms            per endpoint (both directions)
 *   route_request_total, route_response_total, route_response_latency_ms   per profile route
 *   route_actual_request_total, route_actual_response_total        per attempt (retries included)
 *   route_retryable_total (+ skipped="no_budget")                  retryable responses
 *   inbound_http_authz_allow_total, inbound_http_authz_deny_total, inbound_http_route_not_found_total
 *   inbound_http_errors_total, outbound_http_errors_total          requests the proxy failed itself
 *
 * Hot path: the stacks resolve a labelled handle (`RequestMetrics`, `CounterHandle`) once per
 * endpoint / route / connection and keep it; a request then costs one small recorder object and a
 * few number increments. Label objects and text are built only when a handle is created and at
 * scrape time. Series idle longer than `retainIdleMs` (Linkerd's default: 10 minutes) are dropped
 * at scrape, so client-chosen authorities cannot grow memory without bound.
 */
import type { Registry } from "./registry.ts";
import {
  CounterFamily,
  type CounterHandle,
  DEFAULT_RETAIN_IDLE_MS,
  RequestFamilies,
  type RequestMetrics,
} from "./http_families.ts";
import {
  copyInto,
  type InboundLabels,
  type Labels,
  type OutboundLabels,
  policyLabels,
  type PolicyRef,
  type RouteLabels,
  sortedPrefixed,
  targetLabels,
  type TlsLabels,
} from "./http_labels.ts";

// The pieces live in their own files; importers keep one entry point.
export { CounterHandle, DEFAULT_RETAIN_IDLE_MS, LATENCY_BOUNDS_MS, RequestMetrics } from "./http_families.ts";
export type { InboundLabels, OutboundLabels, PolicyRef, RouteLabels, TlsLabels } from "./http_labels.ts";
export { instrumentResponse, recordRequests, RequestRecorder } from "./http_recorder.ts";

/** A profile route's handles: route_* for the logical request, route_actual_* per attempt. */
export class RouteMetrics {
  readonly requests: RequestMetrics;
  readonly actual: RequestMetrics;
  #retryable: CounterHandle;
  #noBudget: CounterHandle;

  constructor(
    requests: RequestMetrics,
    actual: RequestMetrics,
    retryable: CounterHandle,
    noBudget: CounterHandle,
  ) {
    this.requests = requests;
    this.actual = actual;
    this.#retryable = retryable;
    this.#noBudget = noBudget;
  }

  /** A response the route's retry policy considers retryable; `hasBudget` false when the budget said no. */
  retryable(hasBudget: boolean): void {
    this.#retryable.inc();
    if (!hasBudget) this.#noBudget.inc();
  }
}

/** Per connection (or endpoint): handles by authority, so a request costs one Map lookup. */
export class OutboundScope {
  #m: HttpMetrics;
  #labels: Omit<OutboundLabels, "authority">;
  #byAuthority = new Map<string, RequestMetrics>();

  constructor(m: HttpMetrics, labels: Omit<OutboundLabels, "authority">) {
    this.#m = m;
    this.#labels = labels;
  }

  get(authority: string): RequestMetrics {
    let h = this.#byAuthority.get(authority);
    if (h === undefined || h.evicted) {
      // Bounded: a client cycling through Host values must not grow a connection's cache.
      if (this.#byAuthority.size >= SCOPE_CACHE_MAX) this.#byAuthority.clear();
      h = this.#m.outbound({ ...this.#labels, authority });
      this.#byAuthority.set(authority, h);
    }
    return h;
  }
}

/** Per inbound connection: handles by (route, authz, authority); route and authz are the policy's objects. */
export class InboundScope {
  #m: HttpMetrics;
  #labels: Omit<InboundLabels, "authority" | "route" | "authz">;
  #cache = new WeakMap<PolicyRef, WeakMap<PolicyRef, Map<string, RequestMetrics>>>();

  constructor(m: HttpMetrics, labels: Omit<InboundLabels, "authority" | "route" | "authz">) {
    this.#m = m;
    this.#labels = labels;
  }

  get(authority: string, route: PolicyRef, authz: PolicyRef): RequestMetrics {
    let byAuthz = this.#cache.get(route);
    if (!byAuthz) this.#cache.set(route, byAuthz = new WeakMap());
    let byAuthority = byAuthz.get(authz);
    if (!byAuthority) byAuthz.set(authz, byAuthority = new Map());
    let h = byAuthority.get(authority);
    if (h === undefined || h.evicted) {
      if (byAuthority.size >= SCOPE_CACHE_MAX) byAuthority.clear();
      h = this.#m.inbound({ ...this.#labels, authority, route, authz });
      byAuthority.set(authority, h);
    }
    return h;
  }
}

const SCOPE_CACHE_MAX = 64;

/** `inbound_http_errors_total` / `outbound_http_errors_total` `error` values Linkerd uses. */
export const HTTP_ERROR_KIND = {
  failfast: "failfast",
  loadshed: "loadshed",
  responseTimeout: "response timeout",
  unauthorized: "unauthorized",
  identityRequired: "identity required",
  io: "i/o",
  unexpected: "unexpected",
} as const;

/**
 * The `error` label for a request the proxy itself failed (Linkerd's spellings): failfast and
 * load shedding from the balancer queue, response timeouts, refusals, I/O to the peer, else
 * unexpected.
 */
export function httpErrorKind(e: unknown): string {
  const reason = (e as { reason?: unknown })?.reason;
  switch (reason) {
    case "failfast":
    case "no_endpoints":
      return HTTP_ERROR_KIND.failfast;
    case "queue_full":
      return HTTP_ERROR_KIND.loadshed;
    case "timeout":
      return HTTP_ERROR_KIND.responseTimeout;
    case "unauthorized":
      return HTTP_ERROR_KIND.unauthorized;
    case "connect_failed":
    case "connection_lost":
    case "reset":
    case "refused":
    case "closed":
      return HTTP_ERROR_KIND.io;
    default:
      return (e as { status?: unknown })?.status === 502 ? HTTP_ERROR_KIND.io : HTTP_ERROR_KIND.unexpected;
  }
}

export interface HttpMetricsOptions {
  /** Monotonic milliseconds (default `performance.now`). */
  now?: () => number;
  retainIdleMs?: number;
}

export class HttpMetrics {
  readonly now: () => number;
  #endpoint: RequestFamilies;
  #route: RequestFamilies;
  #actual: RequestFamilies;
  #retryable: CounterFamily;
  #authzAllow: CounterFamily;
  #authzDeny: CounterFamily;
  #routeNotFound: CounterFamily;
  #localRateLimit: CounterFamily;
  #inboundErrors: CounterFamily;
  #outboundErrors: CounterFamily;

  constructor(registry: Registry, o: HttpMetricsOptions = {}) {
    const now = this.now = o.now ?? (() => performance.now());
    const retain = o.retainIdleMs ?? DEFAULT_RETAIN_IDLE_MS;
    this.#endpoint = new RequestFamilies(registry, "", true, now, retain);
    this.#route = new RequestFamilies(registry, "route_", true, now, retain);
    this.#actual = new RequestFamilies(registry, "route_actual_", false, now, retain);
    const counter = (name: string, help: string) => new CounterFamily(registry, name, help, now, retain);
    this.#retryable = counter("route_retryable_total", "Retryable HTTP responses per route.");
    this.#authzAllow = counter(
      "inbound_http_authz_allow_total",
      "Inbound HTTP requests an authorization allowed.",
    );
    this.#authzDeny = counter(
      "inbound_http_authz_deny_total",
      "Inbound HTTP requests refused because no authorization of their route allows them.",
    );
    this.#routeNotFound = counter(
      "inbound_http_route_not_found_total",
      "Inbound HTTP requests that matched no route of their server.",
    );
    this.#localRateLimit = counter(
      "inbound_http_local_ratelimit_total",
      "Inbound HTTP requests refused by a local rate limit (HTTPLocalRateLimitPolicy).",
    );
    this.#inboundErrors = counter(
      "inbound_http_errors_total",
      "Inbound HTTP requests the proxy failed itself, by error.",
    );
    this.#outboundErrors = counter(
      "outbound_http_errors_total",
      "Outbound HTTP requests the proxy failed itself, by error.",
    );
  }

  /** Endpoint-level handle for inbound requests (labels in Linkerd's order). */
  inbound(l: InboundLabels): RequestMetrics {
    const labels: Labels = { direction: "inbound" };
    if (l.authority) labels.authority = l.authority;
    targetLabels(labels, l.targetAddr);
    copyInto(labels, l.tls);
    policyLabels(labels, "srv", l.server);
    policyLabels(labels, "route", l.route);
    policyLabels(labels, "authz", l.authz);
    return this.#endpoint.get(labels);
  }

  /** Endpoint-level handle for outbound requests to one endpoint. */
  outbound(l: OutboundLabels): RequestMetrics {
    const labels: Labels = { direction: "outbound" };
    if (l.authority) labels.authority = l.authority;
    targetLabels(labels, l.targetAddr);
    copyInto(labels, l.tls);
    sortedPrefixed(labels, "dst_", l.dst);
    return this.#endpoint.get(labels);
  }

  inboundScope(l: Omit<InboundLabels, "authority" | "route" | "authz">): InboundScope {
    return new InboundScope(this, l);
  }

  outboundScope(l: Omit<OutboundLabels, "authority">): OutboundScope {
    return new OutboundScope(this, l);
  }

  /** Handles for one profile route (Linkerd labels: direction, dst, rt_*). */
  route(l: RouteLabels): RouteMetrics {
    const labels: Labels = { direction: l.direction, dst: l.dst };
    sortedPrefixed(labels, "rt_", l.labels);
    return new RouteMetrics(
      this.#route.get(labels),
      this.#actual.get({ ...labels }),
      this.#retryable.get({ ...labels }),
      this.#retryable.get({ ...labels, skipped: "no_budget" }),
    );
  }

  /** Counter of requests allowed by `authz` on `route` of `server`. */
  authzAllow(
    l: { targetAddr: string; tls: TlsLabels; server: PolicyRef; route: PolicyRef; authz: PolicyRef },
  ): CounterHandle {
    const labels: Labels = {};
    targetLabels(labels, l.targetAddr);
    policyLabels(labels, "srv", l.server);
    policyLabels(labels, "route", l.route);
    policyLabels(labels, "authz", l.authz);
    copyInto(labels, l.tls);
    return this.#authzAllow.get(labels);
  }

  authzDeny(l: { targetAddr: string; tls: TlsLabels; server: PolicyRef; route: PolicyRef }): CounterHandle {
    const labels: Labels = {};
    targetLabels(labels, l.targetAddr);
    policyLabels(labels, "srv", l.server);
    policyLabels(labels, "route", l.route);
    copyInto(labels, l.tls);
    return this.#authzDeny.get(labels);
  }

  routeNotFound(l: { targetAddr: string; tls: TlsLabels; server: PolicyRef }): CounterHandle {
    const labels: Labels = {};
    targetLabels(labels, l.targetAddr);
    policyLabels(labels, "srv", l.server);
    copyInto(labels, l.tls);
    return this.#routeNotFound.get(labels);
  }

  /** Requests a local rate limit refused; `scope` is "total" or "identity" (overrides count as identity). */
  localRateLimit(
    l: {
      targetAddr: string;
      tls: TlsLabels;
      server: PolicyRef;
      policy: PolicyRef | undefined;
      scope: string;
    },
  ): CounterHandle {
    const labels: Labels = {};
    targetLabels(labels, l.targetAddr);
    policyLabels(labels, "srv", l.server);
    if (l.policy) policyLabels(labels, "ratelimit", l.policy);
    labels.ratelimit_scope = l.scope;
    copyInto(labels, l.tls);
    return this.#localRateLimit.get(labels);
  }

  /** `error` from HTTP_ERROR_KIND. */
  inboundError(error: string): CounterHandle {
    return this.#inboundErrors.get({ error });
  }

  outboundError(error: string): CounterHandle {
    return this.#outboundErrors.get({ error });
  }
}
