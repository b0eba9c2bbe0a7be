/**
 * One long-lived control-plane stream per key, shared by every connection that needs it.
 *
 * - The first subscriber opens the stream; when the last one leaves, the stream lingers for the
 *   idle timeout (so a burst of short connections reuses it) and is then closed.
 * - When the stream fails, it reconnects with jittered exponential backoff while subscribers keep
 *   the last known state (degraded mode); the first message on the new stream replaces that state.
 * - Terminal statuses (e.g. InvalidArgument) end the watch without retry, as the proxy API says.
 */
import type { Backoff } from "../config/config.ts";
import { backoffDelay } from "../core/backoff.ts";

export interface StreamEnd {
  code: number;
  details: string;
}

/** Opens one stream; calls `onMessage` per message and resolves when it ends (never rejects). */
export type OpenStream<K, M> = (key: K, signal: AbortSignal, onMessage: (m: M) => void) => Promise<StreamEnd>;

export type WatchStatus = "pending" | "live" | "degraded" | "final";

export interface WatchView<S> {
  state: S | undefined;
  status: WatchStatus;
  /** The terminal status when `status` is "final". */
  end?: StreamEnd;
}

export interface WatchHandle<S> {
  current(): WatchView<S>;
  /** When this key's stream was first opened (ms since epoch). */
  openedAt: number;
  /** Resolves with the view once there is state or a final status, or after `timeoutMs`. */
  ready(timeoutMs: number): Promise<WatchView<S>>;
  /**
   * Calls `listener` with each new state (synchronously, as a message is folded in); returns the
   * unsubscribe function. Released with the handle.
   */
  onChange(listener: (state: S) => void): () => void;
  release(): void;
}

export interface SharedWatchOptions<K, M, S> {
  name: string;
  keyOf: (key: K) => string;
  open: OpenStream<K, M>;
  /**
   * Folds a message into the state; `prev` is undefined for the first message of each stream.
   * Throwing keeps the previous state (a reducer that must fail closed returns a closed state).
   */
  reduce: (prev: S | undefined, msg: M, key: K) => S;
  /** gRPC codes that end the watch for good. */
  terminalCodes: ReadonlySet<number>;
  idleMs: number;
  backoff: Backoff;
  onEvent?: (event: "connected" | "message" | "disconnected", key: string, detail?: string) => void;
  random?: () => number;
}

interface Entry<K, S> {
  key: K;
  openedAt: number;
  view: WatchView<S>;
  refs: number;
  abort: AbortController;
  idleTimer: ReturnType<typeof setTimeout> | undefined;
  waiters: Set<() => void>;
  listeners: Set<(state: S) => void>;
}

export class SharedWatch<K, M, S> {
  #entries = new Map<string, Entry<K, S>>();
  #opts: SharedWatchOptions<K, M, S>;
  #closed = false;

  constructor(opts: SharedWatchOptions<K, M, S>) {
    this.#opts = opts;
  }

  /** Number of open streams (for metrics and tests). */
  get size(): number {
    return this.#entries.size;
  }

  subscribe(key: K): WatchHandle<S> {
    const id = this.#opts.keyOf(key);
    let e = this.#entries.get(id);
    if (!e) {
      e = {
        key,
        openedAt: Date.now(),
        view: { state: undefined, status: "pending" },
        refs: 0,
        abort: new AbortController(),
        idleTimer: undefined,
        waiters: new Set(),
        listeners: new Set(),
      };
      this.#entries.set(id, e);
      if (!this.#closed) this.#run(id, e);
    }
    const entry = e;
    entry.refs++;
    if (entry.idleTimer !== undefined) {
      clearTimeout(entry.idleTimer);
      entry.idleTimer = undefined;
    }
    let released = false;
    const mine = new Set<(state: S) => void>();
    return {
      current: () => entry.view,
      openedAt: entry.openedAt,
      ready: (timeoutMs) => {
        if (entry.view.state !== undefined || entry.view.status === "final") {
          return Promise.resolve(entry.view);
        }
        return new Promise((resolve) => {
          const done = () => {
            clearTimeout(t);
            entry.waiters.delete(done);
            resolve(entry.view);
          };
          const t = setTimeout(done, timeoutMs);
          entry.waiters.add(done);
        });
      },
      onChange: (listener) => {
        if (released) return () => {};
        mine.add(listener);
        entry.listeners.add(listener);
        return () => {
          mine.delete(listener);
          entry.listeners.delete(listener);
        };
      },
      release: () => {
        if (released) return;
        released = true;
        for (const l of mine) entry.listeners.delete(l);
        mine.clear();
        if (--entry.refs === 0 && this.#entries.get(id) === entry) {
          entry.idleTimer = setTimeout(() => this.#evict(id, entry), this.#opts.idleMs);
        }
      },
    };
  }

  #evict(id: string, e: Entry<K, S>): void {
    if (e.refs > 0) return;
    e.abort.abort();
    this.#entries.delete(id);
  }

  #wake(e: Entry<K, S>): void {
    for (const w of [...e.waiters]) w();
  }

  async #run(id: string, e: Entry<K, S>): Promise<void> {
    const o = this.#opts;
    let attempt = 0;
    while (!e.abort.signal.aborted) {
      let first = true;
      const end = await o.open(e.key, e.abort.signal, (msg) => {
        try {
          const next = o.reduce(first ? undefined : e.view.state, msg, e.key);
          e.view = { state: next, status: "live" };
        } catch (err) {
          // An invalid message keeps the previous state; the stream stays up.
          o.onEvent?.("message", id, `ignored invalid update: ${(err as Error).message}`);
          return;
        }
        if (first) o.onEvent?.("connected", id);
        first = false;
        attempt = 0;
        this.#wake(e);
        for (const l of [...e.listeners]) {
          try {
            l(e.view.state as S);
          } catch (err) {
            o.onEvent?.("message", id, `change listener failed: ${(err as Error).message}`);
          }
        }
      });
      if (e.abort.signal.aborted) return;
      if (o.terminalCodes.has(end.code)) {
        e.view = { state: e.view.state, status: "final", end };
        this.#wake(e);
        return;
      }
      o.onEvent?.("disconnected", id, `code ${end.code}: ${end.details}`);
      e.view = { state: e.view.state, status: e.view.state === undefined ? "pending" : "degraded" };
      const delay = backoffDelay(o.backoff, attempt++, o.random);
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, delay);
        e.abort.signal.addEventListener("abort", () => {
          clearTimeout(t);
          resolve();
        }, { once: true });
      });
    }
  }

  close(): void {
    this.#closed = true;
    for (const [id, e] of this.#entries) {
      if (e.idleTimer !== undefined) clearTimeout(e.idleTimer);
      e.abort.abort();
      this.#wake(e);
      this.#entries.delete(id);
    }
  }
}
