/**
 * The outbound HTTP stack: one service per original destination (cached while connections use
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
import type { DestinationProfile, WeightedAddr } from "../../proto/gen/destination.ts";
import type { OutboundPolicy } from "../../proto/gen/outbound.ts";
import type { Clock } from "../../proto/support/clock.ts";
import { addrKey, type Discovery, type EndpointSet } from "../discovery/clients.ts";
import type { WatchHandle } from "../discovery/shared_watch.ts";
import type { Log } from "../log.ts";
import {
  httpErrorKind,
  type HttpMetrics,
  instrumentResponse,
  type RouteMetrics,
} from "../metrics/http_metrics.ts";
import type { ResponseClassifier } from "../metrics/response_class.ts";
import { endpointTarget, type Target } from "../outbound/resolve.ts";
import type { SocketAddr } from "../transport/orig_dst.ts";
import type { MeshTls } from "../transport/tls.ts";
import { Balancer, DEFAULT_QUEUE, type FailureAccrualConfig, type QueueConfig } from "./balance/balancer.ts";
import { preciseClock } from "./balance/clock.ts";
import { DEFAULT_PEAK_EWMA, type PeakEwmaConfig } from "./balance/peak_ewma.ts";
import { type Rng, systemRng } from "./balance/rng.ts";
import { EndpointClient } from "./endpoint_client.ts";
import { serveHttp1 } from "./h1/mod.ts";
import { serveHttp2 } from "./h2/server.ts";
import {
  type Body,
  type HeaderList,
  HttpError,
  type HttpRequest,
  type HttpResponse,
  type HttpService,
  isGrpc,
} from "./message.ts";
import { compileOutboundPolicy, type OutboundPolicyRoutes, type RouteBackend } from "./route/outbound.ts";
import { type CompiledProfile, compileProfile, type ProfileRoute } from "./route/profile.ts";
import { type Routing, selectRouting } from "./route/select.ts";
import { execute } from "./retry/execute.ts";

export interface OutboundHttpDeps {
  discovery: Discovery;
  tls: MeshTls;
  metrics: HttpMetrics;
  connectTimeoutMs: number;
  /** How long a request waits for a backend's first Destination answer. */
  discoveryTimeoutMs: number;
  /** A destination's service lives this long after its last connection closed. */
  idleMs: number;
  /** Our own addresses: endpoints there are reached in plaintext and never upgraded. */
  localIps: ReadonlySet<string>;
  log: Log;
  /** Aborted when the proxy starts draining: connections finish their requests and close. */
  drain?: AbortSignal;
  clock?: Clock;
  rng?: Rng;
}

/** HTTP/2 connections get this long after GOAWAY when the proxy drains. */
const DRAIN_GRACE_MS = 10_000;

/** Endpoints that were removed stay open this long for requests already on them. */
const RETIRE_GRACE_MS = 10_000;

function isLocal(ip: string, local: ReadonlySet<string>): boolean {
  return ip.startsWith("127.") || ip === "::1" || local.has(ip);
}

/** What one backend balances over: a Destination.Get path, or one fixed address. */
type BackendSource =
  | { kind: "path"; path: string }
  | { kind: "forward"; addr: WeightedAddr | undefined; ip: string; port: number };

/** One balancer with its endpoint clients, kept in sync with its discovery watch. */
class BackendState {
  readonly balancer: Balancer<EndpointClient>;
  readonly #deps: OutboundHttpDeps;
  readonly #source: BackendSource;
  readonly #handle: WatchHandle<EndpointSet> | undefined;
  #synced: unknown = null;
  #clients = new Map<string, EndpointClient>();
  #waited = false;

  constructor(
    name: string,
    source: BackendSource,
    cfg: { ewma: PeakEwmaConfig; queue: QueueConfig; accrual: FailureAccrualConfig | undefined },
    deps: OutboundHttpDeps,
  ) {
    this.#deps = deps;
    this.#source = source;
    this.balancer = new Balancer<EndpointClient>({
      name,
      ewma: cfg.ewma,
      queue: cfg.queue,
      accrual: cfg.accrual,
      clock: deps.clock ?? preciseClock,
      rng: deps.rng,
    });
    // A forward without mesh metadata asks Destination about that address (as the L4 path does).
    const path = source.kind === "path"
      ? source.path
      : source.addr?.tlsIdentity
      ? undefined
      : addrKey(source.ip, source.port);
    this.#handle = path === undefined ? undefined : deps.discovery.destination.subscribe(path);
  }

  #target(w: WeightedAddr | undefined, ip: string, port: number): Target {
    if (isLocal(ip, this.#deps.localIps) || !w) {
      return {
        kind: "plain",
        ip,
        port,
        reason: isLocal(ip, this.#deps.localIps) ? "loopback" : "not_provided_by_service_discovery",
      };
    }
    return endpointTarget(w, { ip, port });
  }

  #sync(): void {
    const state = this.#handle?.current().state;
    if (this.#handle && state === this.#synced) return;
    if (!this.#handle && this.#synced !== null) return;
    this.#synced = this.#handle ? state : true;
    const want = new Map<string, { w: WeightedAddr | undefined; ip: string; port: number }>();
    const s = this.#source;
    if (s.kind === "path") {
      for (const [k, w] of state?.endpoints ?? []) {
        const t = endpointTarget(w, { ip: "", port: 0 });
        want.set(k, { w, ip: t.ip, port: t.kind === "meshed" ? t.targetPort : t.port });
      }
    } else {
      const k = addrKey(s.ip, s.port);
      const found = state?.endpoints.get(k);
      want.set(k, { w: s.addr?.tlsIdentity ? s.addr : found, ip: s.ip, port: s.port });
    }
    const next = new Map<string, EndpointClient>();
    for (const [k, e] of want) {
      const target = this.#target(e.w, e.ip, e.port);
      const old = this.#clients.get(k);
      if (old && old.sameAs(target, e.w)) {
        next.set(k, old);
        continue;
      }
      const c = new EndpointClient(target, e.w, this.#deps);
      c.warm();
      next.set(k, c);
    }
    for (const [k, c] of this.#clients) if (next.get(k) !== c) retire(c);
    this.#clients = next;
    this.balancer.update(next);
  }

  async send(req: HttpRequest, signal: AbortSignal, classifier?: ResponseClassifier): Promise<HttpResponse> {
    this.#sync();
    const h = this.#handle;
    if (!this.#waited && h && h.current().state === undefined) {
      this.#waited = true;
      await h.ready(this.#deps.discoveryTimeoutMs);
      this.#sync();
    }
    const clock = this.#deps.clock ?? preciseClock;
    const b = this.balancer;
    const lease = b.pick(clock.now()) ?? await b.acquire(signal);
    let res: HttpResponse;
    try {
      res = await lease.endpoint.request(req, signal, classifier);
    } catch (e) {
      lease.done(false, clock.now());
      throw e;
    }
    lease.responded(clock.now());
    const early = res.headers.get("grpc-status");
    if (early !== undefined || res.upgrade) {
      lease.done(res.status < 500 && (early === undefined || early === "0"), clock.now());
      return res;
    }
    res.body = new LeaseBody(res.body, res.status, (ok) => lease.done(ok, clock.now()));
    return res;
  }

  close(): void {
    this.#handle?.release();
    this.balancer.close();
    for (const c of this.#clients.values()) retire(c);
    this.#clients.clear();
  }
}

function retire(c: EndpointClient): void {
  Deno.unrefTimer(setTimeout(() => c.close(1000), RETIRE_GRACE_MS));
}

/** Reports the response's end to the balancer (failure accrual sees gRPC statuses in trailers). */
class LeaseBody implements Body {
  #inner: Body;
  #status: number;
  #done: ((ok: boolean) => void) | undefined;

  constructor(inner: Body, status: number, done: (ok: boolean) => void) {
    this.#inner = inner;
    this.#status = status;
    this.#done = done;
  }

  get length(): number | undefined {
    return this.#inner.length;
  }

  get trailers(): HeaderList | undefined {
    return this.#inner.trailers;
  }

  #finish(ok: boolean): void {
    const d = this.#done;
    this.#done = undefined;
    d?.(ok);
  }

  async read(): Promise<Uint8Array | null> {
    let chunk: Uint8Array | null;
    try {
      chunk = await this.#inner.read();
    } catch (e) {
      this.#finish(false);
      throw e;
    }
    return this.#seen(chunk);
  }

  readNow(): Uint8Array | null | undefined {
    let chunk: Uint8Array | null | undefined;
    try {
      chunk = this.#inner.readNow?.();
    } catch (e) {
      this.#finish(false);
      throw e;
    }
    return chunk === undefined ? undefined : this.#seen(chunk);
  }

  #seen(chunk: Uint8Array | null): Uint8Array | null {
    if (chunk === null) {
      const g = this.#inner.trailers?.get("grpc-status");
      this.#finish(this.#status < 500 && (g === undefined || g === "0"));
    }
    return chunk;
  }

  cancel(reason?: Error): void {
    this.#finish(this.#status < 500);
    this.#inner.cancel(reason);
  }
}

/** One original destination's HTTP service. */
class DestinationService {
  refs = 0;
  idleTimer: ReturnType<typeof setTimeout> | undefined;
  readonly #deps: OutboundHttpDeps;
  readonly #dst: SocketAddr;
  readonly #policyHandle: WatchHandle<OutboundPolicy>;
  readonly #profileHandle: WatchHandle<DestinationProfile>;
  #policySrc: OutboundPolicy | undefined;
  #policy: OutboundPolicyRoutes | undefined;
  #profileSrc: DestinationProfile | undefined;
  #profile: CompiledProfile | undefined;
  #backends = new Map<string, BackendState>();
  #routeHandles = new WeakMap<ProfileRoute, RouteMetrics>();
  /** Recomputed only when the policy or profile changed. */
  #routing: Routing = selectRouting(undefined, undefined);

  constructor(dst: SocketAddr, deps: OutboundHttpDeps) {
    this.#dst = dst;
    this.#deps = deps;
    this.#policyHandle = deps.discovery.outbound.subscribe({ ip: dst.ip, port: dst.port });
    this.#profileHandle = deps.discovery.profile.subscribe(addrKey(dst.ip, dst.port));
  }

  #refresh(): void {
    const p = this.#policyHandle.current().state;
    const f = this.#profileHandle.current().state;
    if (p === this.#policySrc && f === this.#profileSrc) return;
    if (p !== this.#policySrc) {
      this.#policySrc = p;
      if (p) {
        try {
          this.#policy = compileOutboundPolicy(p);
          for (const [k, b] of this.#backends) {
            if (k.startsWith("route ") && !this.#policy.backends.has(k.slice(6))) {
              b.close();
              this.#backends.delete(k);
            }
          }
        } catch (e) {
          this.#deps.log(
            "warn",
            `outbound policy for ${
              addrKey(this.#dst.ip, this.#dst.port)
            } is invalid, keeping the previous one: ${(e as Error).message}`,
          );
        }
      }
    }
    if (f !== this.#profileSrc) {
      this.#profileSrc = f;
      if (f) {
        try {
          this.#profile = compileProfile(f, this.#deps.clock ?? preciseClock);
        } catch (e) {
          this.#deps.log(
            "warn",
            `service profile ${f.fullyQualifiedName} is invalid: ${(e as Error).message}`,
          );
        }
      }
    }
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
    return this.#backend(`route ${rb.key}`, () => {
      const t = rb.target;
      if (t.kind === "invalid") throw new HttpError(500, t.message, "invalid_backend", 13);
      const source: BackendSource = t.kind === "balancer"
        ? { kind: "path", path: t.path }
        : { kind: "forward", addr: t.addr, ip: t.ip, port: t.port };
      const ewma = t.kind === "balancer" ? t.ewma : DEFAULT_PEAK_EWMA;
      return new BackendState(rb.key, source, { ewma, queue: rb.queue, accrual }, this.#deps);
    });
  }

  #defaultBackend(): BackendState {
    const d = this.#dst;
    return this.#backend(
      "default",
      () =>
        new BackendState(
          addrKey(d.ip, d.port),
          { kind: "forward", addr: undefined, ip: d.ip, port: d.port },
          { ewma: DEFAULT_PEAK_EWMA, queue: DEFAULT_QUEUE, accrual: undefined },
          this.#deps,
        ),
    );
  }

  #authorityBackend(authority: string): BackendState {
    return this.#backend(
      `profile ${authority}`,
      () =>
        new BackendState(authority, { kind: "path", path: authority }, {
          ewma: DEFAULT_PEAK_EWMA,
          queue: DEFAULT_QUEUE,
          accrual: undefined,
        }, this.#deps),
    );
  }

  readonly service: HttpService = async (req, signal) => {
    this.#refresh();
    const deps = this.#deps;
    const rng = deps.rng ?? systemRng;
    const clock = deps.clock ?? preciseClock;
    const routing = this.#routing;
    if (routing.kind === "profile") {
      const profile = routing.profile;
      const route = profile.route(req);
      const classifier = route?.classifier;
      const policy = this.#policy;
      const target: HttpService = (r, s) => {
        const t = profile.chooseTarget(rng);
        if (t) return this.#authorityBackend(t.authority).send(r, s, classifier);
        const hit = policy?.find(r);
        const rb = hit?.policy.backends.choose(rng);
        if (rb) {
          return this.#routeBackend(rb, policy?.routesFor(r.version)?.failureAccrual).send(r, s, classifier);
        }
        return this.#defaultBackend().send(r, s, classifier);
      };
      if (!route) return await target(req, signal);
      // Profile routes are measured: route_* per logical request, route_actual_* per attempt.
      const rm = this.#routeMetrics(profile, route);
      const grpc = isGrpc(req.headers);
      const send: HttpService = async (r, s) => {
        const attempt = rm.actual.start(grpc, classifier);
        try {
          return instrumentResponse(attempt, await target(r, s));
        } catch (e) {
          attempt.fail(e);
          throw e;
        }
      };
      const rec = rm.requests.start(grpc, classifier);
      let res: HttpResponse;
      try {
        res = await execute(req, signal, route.plan, send, {
          clock,
          rng,
          onRetryable: (_retried, skipped) => rm.retryable(skipped !== "budget"),
        });
      } catch (e) {
        rec.fail(e);
        throw e;
      }
      return instrumentResponse(rec, res);
    }
    if (routing.kind === "policy") {
      const policy = routing.policy;
      const hit = policy.find(req);
      if (!hit) {
        throw new HttpError(
          404,
          `no route of ${describeDst(this.#dst)} matches the request`,
          "route_not_found",
          5,
        );
      }
      const rule = hit.policy;
      const early = rule.filters.applyRequest(req, hit.matcher, rng);
      if (early) return early;
      const accrual = policy.routesFor(req.version)?.failureAccrual;
      const send: HttpService = (r, s) => {
        const rb = rule.backends.choose(
          rng,
          (b) => this.#backends.get(`route ${b.key}`)?.balancer.failingFast !== true,
        );
        if (!rb) throw new HttpError(500, "the route has no backends", "no_backends", 13);
        const answer = rb.filters.applyRequest(r, hit.matcher, rng);
        if (answer) return Promise.resolve(answer);
        return this.#routeBackend(rb, accrual).send(r, s).then((res) => {
          rb.filters.applyResponse(res);
          return res;
        });
      };
      const res = await execute(req, signal, rule.plan, send, { clock, rng });
      rule.filters.applyResponse(res);
      return res;
    }
    return await this.#defaultBackend().send(req, signal);
  };

  close(): void {
    this.#policyHandle.release();
    this.#profileHandle.release();
    for (const b of this.#backends.values()) b.close();
    this.#backends.clear();
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
    // Requests the proxy fails itself are counted at the edge, where they become a status.
    const m = this.#deps.metrics;
    const inner = svc.service;
    const service: HttpService = (req, signal) =>
      inner(req, signal).catch((e) => {
        m.outboundError(httpErrorKind(e)).inc();
        throw e;
      });
    try {
      const drain = this.#deps.drain;
      if (protocol === "http2") {
        const conn = serveHttp2(sock, service, { log: this.#deps.log });
        const onDrain = () => void conn.close(DRAIN_GRACE_MS);
        drain?.addEventListener("abort", onDrain, { once: true });
        await conn.closed;
        drain?.removeEventListener("abort", onDrain);
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
