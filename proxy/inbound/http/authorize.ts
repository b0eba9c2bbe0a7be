/**
 * Per-request inbound authorization on HTTP ports, from the port's `Server` (InboundServerPolicies):
 * the request is matched to one of the server's HTTPRoutes / GRPCRoutes (Gateway API precedence),
 * then the route's authorizations — the route's own, followed by the server's, as Linkerd's proxy
 * combines them — decide for the connection's client address and identity; localhost is always
 * allowed. A server without routes gets one default route ("default", matching everything) that
 * carries the server's authorizations. Then the server's local rate limits, then the route's filters
 * (header modifier, redirect, failure injection).
 *
 * Answers: no route → 404 (gRPC NOT_FOUND 5); not authorized → 403 (gRPC PERMISSION_DENIED 7);
 * rate limited → 429 (gRPC RESOURCE_EXHAUSTED 8).
 *
 * Use: compile once per policy update (`compileHttpServer`, or `httpServerFromPort` for a default
 * policy), create one `HttpAuthorizer` per connection, call `authorize(policy, req, rng)` per
 * request. A route's decision depends only on the connection, so it is computed once per
 * connection and route and reused; an allowed request costs a route lookup and no allocation.
 */
import type { HttpRoute, Server } from "../../../proto/gen_messages/inbound.ts";
import type { Clock } from "../../../proto/support/clock.ts";
import { preciseClock } from "../../core/clock.ts";
import type { Rng } from "../../core/rng.ts";
import { grpcErrorResponse, type HttpRequest, type HttpResponse, textResponse } from "../../http/message.ts";
import { compileGrpcFilters, compileHttpFilters, RouteFilters } from "../../route/filters.ts";
import { compileGrpcMatch, GRPC_MATCH_ALL } from "../../route/grpc_match.ts";
import { compileHostMatch, compileHttpMatch, MATCH_ALL, type Matcher } from "../../route/http_match.ts";
import {
  type LocalRateLimit,
  localRateLimit,
  type RateLimited,
  type RateLimitRef,
} from "../../route/local_rate_limit.ts";
import { type RouteMeta, routeMeta } from "../../route/meta.ts";
import { RouteTable, type TableRoute } from "../../route/table.ts";
import {
  authorize,
  compileServer,
  type ConnMeta,
  type InvalidPolicyReason,
  PolicyError,
  type PortPolicy,
} from "../authorize.ts";

/** group / kind / name, as metrics label policy objects. */
export interface PolicyRef {
  readonly group: string;
  readonly kind: string;
  readonly name: string;
}

export interface InboundRoute {
  readonly index: number;
  readonly ref: PolicyRef;
  readonly meta: RouteMeta;
  /** The route's authorizations then the server's, as a PortPolicy for `authorize`. */
  readonly authz: PortPolicy;
  readonly filters: RouteFilters;
}

export interface HttpServerPolicy {
  readonly server: PolicyRef;
  readonly protocol: PortPolicy["protocol"];
  readonly grpc: boolean;
  readonly routes: RouteTable<InboundRoute>;
  readonly routeCount: number;
  readonly rateLimit: LocalRateLimit | undefined;
  /** Denials that do not depend on the client (built once). */
  readonly notFound: InboundDenial;
}

export interface InboundPermit {
  readonly allow: true;
  readonly server: PolicyRef;
  readonly route: PolicyRef;
  readonly authz: PolicyRef;
  readonly audited: boolean;
}

export interface InboundDenial {
  readonly allow: false;
  readonly status: number;
  readonly grpcStatus: number;
  /** Metric/log label: "unauthorized", "route_not_found" or "rate_limited". */
  readonly reason: "unauthorized" | "route_not_found" | "rate_limited";
  readonly message: string;
  readonly server: PolicyRef;
  readonly route: PolicyRef | undefined;
  /**
   * Set when a rate limit refused a request its authorization allowed: that permit (Linkerd counts
   * the request as allowed, then as rate limited), the limiting policy and Linkerd's scope label.
   */
  readonly limited?: {
    readonly permit: InboundPermit;
    readonly policy: RateLimitRef | undefined;
    readonly scope: "total" | "identity";
  };
}

/**
 * An allowed request may still be answered by the proxy: `response` is set when a route filter
 * (redirect, failure injection) answers it instead of the application.
 */
export type InboundDecision = InboundPermit | InboundDenial | {
  readonly allow: true;
  readonly permit: InboundPermit;
  readonly response: HttpResponse;
};

const DEFAULT_ROUTE_META: RouteMeta = Object.freeze({
  group: "",
  kind: "default",
  name: "default",
  namespace: "",
  section: "",
});

function ref(m: RouteMeta): PolicyRef {
  return { group: m.group, kind: m.kind, name: m.name };
}

function serverRef(p: PortPolicy, labels: Record<string, string> | undefined): PolicyRef {
  if (p.serverKind === "default") return { group: "", kind: "default", name: p.serverName };
  return { group: labels?.["group"] ?? "policy.linkerd.io", kind: p.serverKind, name: p.serverName };
}

function routePolicy(base: PortPolicy, routeAuthz: PortPolicy["authorizations"]): PortPolicy {
  return { ...base, authorizations: [...routeAuthz, ...base.authorizations] };
}

function build(
  base: PortPolicy,
  server: PolicyRef,
  grpc: boolean,
  routes: TableRoute<InboundRoute>[],
  rateLimit: LocalRateLimit | undefined,
): HttpServerPolicy {
  if (routes.length === 0) {
    const rule: InboundRoute = {
      index: 0,
      ref: ref(DEFAULT_ROUTE_META),
      meta: DEFAULT_ROUTE_META,
      authz: base,
      filters: new RouteFilters([], [], grpc),
    };
    routes = [{ hosts: [], rules: [{ matchers: [], policy: rule }] }];
  }
  return {
    server,
    protocol: base.protocol,
    grpc,
    routes: new RouteTable(routes, grpc ? GRPC_MATCH_ALL : MATCH_ALL),
    routeCount: routes.length,
    rateLimit,
    notFound: {
      allow: false,
      status: 404,
      grpcStatus: 5,
      reason: "route_not_found",
      message: `no route of server ${server.name} matches the request`,
      server,
      route: undefined,
    },
  };
}

/** The HTTP policy of a default (or otherwise route-less) port policy: one default route. */
export function httpServerFromPort(p: PortPolicy): HttpServerPolicy {
  return build(p, serverRef(p, undefined), p.protocol === "grpc", [], undefined);
}

/**
 * Runs one compile step: any error it throws becomes a PolicyError with `reason` (a PolicyError
 * keeps its own), its message prefixed with `prefix` when given.
 */
function step<T>(reason: InvalidPolicyReason, f: () => T, prefix?: string): T {
  try {
    return f();
  } catch (e) {
    if (!(e instanceof Error)) throw e;
    const message = prefix === undefined ? e.message : `${prefix}: ${e.message}`;
    throw new PolicyError(message, e instanceof PolicyError ? e.reason : reason);
  }
}

/** A filter this proxy does not know decodes with no kind: the policy cannot be honoured. */
function checkFilterKinds(filters: { kind?: unknown }[], what: string): void {
  filters.forEach((f, i) => {
    if (!f.kind) throw new PolicyError(`${what} filter ${i} has no kind this proxy knows`, "route_filter");
  });
}

/**
 * Validates and compiles a Server's HTTP part; throws PolicyError naming what is wrong, with a
 * `reason` saying which part. Every part of the message is compiled here, so a message that
 * passes cannot fail later, per request.
 */
export function compileHttpServer(s: Server, clock: Clock = preciseClock): HttpServerPolicy {
  const base = compileServer(s);
  const server = serverRef(base, s.labels);
  const authzOf = (authorizations: Server["authorizations"], what: string) =>
    step("malformed", () => compileServer({ ...s, authorizations }).authorizations, what);
  const k = s.protocol!.kind!;
  // HTTP and gRPC routes differ only in how their matches and filters compile.
  const compileRoutes = <M, F extends { kind?: unknown }>(
    routes: (Pick<HttpRoute, "metadata" | "hosts" | "authorizations"> & {
      rules: { matches: M[]; filters: F[] }[];
    })[],
    kind: "http" | "grpc",
    compileMatch: (m: M, what: string) => Matcher,
    compileFilters: (f: F[], what: string) => RouteFilters,
  ): TableRoute<InboundRoute>[] =>
    routes.map((r, index) => {
      const at = `server ${server.name} ${kind} route ${index}`;
      const meta = step("metadata", () => routeMeta(r.metadata, at));
      const what = `server ${server.name} ${kind} route ${meta.name}`;
      const authz = routePolicy(base, authzOf(r.authorizations, what));
      return {
        hosts: r.hosts.map((h) => step("route_match", () => compileHostMatch(h, what))),
        rules: r.rules.map((rule, i) => ({
          matchers: rule.matches.map((m, j) =>
            step("route_match", () => compileMatch(m, `${what} rule ${i} match ${j}`))
          ),
          policy: {
            index,
            ref: ref(meta),
            meta,
            authz,
            filters: step("route_filter", () => {
              checkFilterKinds(rule.filters, `${what} rule ${i}`);
              return compileFilters(rule.filters, `${what} rule ${i}`);
            }),
          },
        })),
      };
    });
  if (k.$case === "grpc") {
    const routes = compileRoutes(k.value.routes, "grpc", compileGrpcMatch, compileGrpcFilters);
    return build(base, server, true, routes, undefined);
  }
  let httpRoutes: HttpRoute[] = [];
  let limit = undefined;
  if (k.$case === "detect") {
    httpRoutes = k.value.httpRoutes;
    limit = k.value.httpLocalRateLimit;
  } else if (k.$case === "http1" || k.$case === "http2") {
    httpRoutes = k.value.routes;
    limit = k.value.localRateLimit;
  }
  const routes = compileRoutes(httpRoutes, "http", compileHttpMatch, compileHttpFilters);
  const rateLimit = step(
    "rate_limit",
    () => localRateLimit(limit, clock),
    `server ${server.name} rate limit`,
  );
  return build(base, server, false, routes, rateLimit);
}

/** A denial or an injected/redirect response as the response to send (gRPC-shaped for gRPC calls). */
export function denialResponse(d: InboundDenial, grpc: boolean): HttpResponse {
  return grpc ? grpcErrorResponse(d.grpcStatus, d.message) : textResponse(d.status, d.message);
}

/** One connection's authorizer; keeps each route's decision for this client. */
export class HttpAuthorizer {
  readonly #conn: ConnMeta;
  #policy: HttpServerPolicy | undefined;
  #decisions: (InboundPermit | InboundDenial | undefined)[] = [];
  /** Rate-limit denials by route and scope, built once so their counters are looked up once too. */
  #limited = new Map<string, InboundDenial>();

  constructor(conn: ConnMeta) {
    this.#conn = conn;
  }

  /** The client identity rate limits and `l5d-client-id` use (undefined without mesh TLS identity). */
  get clientId(): string | undefined {
    return this.#conn.tls?.clientId;
  }

  /**
   * Decides for one request. Header-modifier filters of the matched route are applied to `req`.
   * `rng` drives failure injection.
   */
  authorize(policy: HttpServerPolicy, req: HttpRequest, rng: Rng): InboundDecision {
    if (policy !== this.#policy) {
      this.#policy = policy;
      this.#decisions = new Array(policy.routeCount);
      this.#limited.clear();
    }
    const hit = policy.routes.find(req);
    if (!hit) return policy.notFound;
    const rule = hit.policy;
    let d = this.#decisions[rule.index];
    if (d === undefined) d = this.#decisions[rule.index] = this.#decide(policy, rule);
    if (!d.allow) return d;
    const limited = policy.rateLimit?.check(this.#conn.tls?.clientId);
    if (limited) return this.#limitedDenial(policy, rule, d, limited);
    if (!rule.filters.empty) return applyFilters(d, rule, req, hit.matcher, rng);
    return d;
  }

  #limitedDenial(
    policy: HttpServerPolicy,
    rule: InboundRoute,
    permit: InboundPermit,
    limited: RateLimited,
  ): InboundDenial {
    const key = `${rule.index}/${limited.scope}/${limited.rps}`;
    let d = this.#limited.get(key);
    if (!d) {
      d = {
        allow: false,
        status: 429,
        grpcStatus: 8,
        reason: "rate_limited",
        message:
          `${limited.scope} rate limit of ${limited.rps} requests/s exceeded on server ${policy.server.name}`,
        server: policy.server,
        route: rule.ref,
        limited: {
          permit,
          policy: policy.rateLimit?.ref,
          // Linkerd labels an override's refusal with the identity scope.
          scope: limited.scope === "total" ? "total" : "identity",
        },
      };
      this.#limited.set(key, d);
    }
    return d;
  }

  #decide(policy: HttpServerPolicy, rule: InboundRoute): InboundPermit | InboundDenial {
    const c = this.#conn;
    const r = authorize(rule.authz, c);
    if (r.allow) {
      const group = r.authzKind === "default" ? "" : "policy.linkerd.io";
      return {
        allow: true,
        server: policy.server,
        route: rule.ref,
        authz: { group, kind: r.authzKind, name: r.authzName },
        audited: r.audited,
      };
    }
    const who = c.tls?.clientId ?? (c.tls ? "TLS without identity" : "no TLS");
    return {
      allow: false,
      status: 403,
      grpcStatus: 7,
      reason: "unauthorized",
      message:
        `no authorization of route ${rule.meta.name} on server ${policy.server.name} permits ${c.clientIp} (${who})`,
      server: policy.server,
      route: rule.ref,
    };
  }
}

function applyFilters(
  permit: InboundPermit,
  rule: InboundRoute,
  req: HttpRequest,
  matcher: Matcher,
  rng: Rng,
): InboundDecision {
  const response = rule.filters.applyRequest(req, matcher, rng);
  return response ? { allow: true, permit, response } : permit;
}
