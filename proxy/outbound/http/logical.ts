/**
 * The logical layer of the outbound HTTP stack: one service per original destination (cached while connections use
 * it, evicted after the idle timeout), answering each request as Linkerd's proxy does:
 * ServiceProfile or outbound-policy routing (`selectRouting`), the rule's filters, a backend from
 * its distribution, one P2C peak-EWMA balancer per backend over the Destination.Get endpoints (or
 * the forward endpoint), retries and timeouts through `execute`, and an `EndpointClient` per
 * endpoint (mesh TLS, transport header, HTTP/2 upgrade).
 *
 * Discovery is read without callbacks: the watches replace their state object per message, so a
 * request compares identities and recompiles or re-syncs only when one changed. An invalid policy
 * update is logged and the previous compiled one is kept.
 */
import type * as net from "node:net";
import type { OutboundView } from "../../discovery/outbound_view.ts";
import type { ProfileView } from "../../discovery/profile_view.ts";
import { addrKey } from "../../discovery/clients.ts";
import type { WatchHandle } from "../../discovery/shared_watch.ts";
import type { Log } from "../../core/log.ts";
import { httpErrorKind, recordRequests, type RouteMetrics } from "../../metrics/http_metrics.ts";
import { hostOf, type HttpRouteMetrics, type StreamSeries } from "../../metrics/http_route_metrics.ts";
import { type BalancerMetrics, profileServiceRef } from "../../metrics/balancer_metrics.ts";
import type { ResponseClassifier } from "../../metrics/response_class.ts";
import type { SocketAddr } from "../../transport/orig_dst.ts";
import { DEFAULT_QUEUE, type FailureAccrualConfig } from "../../balance/balancer.ts";
import { preciseClock } from "../../core/clock.ts";
import { DEFAULT_PEAK_EWMA } from "../../balance/peak_ewma.ts";
import { type Rng, systemRng } from "../../core/rng.ts";
import { type BackendSource, BackendState, type ConcreteDeps } from "./concrete.ts";
import { serveHttp1 } from "../../http/h1/mod.ts";
import { serveHttp2 } from "../../http/h2/server.ts";
import {
  type Body,
  type HeaderList,
  HttpError,
  type HttpRequest,
  type HttpResponse,
  type HttpService,
} from "../../http/message.ts";
import { BodyTap } from "../../http/body_tap.ts";
import type { Clock } from "../../../proto/support/clock.ts";
import { layered } from "../../http/layer.ts";
import type { Taps } from "../../tap/taps.ts";
import type { OutboundPolicyRoutes, OutboundRule, RouteBackend } from "../../route/outbound.ts";
import type { RouteHit } from "../../route/table.ts";
import type { CompiledProfile, ProfileRoute } from "../../route/profile.ts";
import { type Routing, selectRouting } from "../../route/select.ts";
import { type ExecuteDeps, retryLayer } from "../../route/retry/execute.ts";
import type { Distribution } from "../../route/distribution.ts";
import type { Matcher } from "../../route/http_match.ts";

export interface OutboundHttpDeps extends ConcreteDeps {
  /** A destination's service lives this long after its last connection closed. */
  idleMs: number;
  log: Log;
  /** Aborted when the proxy starts draining: connections finish their requests and close. */
  drain?: AbortSignal;
  /** Per-route request outcomes of policy routes, with parent labels (egress: EgressNetwork). */
  routeMetrics?: HttpRouteMetrics;
  /** `outbound_http_balancer_*` of the policy and ServiceProfile backends' balancers. */
  balancerMetrics?: BalancerMetrics;
}

/** Hostnames remembered per route for its metric series; past this, series are looked up each time. */
const MAX_CACHED_HOSTS = 64;

/** One original destination's HTTP service. */
class DestinationService {
  refs = 0;
  idleTimer: ReturnType<typeof setTimeout> | undefined;
  readonly #deps: OutboundHttpDeps;
  readonly #dst: SocketAddr;
  readonly #policyHandle: WatchHandle<OutboundView>;
  readonly #profileHandle: WatchHandle<ProfileView>;
  #policySrc: OutboundView | undefined;
  #policy: OutboundPolicyRoutes | undefined;
  #profileSrc: ProfileView | undefined;
  #profile: CompiledProfile | undefined;
  /** The profile-authority backends, by name. */
  #backends = new Map<string, BackendState>();
  /** Outbound-policy route backends, by RouteBackend key (kept across recompiles of the policy). */
  #routeBackends = new Map<string, BackendState>();
  #default: BackendState | undefined;
  readonly #rng: Rng;
  readonly #exec: ExecuteDeps;
  #routeHandles = new WeakMap<ProfileRoute, RouteMetrics>();
  /** Each route's composed service; routes are new objects after a recompile, so these follow. */
  #profileRoutes = new WeakMap<ProfileRoute, HttpService>();
  #policyRoutes = new WeakMap<RouteHit<OutboundRule>, HttpService>();
  /** Each route's metric series by the request's authority (as sent, so no parsing per request). */
  #routeSeries = new WeakMap<RouteHit<OutboundRule>, Map<string, StreamSeries>>();
  /** Removes a backend's balancer from the balancer gauges, by RouteBackend key or `profile <authority>`. */
  #unGauge = new Map<string, () => void>();
  /** Recomputed only when the policy or profile changed. */
  #routing: Routing = selectRouting(undefined, undefined);

  constructor(dst: SocketAddr, deps: OutboundHttpDeps) {
    this.#dst = dst;
    this.#deps = deps;
    this.#rng = deps.rng ?? systemRng;
    this.#exec = { clock: deps.clock ?? preciseClock, rng: this.#rng };
    this.#policyHandle = deps.discovery.outbound.subscribe({ ip: dst.ip, port: dst.port });
    this.#profileHandle = deps.discovery.profile.subscribe(addrKey(dst.ip, dst.port));
  }

  /** Discovery compiled the policy and profile once per update; this only follows them. */
  #refresh(): void {
    const p = this.#policyHandle.current().state;
    const f = this.#profileHandle.current().state;
    if (p === this.#policySrc && f === this.#profileSrc) return;
    this.#policySrc = p;
    this.#profileSrc = f;
    // An update that did not compile keeps the routes this service already had.
    const policy = p?.http ?? this.#policy;
    if (policy !== this.#policy) {
      this.#policy = policy;
      for (const [k, b] of this.#routeBackends) {
        if (!policy!.backends.has(k)) {
          b.close();
          this.#routeBackends.delete(k);
          this.#unGauge.get(k)?.();
          this.#unGauge.delete(k);
        }
      }
    }
    this.#profile = f?.compiled ?? this.#profile;
    this.#routing = selectRouting(this.#profile, this.#policy);
  }

  #routeMetrics(profile: CompiledProfile, route: ProfileRoute): RouteMetrics {
    let m = this.#routeHandles.get(route);
    if (!m) {
      const d = this.#dst;
      const dst = profile.fullyQualifiedName
        ? `${profile.fullyQualifiedName}:${d.port}`
        : addrKey(d.ip, d.port);
      m = this.#deps.metrics.route({ direction: "outbound", dst, labels: route.labels });
      this.#routeHandles.set(route, m);
    }
    return m;
  }

  #backend(key: string, make: () => BackendState): BackendState {
    let b = this.#backends.get(key);
    if (!b) this.#backends.set(key, b = make());
    return b;
  }

  #routeBackend(rb: RouteBackend, accrual: FailureAccrualConfig | undefined): BackendState {
    let b = this.#routeBackends.get(rb.key);
    if (b) return b;
    const t = rb.target;
    if (t.kind === "invalid") throw new HttpError(500, t.message, "invalid_backend", 13);
    const source: BackendSource = t.kind === "balancer"
      ? { kind: "path", path: t.path }
      : { kind: "forward", endpoint: t.endpoint, ip: t.ip, port: t.port };
    const ewma = t.kind === "balancer" ? t.ewma : DEFAULT_PEAK_EWMA;
    const parent = this.#policy?.meta;
    // A forward backend is one address, not a balancer in Linkerd (no balancer series there either).
    const gauge = parent && t.kind === "balancer" ? this.#deps.balancerMetrics : undefined;
    const stats = gauge?.stats(parent!, rb.meta);
    b = new BackendState(rb.key, source, { ewma, queue: rb.queue, accrual, stats }, this.#deps);
    this.#routeBackends.set(rb.key, b);
    if (gauge) this.#unGauge.set(rb.key, gauge.add(parent!, rb.meta, b.balancer));
    return b;
  }

  /** Route backends whose balancer fails fast are skipped while another can take the request. */
  readonly #available = (rb: RouteBackend): boolean =>
    this.#routeBackends.get(rb.key)?.balancer.failingFast !== true;

  #defaultBackend(): BackendState {
    const d = this.#dst;
    return this.#default ??= new BackendState(
      addrKey(d.ip, d.port),
      { kind: "forward", endpoint: undefined, ip: d.ip, port: d.port },
      { ewma: DEFAULT_PEAK_EWMA, queue: DEFAULT_QUEUE, accrual: undefined },
      this.#deps,
    );
  }

  /**
   * A ServiceProfile dst_override's balancer. Its metric parent is the profile's Service and its
   * backend the override's, named from their authorities as linkerd2-proxy names them.
   */
  #authorityBackend(profile: CompiledProfile, authority: string): BackendState {
    const key = `profile ${authority}`;
    return this.#backend(key, () => {
      const gauge = this.#deps.balancerMetrics;
      const parent = profileServiceRef(`${profile.fullyQualifiedName}:${this.#dst.port}`);
      const backend = profileServiceRef(authority);
      const b = new BackendState(authority, { kind: "path", path: authority }, {
        ewma: DEFAULT_PEAK_EWMA,
        queue: DEFAULT_QUEUE,
        accrual: undefined,
        stats: gauge?.stats(parent, backend),
      }, this.#deps);
      if (gauge) this.#unGauge.set(key, gauge.add(parent, backend, b.balancer));
      return b;
    });
  }

  /**
   * The destination's service. Requests the proxy fails itself are counted here, where they become
   * a status; the path without routes, retries or timeouts adds no closure or promise of its own.
   */
  readonly service: HttpService = async (req, signal) => {
    try {
      this.#refresh();
      const routing = this.#routing;
      if (routing.kind === "policy") return await this.#viaPolicy(routing.policy, req, signal);
      if (routing.kind === "profile") return await this.#viaProfile(routing.profile, req, signal);
      return await this.#defaultBackend().send(req, signal);
    } catch (e) {
      this.#deps.metrics.outboundError(httpErrorKind(e)).inc();
      throw e;
    }
  };

  /**
   * A profile route's service, composed once per route: route_* metrics per logical request,
   * retries and timeouts, route_actual_* metrics per attempt, then a backend per attempt.
   */
  #profileRoute(profile: CompiledProfile, route: ProfileRoute): HttpService {
    let s = this.#profileRoutes.get(route);
    if (s) return s;
    const rm = this.#routeMetrics(profile, route);
    const classifier = route.classifier;
    const byClass = () => classifier;
    s = layered(
      (req, signal) => this.#profileTarget(profile, classifier, req, signal),
      (inner) => recordRequests(inner, () => rm.requests, byClass),
      retryLayer(route.plan, {
        ...this.#exec,
        onRetryable: (_retried, skipped) => rm.retryable(skipped !== "budget"),
      }),
      (inner) => recordRequests(inner, () => rm.actual, byClass),
    );
    this.#profileRoutes.set(route, s);
    return s;
  }

  /** One attempt under a profile: its dst_overrides split, else the policy's backends, else the default. */
  #profileTarget(
    profile: CompiledProfile,
    classifier: ResponseClassifier | undefined,
    req: HttpRequest,
    signal: AbortSignal,
  ): Promise<HttpResponse> {
    const t = profile.chooseTarget(this.#rng);
    if (t) return this.#authorityBackend(profile, t.authority).send(req, signal, classifier);
    const policy = this.#policy;
    const hit = policy?.find(req);
    const rb = hit?.policy.backends.choose(this.#rng);
    if (rb) {
      return this.#routeBackend(rb, policy?.routesFor(req.version)?.failureAccrual).send(
        req,
        signal,
        classifier,
      );
    }
    return this.#defaultBackend().send(req, signal, classifier);
  }

  #viaProfile(profile: CompiledProfile, req: HttpRequest, signal: AbortSignal): Promise<HttpResponse> {
    const route = profile.route(req);
    if (!route) return this.#profileTarget(profile, undefined, req, signal);
    return this.#profileRoute(profile, route)(req, signal);
  }

  /**
   * A policy route's service for one of its matches, composed once (keyed by the static hit):
   * the rule's response filters, its retries and timeouts, then a backend per attempt.
   */
  #policyRoute(policy: OutboundPolicyRoutes, hit: RouteHit<OutboundRule>, req: HttpRequest): HttpService {
    let s = this.#policyRoutes.get(hit);
    if (s) return s;
    const rule = hit.policy;
    const matcher = hit.matcher;
    // A hit belongs to one protocol's route table, so its failure accrual is fixed.
    const accrual = policy.routesFor(req.version)?.failureAccrual;
    const rm = this.#deps.routeMetrics;
    // The route's backends' metric series, looked up once per backend of this compiled route.
    const bySeries = new Map<RouteBackend, StreamSeries>();
    const series = rm
      ? (rb: RouteBackend): StreamSeries => {
        let bs = bySeries.get(rb);
        if (!bs) bySeries.set(rb, bs = rm.backend(policy.meta, rule.route, rb.meta, rule.grpc));
        return bs;
      }
      : undefined;
    // Retry events land in the request's route series (its hostname's), looked up only then.
    const exec: ExecuteDeps = rm
      ? {
        ...this.#exec,
        onRetryEvent: (r, ev) => this.#routeSeriesOf(policy, hit, r.authority).retries[ev]++,
      }
      : this.#exec;
    s = layered(
      (r, signal) => this.#toRouteBackend(rule.backends, matcher, accrual, series, r, signal),
      rule.filters.responseLayer(),
      retryLayer(rule.plan, exec),
    );
    this.#policyRoutes.set(hit, s);
    return s;
  }

  #viaPolicy(policy: OutboundPolicyRoutes, req: HttpRequest, signal: AbortSignal): Promise<HttpResponse> {
    const hit = policy.find(req);
    if (!hit) {
      throw new HttpError(
        404,
        `no route of ${describeDst(this.#dst)} matches the request`,
        "route_not_found",
        5,
      );
    }
    // Request filters may answer instead (redirects, injected failures): not a layer, since they
    // need the match and can end the request before any backend is chosen.
    const series = this.#deps.routeMetrics ? this.#routeSeriesOf(policy, hit, req.authority) : undefined;
    if (series && hit.policy.plan.retry) series.retryable = true;
    const t0 = series ? this.#exec.clock.now() : 0;
    const early = hit.policy.filters.applyRequest(req, hit.matcher, this.#rng);
    if (early) {
      series?.recordResponse(early.status, undefined, early.headers, (this.#exec.clock.now() - t0) / 1000);
      return Promise.resolve(early);
    }
    const sent = this.#policyRoute(policy, hit, req)(req, signal);
    return series ? recordRoute(sent, series, t0, this.#exec.clock) : sent;
  }

  #routeSeriesOf(policy: OutboundPolicyRoutes, hit: RouteHit<OutboundRule>, authority: string): StreamSeries {
    let byHost = this.#routeSeries.get(hit);
    if (!byHost) this.#routeSeries.set(hit, byHost = new Map());
    let s = byHost.get(authority);
    if (s) return s;
    const rule = hit.policy;
    s = this.#deps.routeMetrics!.route(policy.meta, rule.route, hostOf(authority), rule.grpc);
    if (byHost.size < MAX_CACHED_HOSTS) byHost.set(authority, s);
    return s;
  }

  /** One attempt of a policy route: a backend from its distribution, its filters, its balancer. */
  #toRouteBackend(
    backends: Distribution<RouteBackend>,
    matcher: Matcher,
    accrual: FailureAccrualConfig | undefined,
    series: ((rb: RouteBackend) => StreamSeries) | undefined,
    req: HttpRequest,
    signal: AbortSignal,
  ): Promise<HttpResponse> {
    const rb = backends.choose(this.#rng, this.#available);
    if (!rb) throw new HttpError(500, "the route has no backends", "no_backends", 13);
    const bs = series?.(rb);
    if (bs) bs.requests++;
    const answer = rb.filters.applyRequest(req, matcher, this.#rng);
    if (answer) {
      bs?.recordResponse(answer.status, undefined, answer.headers, 0);
      return Promise.resolve(answer);
    }
    const sent = this.#routeBackend(rb, accrual).send(req, signal, undefined, bs);
    if (rb.filters.empty) return sent;
    return sent.then((res) => {
      rb.filters.applyResponse(res);
      return res;
    });
  }

  close(): void {
    this.#policyHandle.release();
    this.#profileHandle.release();
    this.#default?.close();
    for (const b of this.#backends.values()) b.close();
    for (const b of this.#routeBackends.values()) b.close();
    this.#backends.clear();
    this.#routeBackends.clear();
    for (const un of this.#unGauge.values()) un();
    this.#unGauge.clear();
    this.#default = undefined;
  }
}

/**
 * A policy route's logical request in its route series: its duration to the end of the response
 * stream and its status (or the error when the proxy failed it).
 */
async function recordRoute(
  sent: Promise<HttpResponse>,
  series: StreamSeries,
  t0: number,
  clock: Clock,
): Promise<HttpResponse> {
  let res: HttpResponse;
  try {
    res = await sent;
  } catch (e) {
    series.recordError(e, (clock.now() - t0) / 1000);
    throw e;
  }
  if (res.upgrade) series.recordResponse(res.status, undefined, res.headers, (clock.now() - t0) / 1000);
  else res.body = new RouteBody(res.body, series, res.status, res.headers, t0, clock);
  return res;
}

/** Ends the route series' stream when the response body ends (one object per response). */
class RouteBody extends BodyTap {
  #series: StreamSeries | undefined;

  constructor(
    inner: Body,
    series: StreamSeries,
    readonly status: number,
    readonly headers: HeaderList,
    readonly t0: number,
    readonly clock: Clock,
  ) {
    super(inner);
    this.#series = series;
  }

  #take(): StreamSeries | undefined {
    const s = this.#series;
    this.#series = undefined;
    return s;
  }

  protected onChunk(): void {}

  protected onEnd(trailers: HeaderList | undefined): void {
    this.#take()?.recordResponse(this.status, trailers, this.headers, (this.clock.now() - this.t0) / 1000);
  }

  protected onError(e: unknown): void {
    this.#take()?.recordError(e, (this.clock.now() - this.t0) / 1000, this.status);
  }

  protected onCancel(): void {
    this.#take()?.recordError({ reason: "cancel" }, (this.clock.now() - this.t0) / 1000, this.status);
  }
}

function describeDst(d: SocketAddr): string {
  return addrKey(d.ip, d.port);
}

export class OutboundHttp {
  readonly #deps: OutboundHttpDeps;
  readonly #services = new Map<string, DestinationService>();

  constructor(deps: OutboundHttpDeps) {
    this.#deps = deps;
  }

  /** Serves HTTP from the application on `sock` (bytes already peeked are on it) until it closes. */
  async serve(sock: net.Socket, dst: SocketAddr, protocol: "http1" | "http2"): Promise<void> {
    const key = addrKey(dst.ip, dst.port);
    let svc = this.#services.get(key);
    if (!svc) this.#services.set(key, svc = new DestinationService(dst, this.#deps));
    if (svc.idleTimer !== undefined) clearTimeout(svc.idleTimer);
    svc.idleTimer = undefined;
    svc.refs++;
    const taps = this.#deps.taps;
    const service = taps === undefined ? svc.service : withTapSource(taps, svc.service, sock);
    try {
      const drain = this.#deps.drain;
      if (protocol === "http2") {
        await serveHttp2(sock, service, { log: this.#deps.log, drain }).closed;
      } else {
        await serveHttp1(sock, service, {
          signal: drain,
          onError: (e) => this.#deps.log("debug", `outbound http ${key}: ${e.message}`),
        });
      }
    } finally {
      const s = svc;
      if (--s.refs === 0) {
        s.idleTimer = setTimeout(() => {
          if (s.refs !== 0) return;
          this.#services.delete(key);
          s.close();
        }, this.#deps.idleMs);
        Deno.unrefTimer(s.idleTimer);
      }
    }
  }

  close(): void {
    for (const s of this.#services.values()) {
      if (s.idleTimer !== undefined) clearTimeout(s.idleTimer);
      s.close();
    }
    this.#services.clear();
  }
}

/** While a tap runs, puts the application's address on its requests (the tap events' source). */
function withTapSource(taps: Taps, inner: HttpService, sock: net.Socket): HttpService {
  const ip = sock.remoteAddress, port = sock.remotePort;
  if (ip === undefined || port === undefined) return inner;
  const src = { ip, port };
  return (req, signal) => {
    if (taps.active !== 0) req.tapSource = src;
    return inner(req, signal);
  };
}
