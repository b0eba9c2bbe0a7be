/**
 * One Observe call: its compiled match, its request budget (`limit`) and a bounded event queue
 * between the data path (which pushes and never waits) and the gRPC response (which pulls). A
 * slow tap client lets the queue fill; further events are dropped and counted, so tapping never
 * holds a request. The session ends once `limit` requests were claimed and every claimed request
 * has sent its last event, or when the client goes away.
 */
import type { TapEvent } from "../../proto/tap_messages.ts";
import type { Matcher } from "./match.ts";

/** Events one tap may have waiting for its client (Linkerd buffers 400 per tap). */
export const DEFAULT_TAP_QUEUE = 1000;

export interface TapSessionOptions {
  /** StreamId.base of this tap's events. */
  base: number;
  limit: number;
  match: Matcher;
  /** ObserveRequest.extract asked for headers. */
  headers: boolean;
  maxQueue?: number;
  onDrop?: () => void;
}

export class TapSession {
  readonly base: number;
  readonly limit: number;
  readonly match: Matcher;
  readonly headers: boolean;
  readonly #max: number;
  readonly #onDrop: () => void;
  #started = 0;
  /** Claimed requests that have not sent their last event yet. */
  #open = 0;
  #queue: TapEvent[] = [];
  #wake: (() => void) | undefined;
  #closed = false;
  dropped = 0;

  constructor(o: TapSessionOptions) {
    this.base = o.base;
    this.limit = o.limit;
    this.match = o.match;
    this.headers = o.headers;
    this.#max = o.maxQueue ?? DEFAULT_TAP_QUEUE;
    this.#onDrop = o.onDrop ?? (() => {});
  }

  /** True while it takes more requests. */
  get accepting(): boolean {
    return !this.#closed && this.#started < this.limit;
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** Claims the next request's stream number (undefined when the limit is reached). */
  claim(): number | undefined {
    if (!this.accepting) return undefined;
    return this.#started++;
  }

  /** Follows a claimed request whose first event was queued. */
  opened(): void {
    this.#open++;
  }

  /** A followed request sent its last event (or was abandoned). */
  ended(): void {
    this.#open--;
    this.#poke();
  }

  /** Queues an event; false (and counted) when the client is too slow or gone. */
  push(ev: TapEvent): boolean {
    if (this.#closed) return false;
    if (this.#queue.length >= this.#max) {
      this.dropped++;
      this.#onDrop();
      return false;
    }
    this.#queue.push(ev);
    this.#poke();
    return true;
  }

  #poke(): void {
    const w = this.#wake;
    if (w) {
      this.#wake = undefined;
      w();
    }
  }

  /** True once nothing more can come: the limit was reached and every followed request ended. */
  get finished(): boolean {
    return this.#closed || (this.#started >= this.limit && this.#open <= 0);
  }

  /** The next event, or null when the session is over (finished and drained). */
  async next(): Promise<TapEvent | null> {
    for (;;) {
      const ev = this.#queue.shift();
      if (ev !== undefined) return ev;
      if (this.finished) return null;
      await new Promise<void>((r) => this.#wake = r);
    }
  }

  /** Up to `max` more events already queued, without waiting (to batch them into one write). */
  takeQueued(max: number): TapEvent[] {
    return this.#queue.splice(0, max);
  }

  /** The client went away or the server is stopping: later pushes are refused. */
  close(): void {
    this.#closed = true;
    this.#queue = [];
    this.#poke();
  }
}
