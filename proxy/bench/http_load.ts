/**
 * HTTP load programs for `deno task bench:dataplane`, run inside the benchmark's namespaces:
 *
 *   h1-server <port>                        HTTP/1.1 keep-alive server (Deno.serve), 1 KiB per GET
 *   wait <ip:port>                          returns once something accepts connections there
 *   h1 <ip:port> <rate> <secs> <conns>      open-loop HTTP/1.1 GETs over <conns> kept-alive connections
 *   grpc <ip:port> <rate> <secs> <conns>    open-loop gRPC unary calls over <conns> HTTP/2 connections
 *
 * Open loop: request i is due at start + i/rate whatever happened to the ones before it, and its
 * latency counts from that due time, so a stall shows up in every request it delays (no
 * coordinated omission, as wrk2). The due times come from a worker that sleeps precisely
 * (ticker.ts). HTTP/1.1 requests wait for a free connection (no pipelining); gRPC calls are
 * multiplexed (at most 100 in flight per connection, then they wait) over the small HTTP/2
 * client in h2_client.ts. The gRPC server is nghttpd (see main.ts). Requests that fail or have
 * not completed by the drain deadline count as infinitely slow in the percentiles, and are
 * reported. Each client run is bounded: rate × secs requests, then at most max(2 s, secs) to
 * drain. Clients print one JSON line.
 */
import * as net from "node:net";
import { Buffer } from "node:buffer";
import { encodeHeaders, grpcMessage, H2Connection } from "./h2_client.ts";

const [mode, ...args] = Deno.args;

const RESPONSE_BYTES = 1024;
const GRPC_PATH = "/weft.bench.Echo/Unary";

function addr(s: string): { host: string; port: number } {
  const i = s.lastIndexOf(":");
  return { host: s.slice(0, i), port: Number(s.slice(i + 1)) };
}

const wallNow = () => performance.timeOrigin + performance.now();

interface Run {
  /** Called with request index i when it is due. */
  dispatch: (i: number) => void;
}

/**
 * Drives `run` at `rate` for `secs`, collecting latencies (ms from due time) that the protocol
 * side reports with `done(i, ok)`. Resolves with the summary.
 */
class OpenLoop {
  /** Requests sent first and not counted: the generator's own JIT warm-up and the connections' first use. */
  readonly warmup: number;
  readonly count: number;
  readonly start: number;
  readonly interval: number;
  readonly latency: Float64Array;
  completed = 0;
  errors = 0;
  lastCompletion = 0;
  #lateness: Float64Array;
  #ticks = 0;
  #settled = 0;
  #finish: (() => void) | undefined;

  constructor(readonly rate: number, readonly secs: number) {
    this.warmup = Math.min(Math.ceil(rate / 4), 1000);
    this.count = this.warmup + Math.max(1, Math.floor(rate * secs));
    this.interval = 1000 / rate;
    this.start = wallNow() + 50;
    this.latency = new Float64Array(this.count).fill(Infinity);
    this.#lateness = new Float64Array(this.count);
  }

  due(i: number): number {
    return this.start + i * this.interval;
  }

  done(i: number, ok: boolean): void {
    const now = wallNow();
    if (i < this.warmup) {
      // not measured
    } else if (ok) {
      this.latency[i] = now - this.due(i);
      this.completed++;
      this.lastCompletion = now;
    } else this.errors++;
    if (++this.#settled === this.count) this.#finish?.();
  }

  async run(r: Run): Promise<Record<string, number>> {
    const worker = new Worker(new URL("./ticker.ts", import.meta.url).href, { type: "module" });
    let sent = 0;
    const all = new Promise<void>((resolve) => this.#finish = resolve);
    worker.onmessage = (e: MessageEvent<number>) => {
      const now = wallNow();
      for (; sent < e.data; sent++) {
        this.#lateness[this.#ticks++] = now - this.due(sent);
        r.dispatch(sent);
      }
    };
    worker.postMessage({ start: this.start, rate: this.rate, count: this.count });
    const drainMs = (this.warmup / this.rate + this.secs + Math.max(2, this.secs)) * 1000 + 100;
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([all, new Promise<void>((resolve) => timer = setTimeout(resolve, drainMs))]);
    clearTimeout(timer);
    worker.terminate();
    return this.summary();
  }

  summary(): Record<string, number> {
    const lat = this.latency.slice(this.warmup).sort();
    const late = this.#lateness.slice(Math.min(this.warmup, this.#ticks), this.#ticks).sort();
    const q = (a: Float64Array, p: number) =>
      a.length === 0 ? NaN : a[Math.min(a.length - 1, Math.ceil(p * a.length) - 1)];
    const r3 = (x: number) => Number.isFinite(x) ? Number(x.toFixed(3)) : -1;
    const measuredStart = this.due(this.warmup);
    const elapsed = Math.max(this.lastCompletion - measuredStart, this.secs * 1000) / 1000;
    return {
      offered_rps: this.rate,
      warmup: this.warmup,
      achieved_rps: Math.round(this.completed / elapsed),
      requests: this.count - this.warmup,
      completed: this.completed,
      errors: this.errors,
      incomplete: this.count - this.warmup - this.completed - this.errors,
      p50_ms: r3(q(lat, 0.5)),
      p90_ms: r3(q(lat, 0.9)),
      p99_ms: r3(q(lat, 0.99)),
      p999_ms: r3(q(lat, 0.999)),
      max_ms: r3(lat[lat.length - 1]),
      lateness_p50_ms: r3(q(late, 0.5)),
      lateness_p99_ms: r3(q(late, 0.99)),
    };
  }
}

const CRLFCRLF = Buffer.from("\r\n\r\n");
const CRLF = Buffer.from("\r\n");

/**
 * One kept-alive HTTP/1.1 client connection: writes a GET and parses the response framing
 * (Content-Length or chunked) just enough to know where it ends.
 */
class H1Conn {
  readonly sock: net.Socket;
  current = -1;
  #buf: Buffer | undefined;
  #status = 0;
  #remaining = -1; // body bytes left with Content-Length; -1 while in the head
  #chunked = false;
  #chunkLeft = -1; // chunked: bytes left in this chunk (+2 for its CRLF); -1 reading a size line
  #trailers = false;
  #close = false;

  constructor(
    a: { host: string; port: number },
    readonly req: Uint8Array,
    readonly onDone: (c: H1Conn, i: number, ok: boolean) => void,
    readonly onClose: (c: H1Conn) => void,
    onConnect: (c: H1Conn) => void,
  ) {
    this.sock = net.connect({ ...a, noDelay: true });
    this.sock.once("connect", () => onConnect(this));
    this.sock.on("data", (d: Buffer) => this.#onData(d));
    this.sock.on("error", () => {});
    this.sock.once("close", () => {
      const i = this.current;
      this.current = -1;
      if (i >= 0) this.onDone(this, i, false);
      this.onClose(this);
    });
  }

  send(i: number): void {
    this.current = i;
    this.#status = 0;
    this.#remaining = -1;
    this.#chunked = false;
    this.#chunkLeft = -1;
    this.#trailers = false;
    this.#close = false;
    this.sock.write(this.req);
  }

  #onData(d: Buffer): void {
    let b = this.#buf ? Buffer.concat([this.#buf, d]) : d;
    this.#buf = undefined;
    while (b.length > 0 && this.current >= 0) {
      const rest = this.#consume(b);
      if (rest === undefined) {
        this.#buf = b;
        return;
      }
      b = rest;
    }
  }

  /** Consumes what it can; undefined when more bytes are needed. */
  #consume(b: Buffer): Buffer | undefined {
    if (this.#remaining === -1 && !this.#chunked) {
      const end = b.indexOf(CRLFCRLF);
      if (end < 0) return undefined;
      const head = b.toString("latin1", 0, end).toLowerCase();
      this.#status = Number(head.slice(9, 12));
      const cl = /\r\ncontent-length:\s*(\d+)/.exec(head);
      this.#chunked = /\r\ntransfer-encoding:[^\r]*chunked/.test(head);
      this.#close = /\r\nconnection:\s*close/.test(head);
      this.#remaining = this.#chunked ? 0 : cl ? Number(cl[1]) : 0;
      b = b.subarray(end + 4);
      if (!this.#chunked && this.#remaining === 0) return this.#complete(b);
    }
    if (!this.#chunked) {
      const take = Math.min(this.#remaining, b.length);
      this.#remaining -= take;
      b = b.subarray(take);
      return this.#remaining === 0 ? this.#complete(b) : b;
    }
    if (this.#trailers) {
      const end = b.indexOf(CRLF);
      if (end < 0) return undefined;
      if (end === 0) return this.#complete(b.subarray(2));
      return b.subarray(end + 2);
    }
    if (this.#chunkLeft === -1) {
      const end = b.indexOf(CRLF);
      if (end < 0) return undefined;
      const size = parseInt(b.toString("latin1", 0, end), 16);
      b = b.subarray(end + 2);
      if (size === 0) {
        this.#trailers = true;
        return b;
      }
      this.#chunkLeft = size + 2;
    }
    const take = Math.min(this.#chunkLeft, b.length);
    this.#chunkLeft -= take;
    if (this.#chunkLeft === 0) this.#chunkLeft = -1;
    return b.subarray(take);
  }

  #complete(rest: Buffer): Buffer {
    const i = this.current;
    this.current = -1;
    // A closing connection must not be handed the next request.
    if (this.#close) this.sock.destroy();
    this.onDone(this, i, this.#status === 200);
    return rest;
  }
}

async function h1Load(target: string, rate: number, secs: number, conns: number): Promise<void> {
  const a = addr(target);
  const req = new TextEncoder().encode(`GET /bench HTTP/1.1\r\nhost: ${target}\r\naccept: */*\r\n\r\n`);
  const loop = new OpenLoop(rate, secs);
  const idle: H1Conn[] = [];
  const waiting: number[] = [];
  let wHead = 0;
  let reconnects = 0;
  let live = 0;
  const next = (c: H1Conn) => {
    if (wHead < waiting.length) c.send(waiting[wHead++]);
    else idle.push(c);
  };
  const onDone = (c: H1Conn, i: number, ok: boolean) => {
    loop.done(i, ok);
    if (!c.sock.destroyed && c.current === -1) next(c);
  };
  const open = (): Promise<H1Conn> =>
    new Promise((resolve) => {
      new H1Conn(a, req, onDone, onClose, (c) => {
        live++;
        resolve(c);
      });
    });
  const onClose = (c: H1Conn) => {
    const k = idle.indexOf(c);
    if (k >= 0) idle.splice(k, 1);
    live--;
    // The server may end keep-alive connections (nginx after keepalive_requests); replace them,
    // boundedly, while the run lasts.
    if (!stopped && reconnects++ < 1000) open().then(next);
  };
  let stopped = false;
  const first = await Promise.all(Array.from({ length: conns }, open));
  idle.push(...first);
  const summary = await loop.run({
    dispatch: (i) => {
      const c = idle.shift();
      if (c) c.send(i);
      else waiting.push(i);
    },
  });
  stopped = true;
  void live;
  console.log(JSON.stringify({ ...summary, connections: conns, reconnects: Math.min(reconnects, 1000) }));
  Deno.exit(0);
}

async function grpcLoad(target: string, rate: number, secs: number, conns: number): Promise<void> {
  const a = addr(target);
  const loop = new OpenLoop(rate, secs);
  const body = grpcMessage(64);
  const block = encodeHeaders([
    [":method", "POST"],
    [":scheme", "http"],
    [":path", GRPC_PATH],
    [":authority", target],
    ["content-type", "application/grpc"],
    ["te", "trailers"],
  ]);
  const MAX_IN_FLIGHT = 100;
  const sessions = await Promise.all(
    Array.from({ length: conns }, () => H2Connection.connect(a.host, a.port)),
  );
  const waiting: number[] = [];
  let wHead = 0;
  let rr = 0;
  let reconnects = 0;
  let stopped = false;
  const call = (k: number, i: number) => {
    const ok = sessions[k].request(block, body, (ok, _status, grpcStatus) => {
      loop.done(i, ok && grpcStatus === "0");
      if (wHead < waiting.length && !sessions[k].closed) call(k, waiting[wHead++]);
    });
    if (!ok) {
      loop.done(i, false);
      // The peer said GOAWAY or closed: replace the connection, boundedly, while the run lasts.
      if (!stopped && reconnects++ < 100) {
        H2Connection.connect(a.host, a.port).then((c) => sessions[k] = c, () => {});
      }
    }
  };
  const summary = await loop.run({
    dispatch: (i) => {
      for (let n = 0; n < conns; n++) {
        const k = (rr + n) % conns;
        const s = sessions[k];
        if (s.closed || s.inFlight < Math.min(MAX_IN_FLIGHT, s.maxConcurrent)) {
          rr = k + 1;
          call(k, i);
          return;
        }
      }
      waiting.push(i);
    },
  });
  stopped = true;
  console.log(JSON.stringify({ ...summary, connections: conns, reconnects }));
  for (const s of sessions) s.close();
  Deno.exit(0);
}

switch (mode) {
  case "h1-server": {
    const body = "x".repeat(RESPONSE_BYTES);
    const headers = { "content-type": "application/octet-stream" };
    Deno.serve(
      { port: Number(args[0]), hostname: "0.0.0.0", onListen: () => console.log("listening") },
      () => new Response(body, { headers }),
    );
    break;
  }
  case "wait": {
    // Until something accepts connections at <ip:port> (bounded: 20 s).
    const a = addr(args[0]);
    const end = Date.now() + 20_000;
    for (;;) {
      const ok = await new Promise<boolean>((resolve) => {
        const s = net.connect(a, () => {
          s.destroy();
          resolve(true);
        });
        s.on("error", () => resolve(false));
      });
      if (ok) break;
      if (Date.now() > end) {
        console.error(`nothing listens at ${args[0]}`);
        Deno.exit(1);
      }
      await new Promise((r) => setTimeout(r, 50));
    }
    console.log("ready");
    break;
  }
  case "h1":
    await h1Load(args[0], Number(args[1]), Number(args[2]), Number(args[3] ?? "16"));
    break;
  case "grpc":
    await grpcLoad(args[0], Number(args[1]), Number(args[2]), Number(args[3] ?? "4"));
    break;
  default:
    console.error(`unknown mode ${mode}; see the header of ${new URL(import.meta.url).pathname}`);
    Deno.exit(2);
}
