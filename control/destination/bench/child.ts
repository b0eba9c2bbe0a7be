/**
 * A child process of `bench:destination` (a client or a controller replica) and its line protocol:
 * JSON objects one a line on its stdin and stdout. Replies are matched by type (a pong also by id);
 * other messages (a client's "got") go to `onMessage`; an "error" line fails the child.
 */
import { jsonLines } from "./plan.ts";

type Msg = { type: string; id?: number };

export class Child<To extends Msg, From extends Msg> {
  readonly #child: Deno.ChildProcess;
  readonly #in: WritableStreamDefaultWriter<Uint8Array>;
  readonly #waiters = new Map<string, (m: From) => void>();
  readonly #enc = new TextEncoder();
  readonly done: Promise<void>;
  onMessage: (m: From) => void = () => {};

  /** `replies`: the message types that answer a request (the rest go to onMessage). */
  constructor(script: string, v8Flags: string[], replies: ReadonlySet<string>) {
    this.#child = new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", ...(v8Flags.length ? [`--v8-flags=${v8Flags.join(",")}`] : []), script],
      stdin: "piped",
      stdout: "piped",
      stderr: "inherit",
    }).spawn();
    this.#in = this.#child.stdin.getWriter();
    const stdout = this.#child.stdout;
    this.done = (async () => {
      for await (const m of jsonLines<From>(stdout)) {
        if (m.type === "error") throw new Error(`${script}: ${(m as Msg & { message?: string }).message}`);
        if (!replies.has(m.type)) {
          this.onMessage(m);
          continue;
        }
        const key = m.id === undefined ? m.type : `${m.type}${m.id}`;
        this.#waiters.get(key)?.(m);
        this.#waiters.delete(key);
      }
    })();
    this.done.catch(() => {});
  }

  /** Queued in order; the caller need not wait unless it must know the line left. */
  send(m: To): Promise<void> {
    return this.#in.write(this.#enc.encode(JSON.stringify(m) + "\n"));
  }

  async ask<K extends From["type"]>(
    m: To,
    reply: K,
    timeoutMs: number,
  ): Promise<Extract<From, { type: K }>> {
    const key = m.id === undefined ? reply : `${reply}${m.id}`;
    const got = new Promise<From>((resolve) => this.#waiters.set(key, resolve));
    await this.send(m);
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<never>((_, reject) =>
      timer = setTimeout(
        () => reject(new Error(`child process: no ${reply} within ${timeoutMs} ms`)),
        timeoutMs,
      )
    );
    try {
      return await Promise.race([got, timeout, this.done.then(() => timeout)]) as Extract<From, { type: K }>;
    } finally {
      clearTimeout(timer);
    }
  }

  async close(closeMsg: To): Promise<void> {
    await this.send(closeMsg).catch(() => {});
    await this.#in.close().catch(() => {});
    const timer = setTimeout(() => this.#child.kill(), 10_000);
    await this.#child.status;
    clearTimeout(timer);
  }
}
