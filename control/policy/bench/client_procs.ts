/**
 * Starts the benchmark's client processes (client.ts), hands each a share of the streams, and
 * gathers what they report. Clock: each client stamps receipts with its own `performance.now()`
 * (monotonic); after the streams are up, the controller process maps each client's clock onto its
 * own by a ping exchange over the pipe, keeping the exchange with the shortest round trip
 * (offset = client time − midpoint of send and reply), so the mapping error is at most half that
 * round trip, which is reported as `clock_error_ms`.
 */
import { LineWriter, readLines } from "./lines.ts";
import { placement } from "./placement.ts";
import type { BenchStream } from "./scenario.ts";

/** A receipt, in the controller process's `performance.now()` time once clocks are mapped. */
export interface Receipt {
  stream: number;
  rev: number;
  t: number;
}

interface Proc {
  child: Deno.ChildProcess;
  writer: LineWriter;
  offset: number;
  ready: boolean;
  raw: [number, number, number][];
  pong: ((t: number) => void) | undefined;
  final: ((f: { last: [number, number][]; errors: Record<string, number> }) => void) | undefined;
  done: Promise<void>;
}

export class ClientProcs {
  readonly #procs: Proc[] = [];
  /** Latest rev each stream received (-1: a message without a marker). */
  readonly last = new Map<number, number>();
  /** First rev each stream received. */
  readonly first = new Map<number, number>();
  received = 0;
  clockErrorMs = 0;

  /** The replica serving each stream, by stream id (placement.ts). */
  readonly replicaOf = new Map<number, number>();

  /** `ports`: one per controller replica; each client connection dials one (placement.ts). */
  static start(n: number, ports: number[], all: BenchStream[]): ClientProcs {
    const cp = new ClientProcs();
    const client = new URL("./client.ts", import.meta.url).pathname;
    const shares = Array.from({ length: n }, (_, k) => all.filter((_, i) => i % n === k));
    const place = placement(shares.map((s) => s.length), ports.length);
    for (let k = 0; k < n; k++) {
      shares[k].forEach((s, j) => cp.replicaOf.set(s.id, place.replicaOf[k][j]));
      const child = new Deno.Command(Deno.execPath(), {
        args: [
          "run",
          "-A",
          client,
          `--ports=${ports.join(",")}`,
          `--first-connection=${place.firstConnection[k]}`,
        ],
        stdin: "piped",
        stdout: "piped",
        stderr: "inherit",
      }).spawn();
      const p: Proc = {
        child,
        writer: new LineWriter(child.stdin),
        offset: 0,
        ready: false,
        raw: [],
        pong: undefined,
        final: undefined,
        done: Promise.resolve(),
      };
      p.done = cp.#read(p);
      const mine = shares[k].map(({ id, path, req }) => ({ id, path, req }));
      p.writer.send({ streams: mine });
      cp.#procs.push(p);
    }
    return cp;
  }

  async #read(p: Proc): Promise<void> {
    for await (const line of readLines(p.child.stdout)) {
      const m = JSON.parse(line);
      if (m.m) {
        for (const r of m.m as [number, number, number][]) {
          if (!this.first.has(r[0])) this.first.set(r[0], r[1]);
          this.last.set(r[0], r[1]);
          this.received++;
          p.raw.push(r);
        }
      } else if (m.ready !== undefined) p.ready = true;
      else if (m.pong !== undefined) p.pong?.(m.t);
      else if (m.final) p.final?.(m.final);
    }
  }

  get ready(): boolean {
    return this.#procs.every((p) => p.ready);
  }

  /** Maps every client's clock onto this process's, from `pings` exchanges each. */
  async calibrate(pings = 30): Promise<void> {
    let worst = 0;
    for (const p of this.#procs) {
      let best = Infinity;
      for (let i = 0; i < pings; i++) {
        const t0 = performance.now();
        const tc = await new Promise<number>((resolve) => {
          p.pong = resolve;
          p.writer.send({ ping: i });
        });
        const t1 = performance.now();
        if (t1 - t0 < best) {
          best = t1 - t0;
          p.offset = tc - (t0 + t1) / 2;
        }
      }
      p.pong = undefined;
      worst = Math.max(worst, best / 2);
    }
    this.clockErrorMs = worst;
  }

  /** Every receipt so far, in this process's clock. */
  receipts(): Receipt[] {
    const out: Receipt[] = [];
    for (const p of this.#procs) {
      for (const [stream, rev, t] of p.raw) out.push({ stream, rev, t: t - p.offset });
    }
    return out;
  }

  /** Ends the clients; resolves to the stream errors they saw (status name → count). */
  async finish(): Promise<Record<string, number>> {
    const errors: Record<string, number> = {};
    await Promise.all(this.#procs.map(async (p) => {
      const f = await Promise.race([
        new Promise<{ last: [number, number][]; errors: Record<string, number> }>((resolve) => {
          p.final = resolve;
          p.writer.send({ final: true });
        }),
        new Promise<undefined>((r) => setTimeout(() => r(undefined), 30_000)),
      ]);
      if (!f) {
        errors["client_process_timeout"] = (errors["client_process_timeout"] ?? 0) + 1;
        p.child.kill();
      } else {
        for (const [k, v] of Object.entries(f.errors)) errors[k] = (errors[k] ?? 0) + v;
      }
      await p.writer.close();
      await p.done;
      await p.child.status;
    }));
    return errors;
  }
}
