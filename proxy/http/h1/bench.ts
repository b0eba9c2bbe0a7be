/**
 * Micro-benchmark of the HTTP/1 codec on loopback (not a test): a raw node:net backend that answers
 * every request head with a fixed small response, then the same load direct, through a plain TCP
 * forwarder (the byte-path baseline, transport/forward.ts), through one HTTP hop
 * (serveHttp1 → Http1Pool → backend) and through two, each hop its own process.
 *
 *   deno run -A proxy/http/h1/bench.ts [--conns 16] [--secs 3] [--rate 1000] [--rate-secs 5]
 *
 * Closed loop: `conns` kept-alive connections, each sending its next request when the previous
 * response has arrived → max req/s, p50/p99, and each hop's CPU per request (from /proc). Open
 * loop: `rate` requests/s spread over the connections → p50/p99/p99.9 latency at that rate.
 * Every phase is bounded by its seconds and by a request cap. The last line is one JSON object.
 */
import * as net from "node:net";
import { Http1Pool } from "./pool.ts";
import { serveHttp1 } from "./server.ts";
import { connectTcp } from "../../transport/connect.ts";
import { forward } from "../../transport/forward.ts";
import { listenTcp } from "../../transport/listen.ts";

const RESPONSE = new TextEncoder().encode(
  "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: 13\r\n\r\nhello, world\n",
);
const REQUEST = new TextEncoder().encode(
  "GET /api/items?id=42 HTTP/1.1\r\nHost: backend.ns.svc.cluster.local:8080\r\nuser-agent: bench/1\r\n" +
    "accept: */*\r\nx-request-id: 0123456789abcdef\r\n\r\n",
);
const MAX_REQUESTS_PER_PHASE = 2_000_000;

function arg(name: string, dflt: number): number {
  const i = Deno.args.indexOf(`--${name}`);
  return i >= 0 ? Number(Deno.args[i + 1]) : dflt;
}

/** Counts request heads (CRLFCRLF) across chunks and answers each; requests carry no body. */
function backend(port: number): void {
  net.createServer({ noDelay: true }, (s) => {
    let state = 0; // matched bytes of \r\n\r\n
    s.on("error", () => {});
    s.on("data", (d: Uint8Array) => {
      let n = 0;
      for (let i = 0; i < d.length; i++) {
        const b = d[i];
        if (b === (state & 1 ? 10 : 13)) {
          if (++state === 4) {
            n++;
            state = 0;
          }
        } else state = b === 13 ? 1 : 0;
      }
      if (n === 1) s.write(RESPONSE);
      else if (n > 1) {
        const out = new Uint8Array(RESPONSE.length * n);
        for (let k = 0; k < n; k++) out.set(RESPONSE, k * RESPONSE.length);
        s.write(out);
      }
    });
  }).listen(port, "127.0.0.1", () => console.log("ready"));
}

async function proxy(port: number, upstreamPort: number): Promise<void> {
  const pool = new Http1Pool({ connect: () => connectTcp("127.0.0.1", upstreamPort, 1000), maxIdle: 256 });
  await listenTcp({ ip: "127.0.0.1", port }, (sock) => {
    serveHttp1(sock, pool.service);
  });
  console.log("ready");
}

/** The byte-path baseline: a TCP forwarder, one upstream connection per client connection. */
async function pipe(port: number, upstreamPort: number): Promise<void> {
  await listenTcp({ ip: "127.0.0.1", port }, async (sock) => {
    sock.on("error", () => {});
    sock.pause();
    try {
      forward(sock, await connectTcp("127.0.0.1", upstreamPort, 1000));
      sock.resume();
    } catch {
      sock.destroy();
    }
  });
  console.log("ready");
}

/** One kept-alive load connection: counts responses by Content-Length framing, no promises. */
class LoadConn {
  sock: net.Socket;
  #buf: Uint8Array | undefined;
  sentAt = 0;
  busy = false;
  onResponse: (c: LoadConn) => void = () => {};
  constructor(sock: net.Socket) {
    this.sock = sock;
    sock.on("data", (d: Uint8Array) => this.#onData(d));
    sock.on("error", () => {});
  }
  send(): void {
    this.busy = true;
    this.sentAt = performance.now();
    this.sock.write(REQUEST);
  }
  #onData(d: Uint8Array): void {
    let b = d;
    if (this.#buf !== undefined) {
      const j = new Uint8Array(this.#buf.length + d.length);
      j.set(this.#buf);
      j.set(d, this.#buf.length);
      b = j;
      this.#buf = undefined;
    }
    for (;;) {
      const end = responseEnd(b);
      if (end < 0) {
        if (b.length > 0) this.#buf = b.slice();
        return;
      }
      b = b.subarray(end);
      this.busy = false;
      this.onResponse(this);
    }
  }
}

const dec = new TextDecoder();
/** Offset after one complete response in `b`, or -1. */
function responseEnd(b: Uint8Array): number {
  let i = -1;
  for (let k = b.indexOf(13); k >= 0 && k + 3 < b.length; k = b.indexOf(13, k + 1)) {
    if (b[k + 1] === 10 && b[k + 2] === 13 && b[k + 3] === 10) {
      i = k + 4;
      break;
    }
  }
  if (i < 0) return -1;
  const m = /content-length: *(\d+)/i.exec(dec.decode(b.subarray(0, i)));
  const len = m ? Number(m[1]) : 0;
  return b.length >= i + len ? i + len : -1;
}

function open(port: number, n: number): Promise<LoadConn[]> {
  return Promise.all(Array.from({ length: n }, () =>
    new Promise<LoadConn>((resolve, reject) => {
      const s = net.connect({ host: "127.0.0.1", port, noDelay: true });
      s.once("connect", () => resolve(new LoadConn(s)));
      s.once("error", reject);
    })));
}

function pct(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))];
}

const round = (x: number, d = 3) => Math.round(x * 10 ** d) / 10 ** d;

interface Result {
  rps: number;
  requests: number;
  p50_ms: number;
  p99_ms: number;
  p999_ms: number;
}

function summarize(samples: number[], secs: number): Result {
  const s = Float64Array.from(samples).sort();
  return {
    rps: Math.round(samples.length / secs),
    requests: samples.length,
    p50_ms: round(pct(s, 0.5)),
    p99_ms: round(pct(s, 0.99)),
    p999_ms: round(pct(s, 0.999)),
  };
}

/** Closed loop for `secs` (after a short warm-up). */
async function closedLoop(port: number, conns: number, secs: number): Promise<Result> {
  const cs = await open(port, conns);
  const samples: number[] = [];
  let recording = false;
  let stop = false;
  let done!: () => void;
  const finished = new Promise<void>((r) => done = r);
  let inflight = 0;
  for (const c of cs) {
    c.onResponse = (x) => {
      if (recording) samples.push(performance.now() - x.sentAt);
      if (!stop && samples.length < MAX_REQUESTS_PER_PHASE) x.send();
      else if (--inflight === 0) done();
    };
    inflight++;
    c.send();
  }
  await new Promise((r) => setTimeout(r, 300)); // warm-up: connections, pools, JIT
  recording = true;
  const t0 = performance.now();
  await new Promise((r) => setTimeout(r, secs * 1000));
  stop = true;
  const elapsed = (performance.now() - t0) / 1000;
  recording = false;
  await finished;
  for (const c of cs) c.sock.destroy();
  return summarize(samples, elapsed);
}

/** Open loop: `rate` requests/s for `secs`, latency from the actual send. */
async function openLoop(
  port: number,
  conns: number,
  rate: number,
  secs: number,
): Promise<Result & { queued: number }> {
  const cs = await open(port, conns);
  const free: LoadConn[] = [...cs];
  const samples: number[] = [];
  let queued = 0;
  let backlog = 0;
  for (const c of cs) {
    c.onResponse = (x) => {
      samples.push(performance.now() - x.sentAt);
      if (backlog > 0) {
        backlog--;
        x.send();
      } else free.push(x);
    };
  }
  // Warm-up at the same rate, not recorded.
  const total = Math.min(Math.floor(rate * secs), MAX_REQUESTS_PER_PHASE);
  const warm = Math.floor(rate * 0.5);
  const start = performance.now();
  let sent = 0;
  await new Promise<void>((resolve) => {
    const tick = () => {
      const due = Math.floor(((performance.now() - start) * rate) / 1000);
      while (sent < Math.min(due, total + warm)) {
        sent++;
        if (sent === warm) samples.length = 0;
        const c = free.pop();
        if (c !== undefined) c.send();
        else {
          backlog++;
          queued++;
        }
      }
      if (sent >= total + warm) resolve();
      else setTimeout(tick, 0);
    };
    tick();
  });
  const deadline = performance.now() + 5000;
  while ((free.length < cs.length || backlog > 0) && performance.now() < deadline) {
    await new Promise((r) => setTimeout(r, 5));
  }
  for (const c of cs) c.sock.destroy();
  return { ...summarize(samples, secs), queued };
}

function cpuSeconds(pid: number): number {
  const f = Deno.readTextFileSync(`/proc/${pid}/stat`);
  const fields = f.slice(f.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) / 100; // utime + stime, in clock ticks (100/s)
}

function freePort(): number {
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const p = (l.addr as Deno.NetAddr).port;
  l.close();
  return p;
}

async function spawn(args: string[]): Promise<Deno.ChildProcess> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", new URL(import.meta.url).pathname, ...args],
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const reader = child.stdout.getReader();
  const { value } = await reader.read();
  if (!value || !new TextDecoder().decode(value).includes("ready")) {
    throw new Error(`${args[0]} did not start`);
  }
  reader.releaseLock();
  child.stdout.cancel();
  return child;
}

async function main(): Promise<void> {
  const conns = arg("conns", 16),
    secs = arg("secs", 3),
    rate = arg("rate", 1000),
    rateSecs = arg("rate-secs", 5);
  const bport = freePort(), p1 = freePort(), p2 = freePort(), pp = freePort();
  const children: Deno.ChildProcess[] = [];
  try {
    children.push(await spawn(["backend", String(bport)]));
    const hop1 = await spawn(["proxy", String(p1), String(bport)]);
    children.push(hop1);
    children.push(await spawn(["proxy", String(p2), String(p1)]));
    const tcp = await spawn(["pipe", String(pp), String(bport)]);
    children.push(tcp);

    const direct = await closedLoop(bport, conns, secs);
    console.log("closed loop direct  ", JSON.stringify(direct));
    const pcpu0 = cpuSeconds(tcp.pid);
    const piped = await closedLoop(pp, conns, secs);
    const pcpu = cpuSeconds(tcp.pid) - pcpu0;
    console.log("closed loop tcp pipe", JSON.stringify(piped), `pipe cpu ${pcpu.toFixed(2)} s`);
    const cpu0 = cpuSeconds(hop1.pid);
    const one = await closedLoop(p1, conns, secs);
    const cpu = cpuSeconds(hop1.pid) - cpu0;
    console.log("closed loop 1 hop   ", JSON.stringify(one), `proxy cpu ${cpu.toFixed(2)} s`);
    const two = await closedLoop(p2, conns, secs);
    console.log("closed loop 2 hops  ", JSON.stringify(two));

    const d1k = await openLoop(bport, conns, rate, rateSecs);
    console.log(`${rate} req/s direct    `, JSON.stringify(d1k));
    const h1k = await openLoop(p1, conns, rate, rateSecs);
    console.log(`${rate} req/s 1 hop     `, JSON.stringify(h1k));
    const t1k = await openLoop(p2, conns, rate, rateSecs);
    console.log(`${rate} req/s 2 hops    `, JSON.stringify(t1k));

    // CPU per request includes the warm-up requests of the phase (not in `requests`).
    const perCore = (r: Result, cpuS: number) =>
      cpuS > 0 ? Math.round((r.requests * (1 + 0.3 / secs)) / cpuS) : NaN;
    const hopPerCore = perCore(one, cpu), pipePerCore = perCore(piped, pcpu);
    console.log(JSON.stringify({
      conns,
      secs,
      direct_rps: direct.rps,
      hop1_rps: one.rps,
      hop2_rps: two.rps,
      pipe_rps: piped.rps,
      hop1_vs_direct: round(one.rps / direct.rps),
      proxy_rps_per_core: hopPerCore,
      pipe_rps_per_core: pipePerCore,
      hop1_cpu_per_request_vs_pipe: round(pipePerCore / hopPerCore),
      direct_p50_ms: direct.p50_ms,
      direct_p99_ms: direct.p99_ms,
      hop1_p50_ms: one.p50_ms,
      hop1_p99_ms: one.p99_ms,
      hop2_p99_ms: two.p99_ms,
      rate,
      [`direct_p99_ms_at_${rate}rps`]: d1k.p99_ms,
      [`hop1_p99_ms_at_${rate}rps`]: h1k.p99_ms,
      [`hop2_p99_ms_at_${rate}rps`]: t1k.p99_ms,
      [`hop1_added_p99_ms_at_${rate}rps`]: round(h1k.p99_ms - d1k.p99_ms),
      [`hop2_added_p99_ms_at_${rate}rps`]: round(t1k.p99_ms - d1k.p99_ms),
      [`hop2_added_p50_ms_at_${rate}rps`]: round(t1k.p50_ms - d1k.p50_ms),
    }));
  } finally {
    for (const c of children) {
      try {
        c.kill("SIGTERM");
      } catch { /* already gone */ }
      await c.status;
    }
  }
}

const mode = Deno.args[0];
if (mode === "backend") backend(Number(Deno.args[1]));
else if (mode === "proxy") await proxy(Number(Deno.args[1]), Number(Deno.args[2]));
else if (mode === "pipe") await pipe(Number(Deno.args[1]), Number(Deno.args[2]));
else await main();
