/**
 * The policy controller replicas of one repetition (replica.ts), each a process of its own, and
 * their line protocol: every request is answered by one line keyed by the request's name.
 */
import { LineWriter, readLines } from "./lines.ts";
import type { ScenarioSize } from "./scenario.ts";

export interface Loaded {
  port: number;
  objects: number;
  coalesceMs: number;
  heap0: number;
  heap1: number;
  rss0: number;
  rss1: number;
}

class ReplicaProc {
  readonly #child: Deno.ChildProcess;
  readonly writer: LineWriter;
  readonly #waiting = new Map<string, (v: unknown) => void>();
  readonly done: Promise<void>;

  constructor() {
    const child = this.#child = new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", "--v8-flags=--expose-gc", new URL("./replica.ts", import.meta.url).pathname],
      stdin: "piped",
      stdout: "piped",
      stderr: "inherit",
    }).spawn();
    this.writer = new LineWriter(this.#child.stdin);
    this.done = (async () => {
      for await (const line of readLines(child.stdout)) {
        for (const [k, v] of Object.entries(JSON.parse(line) as Record<string, unknown>)) {
          this.#waiting.get(k)?.(v);
          this.#waiting.delete(k);
        }
      }
    })();
    this.done.catch(() => {});
  }

  async ask<T>(request: Record<string, unknown>, reply: string, timeoutMs = 120_000): Promise<T> {
    const got = new Promise<T>((resolve) => this.#waiting.set(reply, resolve as (v: unknown) => void));
    await this.writer.send(request);
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = new Promise<never>((_, reject) =>
      timer = setTimeout(() => reject(new Error(`replica: no ${reply} within ${timeoutMs} ms`)), timeoutMs)
    );
    const ended = this.done.then(() => {
      throw new Error(`replica: exited before ${reply}`);
    });
    try {
      return await Promise.race([got, late, ended]);
    } finally {
      clearTimeout(timer);
    }
  }

  async close(): Promise<void> {
    await this.writer.close();
    const timer = setTimeout(() => this.#child.kill(), 10_000);
    await this.#child.status;
    clearTimeout(timer);
  }
}

export class ReplicaProcs {
  readonly #procs: ReplicaProc[];

  constructor(n: number) {
    this.#procs = Array.from({ length: n }, () => new ReplicaProc());
  }

  get count(): number {
    return this.#procs.length;
  }

  load(size: ScenarioSize): Promise<Loaded[]> {
    return Promise.all(this.#procs.map((p) => p.ask<Loaded>({ load: size }, "loaded")));
  }

  heap(): Promise<{ heap: number; rss: number }[]> {
    return Promise.all(this.#procs.map((p) => p.ask<{ heap: number; rss: number }>({ heap: true }, "heap")));
  }

  async churn(): Promise<void> {
    await Promise.all(this.#procs.map((p) => p.ask({ churn: true }, "churning")));
  }

  /** The same change to every replica, written at once (not awaited: lines keep their order). */
  apply(c: number): void {
    for (const p of this.#procs) p.writer.send({ c }).catch(() => {});
  }

  stop(): Promise<{ cpuUs: number; resets: number }[]> {
    return Promise.all(
      this.#procs.map((p) => p.ask<{ cpuUs: number; resets: number }>({ stop: true }, "stopped")),
    );
  }

  async close(): Promise<void> {
    await Promise.all(this.#procs.map((p) => p.close()));
  }
}
