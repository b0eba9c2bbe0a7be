/**
 * One tap: Observe streams from every target pod merged into one sequence of lines. The streams never
 * wait for the reader: lines go through a bounded queue, and when it is full a new request is not
 * admitted (and its later events are not sent) while events of requests already shown are dropped and
 * counted. Requests are admitted at most `maxRps` per second (a token bucket) and `limit` in all; the
 * tap ends when the limit's last request has ended (or a grace period after the limit was reached),
 * when every pod's stream has ended, or when `signal` aborts (the reader left).
 */
import type { ObserveRequest, TapEvent } from "../../proto/tap_api.ts";
import { type TapEventJson, tapEventJson, type TapLine } from "./event_json.ts";
import { observeRequest, type TapRequest } from "./request.ts";
import type { TapTarget } from "./targets.ts";

/** Opens the tap API stream of one pod; iteration ends with the stream, or throws why it failed. */
export type Observe = (
  target: TapTarget,
  req: ObserveRequest,
  signal: AbortSignal,
) => AsyncIterable<TapEvent>;

export interface SessionOptions {
  request: TapRequest;
  targets: readonly TapTarget[];
  observe: Observe;
  /** Aborted when the reader goes away. */
  signal: AbortSignal;
  queueCapacity?: number;
  /** How long after the limit was reached requests still open may end before the tap stops anyway. */
  endGraceMs?: number;
  now?: () => number;
  /** Wait before asking a proxy again whose stream ended at once with nothing (default 1 s). */
  emptyRetryMs?: number;
}

function abortableDelay(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener("abort", done, { once: true });
  });
}

/** What one proxy serves a tap at most (weft's proxies refuse a larger `limit`): also the ask of a tap without one. */
export const PER_POD_LIMIT = 100_000;

class LineQueue {
  #items: TapLine[] = [];
  #wake: (() => void) | undefined;
  constructor(readonly capacity: number) {}

  get full(): boolean {
    return this.#items.length >= this.capacity;
  }

  /** Adds a line; false when the queue is full (the line is not kept). `force` is for the few control lines. */
  push(line: TapLine, force = false): boolean {
    if (this.full && !force) return false;
    this.#items.push(line);
    this.wake();
    return true;
  }

  wake(): void {
    const w = this.#wake;
    this.#wake = undefined;
    w?.();
  }

  take(): TapLine | undefined {
    return this.#items.shift();
  }

  wait(): Promise<void> {
    return new Promise((r) => this.#wake = r);
  }
}

export async function* tapSession(o: SessionOptions): AsyncGenerator<TapLine> {
  const req = o.request;
  const now = o.now ?? (() => performance.now());
  const queue = new LineQueue(o.queueCapacity ?? 1000);
  const streams = new AbortController();
  const onAbort = () => {
    streams.abort();
    queue.wake();
  };
  o.signal.addEventListener("abort", onAbort, { once: true });

  // A bucket holds at least one request, so a rate below 1/s (e.g. 0.5) admits one every 2 s.
  const burst = Math.max(1, req.maxRps);
  let tokens = burst;
  let refilled = now();
  let started = 0;
  let dropped = 0;
  const open = new Set<string>();
  let ended: { reason: "limit" | "pods-ended"; message?: string } | undefined;
  let grace: ReturnType<typeof setTimeout> | undefined;

  const finish = (reason: "limit" | "pods-ended") => {
    if (ended) return;
    ended = { reason };
    streams.abort();
    queue.wake();
  };
  const limitReached = () => req.limit !== undefined && started >= req.limit;

  const admit = (e: TapEventJson): void => {
    if (ended) return;
    const key = `${e.pod}|${e.http.id}`;
    if (e.http.kind === "request") {
      if (limitReached()) return;
      const t = now();
      tokens = Math.min(burst, tokens + ((t - refilled) / 1000) * req.maxRps);
      refilled = t;
      if (tokens < 1) return;
      if (!queue.push({ event: e })) {
        dropped++;
        return;
      }
      tokens -= 1;
      started++;
      open.add(key);
      if (limitReached()) {
        const g = setTimeout(() => finish("limit"), o.endGraceMs ?? 5000);
        Deno.unrefTimer(g);
        grace = g;
      }
      return;
    }
    if (!open.has(key)) return;
    if (!queue.push({ event: e })) dropped++;
    if (e.http.kind === "end") {
      open.delete(key);
      if (limitReached() && open.size === 0) finish("limit");
    }
  };

  const perPod = observeRequest(req, Math.min(req.limit ?? PER_POD_LIMIT, PER_POD_LIMIT));
  let running = o.targets.length;
  const pump = async (t: TapTarget) => {
    const pod = `${t.namespace}/${t.name}`;
    try {
      for (let attempt = 1;; attempt++) {
        let seen = 0;
        for await (const ev of o.observe(t, perPod, streams.signal)) {
          seen++;
          const j = tapEventJson(pod, ev, t.ip);
          if (j) admit(j);
          if (ended || streams.signal.aborted) break;
        }
        if (ended || streams.signal.aborted || seen > 0) break;
        // A stream closed at once with no event and no status was seen on the first tap of a pod just
        // admitted to the mesh: ask once more, then say so instead of ending that pod silently.
        if (attempt === 2) {
          queue.push({
            error: { pod, message: "the proxy ended the tap twice without an event or a status" },
          }, true);
          break;
        }
        await abortableDelay(o.emptyRetryMs ?? 1000, streams.signal);
      }
    } catch (e) {
      if (!streams.signal.aborted) queue.push({ error: { pod, message: (e as Error).message } }, true);
    } finally {
      running--;
      if (running === 0) finish("pods-ended");
    }
  };
  const pumps = o.targets.map(pump);
  if (o.targets.length === 0) finish("pods-ended");

  try {
    for (;;) {
      const line = queue.take();
      if (line) {
        yield line;
        continue;
      }
      if (ended || o.signal.aborted) break;
      await queue.wait();
    }
    if (!o.signal.aborted && ended) {
      yield { end: { reason: ended.reason, requests: started, dropped } };
    }
  } finally {
    clearTimeout(grace);
    o.signal.removeEventListener("abort", onAbort);
    streams.abort();
    await Promise.allSettled(pumps);
  }
}
