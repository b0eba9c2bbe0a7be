/**
 * New-connection client for conn_probe.ts, run inside a pod's namespace:
 *
 *   conn_client.ts <tcp|h1> <ip:port> <count> <concurrency> <max-secs> [rate]
 *
 * Opens `count` new connections, `concurrency` at a time (or, with `rate`, one at a time paced at
 * `rate`/s), each sending one request and reading its whole answer before closing: `tcp` writes
 * 16 bytes to an echo server and waits for them back, `h1` sends an HTTP/1.1 GET with
 * `connection: close` and reads the response (head and `content-length` body). Bounded by count
 * and by `max-secs`. Prints one JSON line: connections/s over the run, first-byte p50/p99 (ms
 * from connect() to the answer's first byte), errors.
 */
import * as net from "node:net";

const [kind, target, countArg, concArg, secsArg, rateArg] = Deno.args;
if ((kind !== "tcp" && kind !== "h1") || !target) {
  console.error("usage: conn_client.ts <tcp|h1> <ip:port> <count> <concurrency> <max-secs> [rate]");
  Deno.exit(2);
}
const i = target.lastIndexOf(":");
const host = target.slice(0, i), port = Number(target.slice(i + 1));
const count = Number(countArg), conc = Number(concArg), maxSecs = Number(secsArg);
const rate = rateArg ? Number(rateArg) : 0;
// Zeros, as the bench sends: bytes no HTTP method starts with, so detection decides at once.
const TCP_REQ = new Uint8Array(16);
const H1_REQ = new TextEncoder().encode(`GET / HTTP/1.1\r\nhost: ${target}\r\nconnection: close\r\n\r\n`);
const CRLF2 = new TextEncoder().encode("\r\n\r\n");

function indexOf(hay: Uint8Array, needle: Uint8Array): number {
  outer: for (let p = 0; p + needle.length <= hay.length; p++) {
    for (let q = 0; q < needle.length; q++) if (hay[p + q] !== needle[q]) continue outer;
    return p;
  }
  return -1;
}

/** Whether `got` holds a whole answer. */
function complete(got: Uint8Array): boolean {
  if (kind === "tcp") return got.length >= TCP_REQ.length;
  const end = indexOf(got, CRLF2);
  if (end < 0) return false;
  const head = new TextDecoder().decode(got.subarray(0, end));
  const m = /\r\ncontent-length:\s*(\d+)/i.exec(head);
  if (!m) throw new Error(`response without content-length: ${head.split("\r\n")[0]}`);
  return got.length >= end + 4 + Number(m[1]);
}

/** One connection: resolves with ms from connect() to the first byte of the answer. */
function once(): Promise<number> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    let first = 0;
    let got = new Uint8Array(0);
    const s = net.connect({ host, port, noDelay: true });
    const timer = setTimeout(() => fail(new Error("timed out")), 5000);
    const fail = (e: Error) => {
      clearTimeout(timer);
      s.destroy();
      reject(e);
    };
    s.once("connect", () => s.write(kind === "tcp" ? TCP_REQ : H1_REQ));
    s.on("data", (d: Uint8Array) => {
      if (first === 0) first = performance.now() - t0;
      const next = new Uint8Array(got.length + d.length);
      next.set(got);
      next.set(d, got.length);
      got = next;
      try {
        if (!complete(got)) return;
      } catch (e) {
        fail(e as Error);
        return;
      }
      clearTimeout(timer);
      s.destroy();
      resolve(first);
    });
    s.once("error", fail);
    s.once("close", () => fail(new Error(`closed after ${got.length} bytes`)));
  });
}

const samples: number[] = [];
let errors = 0;
let firstError: string | undefined;
const start = performance.now();
const deadline = start + maxSecs * 1000;
let next = 0;
const take = () => next < count && performance.now() < deadline ? next++ : -1;
const one = async () => {
  try {
    samples.push(await once());
  } catch (e) {
    errors++;
    firstError ??= (e as Error).message;
  }
};
if (rate > 0) {
  for (let n = take(); n >= 0; n = take()) {
    const wait = start + (n * 1000) / rate - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    await one();
  }
} else {
  await Promise.all(Array.from({ length: conc }, async () => {
    while (take() >= 0) await one();
  }));
}
const secs = (performance.now() - start) / 1000;
samples.sort((a, b) => a - b);
const pct = (p: number) =>
  samples.length ? samples[Math.min(samples.length - 1, Math.floor(p * samples.length))] : NaN;
console.log(JSON.stringify({
  connections: samples.length,
  errors,
  firstError,
  secs: Number(secs.toFixed(3)),
  cps: Number((samples.length / secs).toFixed(1)),
  p50_ms: Number(pct(0.5).toFixed(3)),
  p99_ms: Number(pct(0.99).toFixed(3)),
}));
