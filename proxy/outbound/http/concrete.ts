/**
 * The concrete layer of the outbound HTTP stack: one backend (a Destination.Get path or one fixed
 * address) as a P2C peak-EWMA balancer over its endpoint clients, kept in sync with discovery.
 * The logical layer (`logical.ts`) picks which backend a request goes to; the endpoint layer
 * (`endpoint.ts`) sends it.
 */
import type { Endpoint } from "../../core/endpoint.ts";
import type { Clock } from "../../../proto/support/clock.ts";
import { addrKey, type Discovery, type EndpointSet } from "../../discovery/clients.ts";
import type { WatchHandle } from "../../discovery/shared_watch.ts";
import type { ProfileView } from "../../discovery/profile_view.ts";
import type { ResponseClassifier } from "../../metrics/response_class.ts";
import type { StreamSeries } from "../../metrics/http_route_metrics.ts";
import { endpointTarget, type Target } from "../resolve.ts";
import {
  Balancer,
  type BalancerStats,
  type FailureAccrualConfig,
  type Lease,
  type QueueConfig,
} from "../../balance/balancer.ts";
import { preciseClock } from "../../core/clock.ts";
import type { PeakEwmaConfig } from "../../balance/peak_ewma.ts";
import type { Rng } from "../../core/rng.ts";
import { EndpointClient, type EndpointClientDeps, neverSent } from "./endpoint.ts";

/** Endpoints one request may try when connects fail (each failed one leaves rotation). */
const MAX_CONNECT_ATTEMPTS = 3;
import { BodyTap } from "../../http/body_tap.ts";
import type { Body, HeaderList, HttpRequest, HttpResponse } from "../../http/message.ts";

export interface ConcreteDeps extends EndpointClientDeps {
  discovery: Discovery;
  /** How long a request waits for a backend's first Destination answer. */
  discoveryTimeoutMs: number;
  /** Our own addresses: endpoints there are reached in plaintext and never upgraded. */
  localIps: ReadonlySet<string>;
  clock?: Clock;
  rng?: Rng;
}

/** How long a pod address's first request waits for its endpoint profile (as the outbound listener waits). */
const PROFILE_WAIT_MS = 1000;

/** Endpoints that were removed stay open this long for requests already on them. */
const RETIRE_GRACE_MS = 10_000;

function isLocal(ip: string, local: ReadonlySet<string>): boolean {
  return ip.startsWith("127.") || ip === "::1" || local.has(ip);
}

/** What one backend balances over: a Destination.Get path, or one fixed address. */
export type BackendSource =
  | { kind: "path"; path: string }
  | { kind: "forward"; endpoint: Endpoint | undefined; ip: string; port: number };

/** One balancer with its endpoint clients, kept in sync with its discovery watch. */
export class BackendState {
  readonly balancer: Balancer<EndpointClient>;
  readonly #deps: ConcreteDeps;
  readonly #source: BackendSource;
  readonly #handle: WatchHandle<EndpointSet> | undefined;
  /** A forward without mesh metadata: the address's endpoint profile (GetProfile of `ip:port`). */
  readonly #profile: WatchHandle<ProfileView> | undefined;
  #syncedProfile: unknown = undefined;
  #waitedProfile = false;
  readonly #clock: Clock;
  #synced: unknown = null;
  #clients = new Map<string, EndpointClient>();
  /** Unsubscribes from each endpoint's reachability (outbound/reachability.ts). */
  #unwatch = new Map<string, () => void>();
  #waited = false;

  constructor(
    name: string,
    source: BackendSource,
    cfg: {
      ewma: PeakEwmaConfig;
      queue: QueueConfig;
      accrual: FailureAccrualConfig | undefined;
      /** The parent and backend's `outbound_http_balancer_*` counts, when they are exported. */
      stats?: BalancerStats;
    },
    deps: ConcreteDeps,
  ) {
    this.#deps = deps;
    this.#source = source;
    this.#clock = deps.clock ?? preciseClock;
    this.balancer = new Balancer<EndpointClient>({
      name,
      ewma: cfg.ewma,
      queue: cfg.queue,
      accrual: cfg.accrual,
      clock: this.#clock,
      rng: deps.rng,
      stats: cfg.stats,
    });
    const r = deps.reachability;
    if (r) this.balancer.reachability = (key) => r.isDown(key);
    // A forward without mesh metadata asks Destination about that address (as the L4 path does).
    const path = source.kind === "path"
      ? source.path
      : source.endpoint?.identity
      ? undefined
      : addrKey(source.ip, source.port);
    this.#handle = path === undefined ? undefined : deps.discovery.destination.subscribe(path);
    // Destination.Get refuses IP queries (as Linkerd's does), so a pod address's identity and hints come
    // from its endpoint profile, as Linkerd's proxy takes them: a meshed pod dialled by IP gets mesh TLS.
    this.#profile = source.kind === "forward" && !source.endpoint?.identity
      ? deps.discovery.profile.subscribe(addrKey(source.ip, source.port))
      : undefined;
  }

  /** The endpoint profile's endpoint for the forward address, when it carries an identity. */
  #profileEndpoint(ip: string, port: number): Endpoint | undefined {
    const e = this.#profile?.current().state?.compiled?.endpoint;
    return e?.identity && e.ip === ip && e.port === port ? e : undefined;
  }

  #target(e: Endpoint | undefined, ip: string, port: number): Target {
    if (isLocal(ip, this.#deps.localIps) || !e) {
      return {
        kind: "plain",
        ip,
        port,
        reason: isLocal(ip, this.#deps.localIps) ? "loopback" : "not_provided_by_service_discovery",
      };
    }
    return endpointTarget(e);
  }

  #sync(): void {
    const state = this.#handle?.current().state;
    const profile = this.#profile?.current().state;
    if (this.#handle && state === this.#synced && profile === this.#syncedProfile) return;
    this.#syncedProfile = profile;
    if (!this.#handle && this.#synced !== null) return;
    this.#synced = this.#handle ? state : true;
    const want = new Map<string, { e: Endpoint | undefined; ip: string; port: number }>();
    const s = this.#source;
    if (s.kind === "path") {
      for (const [k, e] of state?.endpoints ?? []) want.set(k, { e, ip: e.ip, port: e.port });
    } else {
      const k = addrKey(s.ip, s.port);
      const found = state?.endpoints.get(k) ?? this.#profileEndpoint(s.ip, s.port);
      want.set(k, { e: s.endpoint?.identity ? s.endpoint : found, ip: s.ip, port: s.port });
    }
    const next = new Map<string, EndpointClient>();
    for (const [k, e] of want) {
      const target = this.#target(e.e, e.ip, e.port);
      const old = this.#clients.get(k);
      if (old && old.sameAs(target, e.e)) {
        next.set(k, old);
        continue;
      }
      const c = new EndpointClient(target, e.e, this.#deps);
      c.warm();
      next.set(k, c);
    }
    for (const [k, c] of this.#clients) if (next.get(k) !== c) retire(c);
    this.#clients = next;
    this.balancer.update(next);
    const r = this.#deps.reachability;
    if (r) {
      for (const [k, un] of this.#unwatch) {
        if (!next.has(k)) {
          un();
          this.#unwatch.delete(k);
        }
      }
      for (const k of next.keys()) {
        if (!this.#unwatch.has(k)) {
          this.#unwatch.set(
            k,
            r.watch(k, (up) => this.balancer.setReachable(k, up)),
          );
        }
      }
    }
  }

  /** Sends one attempt; `series` is the route backend's metric series (policy routes). */
  async send(
    req: HttpRequest,
    signal: AbortSignal,
    classifier?: ResponseClassifier,
    series?: StreamSeries,
  ): Promise<HttpResponse> {
    this.#sync();
    const h = this.#handle;
    if (!this.#waited && h && h.current().state === undefined) {
      this.#waited = true;
      await h.ready(this.#deps.discoveryTimeoutMs);
      this.#sync();
    }
    // A pod address's first request waits (once, briefly) for its endpoint profile, so it is not sent in
    // plaintext to a peer that requires mesh TLS (a proxy's tap port) just because the profile was late.
    const p = this.#profile;
    if (!this.#waitedProfile && p && p.current().state === undefined) {
      this.#waitedProfile = true;
      await p.ready(Math.min(this.#deps.discoveryTimeoutMs, PROFILE_WAIT_MS));
      this.#sync();
    }
    const clock = this.#clock;
    const b = this.balancer;
    const t0 = clock.now();
    let lease: Lease<EndpointClient>;
    let res: HttpResponse;
    try {
      lease = b.pick(t0) ?? await b.acquire(signal);
    } catch (e) {
      series?.recordError(e, (clock.now() - t0) / 1000);
      throw e;
    }
    for (let attempt = 1;; attempt++) {
      try {
        res = await lease.endpoint.request(req, signal, classifier);
        break;
      } catch (e) {
        const now = clock.now();
        lease.done(false, now);
        // A connect that failed sent nothing: another endpoint gets the request, as Linkerd's balancer
        // only hands requests to connected endpoints. Reachability has already taken this one out.
        const next =
          attempt < MAX_CONNECT_ATTEMPTS && this.#deps.reachability && !signal.aborted && neverSent(e)
            ? b.pick(now)
            : undefined;
        if (next !== undefined) {
          lease = next;
          continue;
        }
        series?.recordError(e, (now - t0) / 1000);
        throw e;
      }
    }
    const now = clock.now();
    lease.responded(now);
    const early = res.headers.get("grpc-status");
    if (early !== undefined || res.upgrade) {
      lease.done(res.status < 500 && (early === undefined || early === "0"), now);
      series?.recordResponse(res.status, undefined, res.headers, (now - t0) / 1000);
      return res;
    }
    res.body = new LeaseBody(res.body, res, lease, clock, series, t0);
    return res;
  }

  close(): void {
    this.#handle?.release();
    this.#profile?.release();
    this.balancer.close();
    for (const un of this.#unwatch.values()) un();
    this.#unwatch.clear();
    for (const c of this.#clients.values()) retire(c);
    this.#clients.clear();
  }
}

function retire(c: EndpointClient): void {
  Deno.unrefTimer(setTimeout(() => c.close(1000), RETIRE_GRACE_MS));
}

/**
 * Reports the response's end to the balancer (failure accrual sees gRPC statuses in trailers). It
 * holds the lease itself rather than a callback: one object per response on the hot path.
 */
class LeaseBody extends BodyTap {
  readonly #res: HttpResponse;
  #lease: Lease<EndpointClient> | undefined;
  readonly #clock: Clock;
  /** The route backend's series and the attempt's start, when the route records metrics. */
  readonly #series: StreamSeries | undefined;
  readonly #t0: number;

  constructor(
    inner: Body,
    res: HttpResponse,
    lease: Lease<EndpointClient>,
    clock: Clock,
    series: StreamSeries | undefined,
    t0: number,
  ) {
    super(inner);
    this.#res = res;
    this.#lease = lease;
    this.#clock = clock;
    this.#series = series;
    this.#t0 = t0;
  }

  /** Ends the lease (once); the clock reading, or -1 when it had ended already. */
  #finish(ok: boolean): number {
    const l = this.#lease;
    if (l === undefined) return -1;
    this.#lease = undefined;
    const now = this.#clock.now();
    l.done(ok, now);
    return now;
  }

  protected onChunk(): void {}

  protected onEnd(trailers: HeaderList | undefined): void {
    const g = trailers?.get("grpc-status");
    const res = this.#res;
    const now = this.#finish(res.status < 500 && (g === undefined || g === "0"));
    if (now >= 0) this.#series?.recordResponse(res.status, trailers, res.headers, (now - this.#t0) / 1000);
  }

  protected onError(e: unknown): void {
    const now = this.#finish(false);
    if (now >= 0) this.#series?.recordError(e, (now - this.#t0) / 1000, this.#res.status);
  }

  protected onCancel(): void {
    const now = this.#finish(this.#res.status < 500);
    if (now >= 0) this.#series?.recordError({ reason: "cancel" }, (now - this.#t0) / 1000, this.#res.status);
  }
}
