/**
 * Load programs for `deno task bench:dataplane`, run inside the benchmark's namespaces:
 *
 *   server <port>                               echo server (bytes in → same bytes out)
 *   rr <ip:port> <conns> <secs> <size>          request/response on kept-alive connections → rps
 *   connect <ip:port> <conc> <secs>             new connection per request → connections/s
 *   stream <ip:port> <secs>                     one connection, bulk upload echoed back → MB/s
 *   latency <ip:port> <rate> <conns> <secs>     fixed request rate, kept-alive → p50/p99 ms
 *   first-byte <ip:port> <rate> <secs>          a new connection per request at a fixed rate →
 *                                               p50/p99 ms from connect() to the first byte back
 *
 * Each client prints one JSON line. Loops are bounded by the given seconds.
 */
import * as net from "node:net";

const [mode, ...args] = Deno.args;

function addr(s: string): { host: string; port: number } {
  const i = s.lastIndexOf(":");
  return { host: s.slice(0, i), port: Number(s.slice(i + 1)) };
}

function open(a: { host: string; port: number }): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const s = net.connect({ ...a, noDelay: true });
    s.once("connect", () => resolve(s));
    s.once("error", reject);
  });
}

/** Sends `req` and resolves when `req.length` bytes came back. */
function exchange(s: net.Socket, req: Uint8Array): Promise<void> {
  return new Promise((resolve, reject) => {
    let got = 0;
    const onData = (d: Uint8Array) => {
      got += d.length;
      if (got >= req.length) {
        s.off("data", onData);
        s.off("error", reject);
        resolve();
      }
    };
    s.on("data", onData);
    s.once("error", reject);
    s.write(req);
  });
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))];
}

switch (mode) {
  case "server": {
    net.createServer({ noDelay: true }, (s) => {
      s.on("error", () => {});
      s.on("data", (d) => s.write(d));
      s.on("end", () => s.end());
    }).listen(Number(args[0]), "0.0.0.0", () => console.log("listening"));
    break;
  }
  case "rr": {
    const a = addr(args[0]), conns = Number(args[1]), secs = Number(args[2]);
    const req = new Uint8Array(Number(args[3]));
    const end = performance.now() + secs * 1000;
    let n = 0, errors = 0;
    await Promise.all(Array.from({ length: conns }, async () => {
      const s = await open(a);
      while (performance.now() < end) {
        try {
          await exchange(s, req);
          n++;
        } catch {
          errors++;
          break;
        }
      }
      s.destroy();
    }));
    console.log(JSON.stringify({ rps: n / secs, requests: n, errors }));
    break;
  }
  case "connect": {
    const a = addr(args[0]), conc = Number(args[1]), secs = Number(args[2]);
    const req = new Uint8Array(16);
    const end = performance.now() + secs * 1000;
    let n = 0, errors = 0;
    await Promise.all(Array.from({ length: conc }, async () => {
      while (performance.now() < end) {
        try {
          const s = await open(a);
          await exchange(s, req);
          s.destroy();
          n++;
        } catch {
          errors++;
          await new Promise((r) => setTimeout(r, 10));
        }
      }
    }));
    console.log(JSON.stringify({ cps: n / secs, connections: n, errors }));
    break;
  }
  case "stream": {
    const a = addr(args[0]), secs = Number(args[1]);
    const s = await open(a);
    const chunk = new Uint8Array(64 * 1024);
    let received = 0;
    s.on("data", (d: Uint8Array) => received += d.length);
    const start = performance.now();
    const end = start + secs * 1000;
    while (performance.now() < end) {
      if (!s.write(chunk)) await new Promise((r) => s.once("drain", r));
    }
    const elapsed = (performance.now() - start) / 1000;
    s.destroy();
    console.log(JSON.stringify({ mb_per_s: received / elapsed / 1e6 }));
    break;
  }
  case "latency": {
    const a = addr(args[0]), rate = Number(args[1]), conns = Number(args[2]), secs = Number(args[3]);
    const req = new Uint8Array(64);
    const socks = await Promise.all(Array.from({ length: conns }, () => open(a)));
    const busy = socks.map(() => false);
    const samples: number[] = [];
    let skipped = 0;
    const total = Math.floor(rate * secs);
    const start = performance.now();
    const pending: Promise<void>[] = [];
    for (let i = 0; i < total; i++) {
      const due = start + (i * 1000) / rate;
      const wait = due - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      const k = busy.findIndex((b) => !b);
      if (k < 0) {
        skipped++;
        continue;
      }
      busy[k] = true;
      const t0 = performance.now();
      pending.push(
        exchange(socks[k], req).then(() => {
          samples.push(performance.now() - t0);
          busy[k] = false;
        }),
      );
    }
    await Promise.all(pending);
    for (const s of socks) s.destroy();
    samples.sort((x, y) => x - y);
    console.log(
      JSON.stringify({
        p50_ms: percentile(samples, 0.5),
        p99_ms: percentile(samples, 0.99),
        samples: samples.length,
        skipped,
      }),
    );
    break;
  }
  case "first-byte": {
    // One at a time (sequential, paced): what one new connection costs when the proxies are not busy.
    const a = addr(args[0]), rate = Number(args[1]), secs = Number(args[2]);
    const req = new Uint8Array(16);
    const total = Math.max(1, Math.floor(rate * secs));
    const samples: number[] = [];
    let errors = 0;
    const start = performance.now();
    for (let i = 0; i < total; i++) {
      const wait = start + (i * 1000) / rate - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      const t0 = performance.now();
      try {
        const s = await open(a);
        const first = new Promise<void>((resolve, reject) => {
          s.once("data", () => resolve());
          s.once("error", reject);
          s.once("close", () => reject(new Error("closed before the first byte")));
        });
        s.write(req);
        await first;
        samples.push(performance.now() - t0);
        s.destroy();
      } catch {
        errors++;
      }
    }
    samples.sort((x, y) => x - y);
    console.log(
      JSON.stringify({
        p50_ms: percentile(samples, 0.5),
        p99_ms: percentile(samples, 0.99),
        samples: samples.length,
        errors,
      }),
    );
    break;
  }
  default:
    console.error(`unknown mode ${mode}`);
    Deno.exit(2);
}
