/**
 * Kubernetes Events about injection (e.g. a bad namespace override that was ignored), recorded on
 * the pod's owner so they show in `kubectl describe` of the Deployment's ReplicaSet or the Job:
 * pods created by controllers never show admission warnings to a person. Recording never blocks
 * an admission: events go to a bounded queue sent one at a time, and are dropped (and counted)
 * when it is full.
 */
import { Counter, type Registry } from "prom-client";

export interface InjectionEvent {
  namespace: string;
  involved: { apiVersion?: string; kind: string; name: string; uid?: string };
  reason: string;
  message: string;
  type?: "Normal" | "Warning";
}

export interface EventSink {
  record(e: InjectionEvent): void;
}

export type CreateEvent = (namespace: string, body: Record<string, unknown>) => Promise<unknown>;

export class EventRecorder implements EventSink {
  readonly #create: CreateEvent;
  readonly #queue: InjectionEvent[] = [];
  readonly #max: number;
  readonly #log: (m: string) => void;
  readonly #instance: string;
  readonly #now: () => Date;
  readonly #outcomes: Counter | undefined;
  #sending = false;
  #idle: (() => void)[] = [];

  constructor(
    create: CreateEvent,
    opts: {
      maxQueued?: number;
      log?: (m: string) => void;
      instance?: string;
      registry?: Registry;
      now?: () => Date;
    } = {},
  ) {
    this.#create = create;
    this.#max = opts.maxQueued ?? 100;
    this.#log = opts.log ?? (() => {});
    this.#instance = opts.instance ?? "weft-proxy-injector";
    this.#now = opts.now ?? (() => new Date());
    this.#outcomes = opts.registry
      ? new Counter({
        name: "proxy_inject_events_total",
        help: "Kubernetes Events the injector recorded, by outcome (sent, failed, dropped).",
        labelNames: ["outcome"],
        registers: [opts.registry],
      })
      : undefined;
  }

  record(e: InjectionEvent): void {
    if (this.#queue.length >= this.#max) {
      this.#outcomes?.inc({ outcome: "dropped" });
      return;
    }
    this.#queue.push(e);
    if (!this.#sending) void this.#drain();
  }

  /** Resolves when the queue is empty (for tests and shutdown). */
  idle(): Promise<void> {
    if (!this.#sending && this.#queue.length === 0) return Promise.resolve();
    return new Promise((r) => this.#idle.push(r));
  }

  async #drain(): Promise<void> {
    this.#sending = true;
    while (this.#queue.length > 0) {
      const e = this.#queue.shift()!;
      const now = this.#now().toISOString();
      try {
        await this.#create(e.namespace, {
          apiVersion: "v1",
          kind: "Event",
          metadata: { generateName: `${e.involved.name}.`, namespace: e.namespace },
          involvedObject: { ...e.involved, namespace: e.namespace },
          reason: e.reason,
          message: e.message,
          type: e.type ?? "Warning",
          source: { component: "weft-proxy-injector" },
          reportingComponent: "weft.io/proxy-injector",
          reportingInstance: this.#instance,
          firstTimestamp: now,
          lastTimestamp: now,
          count: 1,
        });
        this.#outcomes?.inc({ outcome: "sent" });
      } catch (err) {
        this.#outcomes?.inc({ outcome: "failed" });
        this.#log(
          `cannot record event ${e.reason} on ${e.involved.kind} ${e.namespace}/${e.involved.name}: ${
            (err as Error).message ?? err
          }`,
        );
      }
    }
    this.#sending = false;
    for (const r of this.#idle.splice(0)) r();
  }
}
