/** The balancer's counters behind `outbound_http_balancer_*` (see balancer_metrics.ts). */

/** Upper bounds (seconds) of the queue latency histogram: linkerd2-proxy's balancer queue buckets. */
export const QUEUE_LATENCY_BOUNDS: readonly number[] = [0.0005, 0.005, 0.05, 0.5, 1, 3];

/**
 * What a balancer counts for Linkerd's `outbound_http_balancer_{queue,p2c}_*` families: plain fields
 * updated in place, so a request adds increments and no object. One instance may be shared by the
 * balancers of one parent and backend (as Linkerd's families share a series per label set), so the
 * counters survive a balancer being rebuilt.
 */
export class BalancerStats {
  /** Requests that entered the queue: every request given to the balancer that was not refused at once. */
  queueRequests = 0;
  /** Time spent in the queue: counts per `QUEUE_LATENCY_BOUNDS` bucket (not cumulative; last is +Inf). */
  readonly queueLatency: number[] = new Array(QUEUE_LATENCY_BOUNDS.length + 1).fill(0);
  queueLatencySum = 0;
  /** Failfast gate: opened (at creation and on leaving failfast) and shut (on entering it) counts. */
  gateOpens = 0;
  gateShuts = 0;
  /** Unix seconds of the last open / shut; the other one is 0, as Linkerd's gauges. */
  gateOpenTime = 0;
  gateShutTime = 0;
  /** The failfast timeout, seconds. */
  gateTimeout = 0;
  /** Endpoint set changes: one per endpoint added or changed, one per endpoint removed. */
  updatesAdd = 0;
  updatesRemove = 0;

  /** A request that left the queue (served, failed by failfast, or given up) after `seconds`. */
  dequeued(seconds: number): void {
    const b = QUEUE_LATENCY_BOUNDS;
    let i = 0;
    while (i < b.length && seconds > b[i]) i++;
    this.queueLatency[i]++;
    this.queueLatencySum += seconds;
  }

  gateOpen(): void {
    this.gateOpens++;
    this.gateOpenTime = Date.now() / 1000;
    this.gateShutTime = 0;
  }

  gateShut(): void {
    this.gateShuts++;
    this.gateShutTime = Date.now() / 1000;
    this.gateOpenTime = 0;
  }
}
