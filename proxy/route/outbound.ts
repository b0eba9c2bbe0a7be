/**
 * Compiles an `io.linkerd.proxy.outbound.OutboundPolicy` once per update into route tables that
 * answer, per request, which rule applies: its filters, its backend distribution, its timeouts and
 * retry policy. Invalid routes make the whole update invalid (RouteConfigError naming the route,
 * rule and field), as in Linkerd's proxy; keep serving with the previous compiled policy then.
 *
 * Per request: `routes.find(req)` → a RouteHit (static; no allocation), then
 * `hit.policy.filters.applyRequest(req, hit.matcher, rng)` (a response here answers the request),
 * `hit.policy.backends.choose(rng, available)` → RouteBackend (its `key` names the balancer to use),
 * `execute(req, signal, hit.policy.plan, send, deps)` for retries and timeouts.
 */
import { type Endpoint, endpointFromWire } from "../core/endpoint.ts";
import type {
  Backend,
  GrpcRoute,
  GrpcRoute_Filter,
  GrpcRoute_RouteBackend,
  HttpRoute,
  HttpRoute_Filter,
  HttpRoute_RouteBackend,
  OutboundPolicy,
} from "../../proto/gen_messages/outbound.ts";
import type { FailureAccrualConfig, QueueConfig } from "../balance/balancer.ts";
import { failureAccrualConfig, peakEwmaConfig, queueConfig } from "../balance/config.ts";
import type { PeakEwmaConfig } from "../balance/peak_ewma.ts";
import type { HttpRequest, HttpVersion } from "../http/message.ts";
import type { RequestPlan } from "./retry/execute.ts";
import { grpcRetryPolicy, httpRetryPolicy } from "./retry/policy.ts";
import { routeTimeouts } from "./retry/timeouts.ts";
import { durationMs } from "../core/duration.ts";
import { compileGrpcFilters, compileHttpFilters, RouteFilters } from "./filters.ts";
import { compileGrpcMatch, GRPC_MATCH_ALL } from "./grpc_match.ts";
import { compileHostMatch, compileHttpMatch, MATCH_ALL } from "./http_match.ts";
import { Distribution } from "./distribution.ts";
import { describeMeta, RouteConfigError, type RouteMeta, routeMeta } from "./meta.ts";
import { type RouteHit, RouteTable } from "./table.ts";

export type BackendTarget =
  | { readonly kind: "balancer"; readonly path: string; readonly ewma: PeakEwmaConfig }
  | { readonly kind: "forward"; readonly endpoint: Endpoint; readonly ip: string; readonly port: number }
  | { readonly kind: "invalid"; readonly message: string };

export interface RouteBackend {
  /** Same key = same balancer/endpoint target and queue: reuse one balancer per key across updates. */
  readonly key: string;
  readonly meta: RouteMeta;
  readonly target: BackendTarget;
  readonly queue: QueueConfig;
  /** The backend's own filters, applied after the rule's. */
  readonly filters: RouteFilters;
  /** Deprecated per-backend request timeout, when set. */
  readonly requestTimeoutMs: number | undefined;
}

export interface OutboundRule {
  readonly route: RouteMeta;
  readonly grpc: boolean;
  readonly filters: RouteFilters;
  readonly backends: Distribution<RouteBackend>;
  readonly plan: RequestPlan;
  /** Per-request `l5d-*` override headers may be honoured (not implemented here). */
  readonly allowL5dRequestHeaders: boolean;
}

export interface OutboundRoutes {
  readonly kind: "http" | "grpc";
  readonly table: RouteTable<OutboundRule>;
  readonly failureAccrual: FailureAccrualConfig | undefined;
}

export type OutboundProtocol = "detect" | "opaque" | "http1" | "http2" | "grpc" | "tls";

export class OutboundPolicyRoutes {
  constructor(
    readonly meta: RouteMeta,
    readonly protocol: OutboundProtocol,
    /** Detect timeout (detect protocol only). */
    readonly detectTimeoutMs: number | undefined,
    readonly http1: OutboundRoutes | undefined,
    readonly http2: OutboundRoutes | undefined,
    readonly grpc: OutboundRoutes | undefined,
    /** Every distinct backend of the HTTP/gRPC routes, by key. */
    readonly backends: ReadonlyMap<string, RouteBackend>,
  ) {}

  /** The table for requests of this HTTP version (gRPC policies: their gRPC routes). */
  routesFor(version: HttpVersion): OutboundRoutes | undefined {
    if (this.grpc) return this.grpc;
    return version === "HTTP/2" ? this.http2 : this.http1;
  }

  find(req: HttpRequest): RouteHit<OutboundRule> | undefined {
    return this.routesFor(req.version)?.table.find(req);
  }
}

function addrKey(ip: string, port: number): string {
  return ip.includes(":") ? `[${ip}]:${port}` : `${ip}:${port}`;
}

function compileBackend(
  b: Backend | undefined,
  filters: RouteFilters,
  legacyTimeout: number | undefined,
  what: string,
): RouteBackend {
  if (!b) throw new RouteConfigError(`${what} has no backend`);
  const meta = routeMeta(b.metadata, `${what} backend`);
  if (!b.queue) throw new RouteConfigError(`${what} backend ${describeMeta(meta)} has no queue`);
  const queue = queueConfig(b);
  let target: BackendTarget;
  let key: string;
  const k = b.kind;
  if (k?.$case === "balancer") {
    const d = k.value.discovery?.kind;
    if (d?.$case !== "dst" || !d.value.path) {
      throw new RouteConfigError(`${what} backend ${describeMeta(meta)} has no Destination path`);
    }
    const ewma = peakEwmaConfig(b);
    target = { kind: "balancer", path: d.value.path, ewma };
    key =
      `balancer ${d.value.path} ${ewma.defaultRttMs}/${ewma.decayMs} ${queue.capacity}/${queue.failfastMs}`;
  } else if (k?.$case === "forward") {
    const e = endpointFromWire(k.value);
    if (!e) throw new RouteConfigError(`${what} backend ${describeMeta(meta)} forwards to no address`);
    target = { kind: "forward", endpoint: e, ip: e.ip, port: e.port };
    key = `forward ${addrKey(e.ip, e.port)} ${queue.capacity}/${queue.failfastMs}`;
  } else {
    // As in Linkerd: a backend without a kind fails its requests rather than the whole policy.
    const message = `backend ${describeMeta(meta)} of ${what} has no target`;
    target = { kind: "invalid", message };
    key = `invalid ${describeMeta(meta)}`;
  }
  return { key, meta, target, queue, filters, requestTimeoutMs: legacyTimeout };
}

type AnyRule = HttpRoute["rules"][number] | GrpcRoute["rules"][number];
type AnyRouteBackend = HttpRoute_RouteBackend | GrpcRoute_RouteBackend;

function distribution(
  rule: AnyRule,
  grpc: boolean,
  what: string,
  all: Map<string, RouteBackend>,
): Distribution<RouteBackend> {
  const d = rule.backends?.kind;
  if (!d) throw new RouteConfigError(`${what} has no backend distribution`);
  const mk = (rb: AnyRouteBackend | undefined, i: number): RouteBackend => {
    const w = `${what} backend ${i}`;
    if (!rb) throw new RouteConfigError(`${w} is missing`);
    const filters = grpc
      ? compileGrpcFilters(rb.filters as GrpcRoute_Filter[], w)
      : compileHttpFilters(rb.filters as HttpRoute_Filter[], w);
    const legacy = durationMs(rb.requestTimeout, `${w} requestTimeout`);
    const b = compileBackend(rb.backend, filters, legacy, w);
    if (!all.has(b.key)) all.set(b.key, b);
    return b;
  };
  switch (d.$case) {
    case "empty":
      return Distribution.empty();
    case "firstAvailable": {
      if (d.value.backends.length === 0) {
        throw new RouteConfigError(`${what}: firstAvailable has no backends`);
      }
      return Distribution.firstAvailable(d.value.backends.map((b: AnyRouteBackend, i: number) => mk(b, i)));
    }
    case "randomAvailable": {
      if (d.value.backends.length === 0) {
        throw new RouteConfigError(`${what}: randomAvailable has no backends`);
      }
      return Distribution.randomAvailable(
        d.value.backends.map((wb: { backend?: AnyRouteBackend; weight: number }, i: number) => ({
          backend: mk(wb.backend, i),
          weight: wb.weight,
        })),
      );
    }
  }
}

function compileHttpRoutes(
  routes: HttpRoute[],
  accrual: FailureAccrualConfig | undefined,
  all: Map<string, RouteBackend>,
  proto: string,
): OutboundRoutes {
  const table = new RouteTable<OutboundRule>(
    routes.map((r, ri) => {
      const route = routeMeta(r.metadata, `${proto} route ${ri}`);
      const what = `${proto} route ${describeMeta(route)}`;
      return {
        hosts: r.hosts.map((h) => compileHostMatch(h, what)),
        rules: r.rules.map((rule, i) => {
          const w = `${what} rule ${i}`;
          return {
            matchers: rule.matches.map((m, j) => compileHttpMatch(m, `${w} match ${j}`)),
            policy: {
              route,
              grpc: false,
              filters: compileHttpFilters(rule.filters, w),
              backends: distribution(rule, false, w, all),
              plan: {
                timeouts: routeTimeouts(rule.timeouts, rule.requestTimeout, w),
                retry: httpRetryPolicy(rule.retry, w),
              },
              allowL5dRequestHeaders: rule.allowL5dRequestHeaders,
            },
          };
        }),
      };
    }),
    MATCH_ALL,
  );
  return { kind: "http", table, failureAccrual: accrual };
}

function compileGrpcRoutes(
  routes: GrpcRoute[],
  accrual: FailureAccrualConfig | undefined,
  all: Map<string, RouteBackend>,
): OutboundRoutes {
  const table = new RouteTable<OutboundRule>(
    routes.map((r, ri) => {
      const route = routeMeta(r.metadata, `grpc route ${ri}`);
      const what = `grpc route ${describeMeta(route)}`;
      return {
        hosts: r.hosts.map((h) => compileHostMatch(h, what)),
        rules: r.rules.map((rule, i) => {
          const w = `${what} rule ${i}`;
          return {
            matchers: rule.matches.map((m, j) => compileGrpcMatch(m, `${w} match ${j}`)),
            policy: {
              route,
              grpc: true,
              filters: compileGrpcFilters(rule.filters, w),
              backends: distribution(rule, true, w, all),
              plan: {
                timeouts: routeTimeouts(rule.timeouts, rule.requestTimeout, w),
                retry: grpcRetryPolicy(rule.retry, w),
              },
              allowL5dRequestHeaders: rule.allowL5dRequestHeaders,
            },
          };
        }),
      };
    }),
    GRPC_MATCH_ALL,
  );
  return { kind: "grpc", table, failureAccrual: accrual };
}

/** Validates and compiles a policy; throws RouteConfigError (or RangeError for bad durations). */
export function compileOutboundPolicy(p: OutboundPolicy): OutboundPolicyRoutes {
  const meta = routeMeta(p.metadata, "outbound policy");
  const k = p.protocol?.kind;
  if (!k) throw new RouteConfigError(`outbound policy ${describeMeta(meta)} has no protocol`);
  const all = new Map<string, RouteBackend>();
  const fa = (x: { failureAccrual?: Parameters<typeof failureAccrualConfig>[0] } | undefined) =>
    failureAccrualConfig(x?.failureAccrual);
  switch (k.$case) {
    case "detect": {
      const v = k.value;
      if (!v.timeout || !v.opaque || !v.http1 || !v.http2) {
        throw new RouteConfigError(
          `outbound policy ${describeMeta(meta)}: detect needs timeout, opaque, http1 and http2`,
        );
      }
      return new OutboundPolicyRoutes(
        meta,
        "detect",
        durationMs(v.timeout, "detect.timeout"),
        compileHttpRoutes(v.http1.routes, fa(v.http1), all, "http1"),
        compileHttpRoutes(v.http2.routes, fa(v.http2), all, "http2"),
        undefined,
        all,
      );
    }
    case "http1":
      return new OutboundPolicyRoutes(
        meta,
        "http1",
        undefined,
        compileHttpRoutes(k.value.routes, fa(k.value), all, "http1"),
        undefined,
        undefined,
        all,
      );
    case "http2":
      return new OutboundPolicyRoutes(
        meta,
        "http2",
        undefined,
        undefined,
        compileHttpRoutes(k.value.routes, fa(k.value), all, "http2"),
        undefined,
        all,
      );
    case "grpc":
      return new OutboundPolicyRoutes(
        meta,
        "grpc",
        undefined,
        undefined,
        undefined,
        compileGrpcRoutes(k.value.routes, fa(k.value), all),
        all,
      );
    case "opaque":
    case "tls":
      return new OutboundPolicyRoutes(meta, k.$case, undefined, undefined, undefined, undefined, all);
  }
}
