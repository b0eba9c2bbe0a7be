/**
 * Micro-benchmark (not a test): gRPC-like unary requests (POST, application/grpc, a 5-byte-framed
 * 64-byte message, trailers with grpc-status) from a node:http2 client, direct to a node:http2
 * backend and through one hop of serveHttp2 → Http2Connection, in the same run. Backend and
 * proxy run in their own processes so each side has its own event loop, as in a pod.
 *
 *   npx --yes deno@2.9.6 run -A proxy/http/h2/bench.ts [--seconds=4] [--max-requests=200000]
 *
 * Closed loop at fixed concurrency levels; prints req/s and p50/p99 latency per case, then one
 * JSON object as the last line. All traffic is on 127.0.0.1; every phase is bounded in time and
 * request count.
 */
import * as http2 from "node:http2";
import * as net from "node:net";
import { startHop } from "./testing.ts";

const args = new Map(
  Deno.args.filter((a) => a.startsWith("--")).map((a) => {
    const [k, v] = a.slice(2).split("=");
    return [k, v ?? "true"] as [string, string];
  }),
);
const role = args.get("role");

const MESSAGE = (() => {
  const m = new Uint8Array(5 + 64);
  new DataView(m.buffer).setUint32(1, 64);
  m.fill(0x61, 5);
  return m;
})();

async function runBackend(): Promise<void> {
  const server = http2.createServer({ settings: { maxConcurrentStreams: 1000 } });
  server.on("stream", (stream: http2.ServerHttp2Stream) => {
    stream.on("error", () => {});
    stream.on("data", () => {});
    stream.on("end", () => {
      if (stream.destroyed) return;
      stream.respond({ ":status": 200, "content-type": "application/grpc" }, { waitForTrailers: true });
      stream.once("wantTrailers", () => stream.sendTrailers({ "grpc-status": "0" }));
      stream.end(MESSAGE);
    });
  });
  server.on("sessionError", () => {});
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  console.log(JSON.stringify({ port: (server.address() as net.AddressInfo).port }));
  await new Promise(() => {}); // until killed
}

async function runProxy(backendPort: number): Promise<void> {
  const hop = await startHop(backendPort, { maxConcurrentStreams: 1000 });
  console.log(JSON.stringify({ port: hop.port }));
  await new Promise(() => {});
}

interface Child {
  port: number;
  proc: Deno.ChildProcess;
}

/** `--prof=dir`: V8 tick logs of the proxy child, for `node --prof-process`. */
const PROF_DIR = args.get("prof");

async function spawn(extra: string[]): Promise<Child> {
  const proc = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      ...(PROF_DIR && extra[0] === "--role=proxy"
        ? [`--v8-flags=--prof,--no-logfile-per-isolate,--logfile=${PROF_DIR}/h2-hop-${Date.now()}.v8.log`]
        : []),
      new URL(import.meta.url).pathname,
      ...extra,
    ],
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const reader = proc.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let buf = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`child ${extra.join(" ")} exited before reporting its port`);
    buf += value;
    const nl = buf.indexOf("\n");
    if (nl >= 0) {
      reader.releaseLock();
      proc.stdout.cancel().catch(() => {});
      return { port: JSON.parse(buf.slice(0, nl)).port, proc };
    }
  }
}

function unary(session: http2.ClientHttp2Session): Promise<void> {
  return new Promise((resolve, reject) => {
    const req = session.request({
      ":method": "POST",
      ":path": "/bench.Echo/Unary",
      "content-type": "application/grpc",
      te: "trailers",
    });
    let status: string | undefined;
    req.on("trailers", (t) => (status = t["grpc-status"] as string));
    req.on("data", () => {});
    req.on("error", reject);
    req.on("close", () => (status === "0" ? resolve() : reject(new Error(`grpc-status ${status}`))));
    req.end(MESSAGE);
  });
}

interface Result {
  requests: number;
  errors: number;
  rps: number;
  p50_ms: number;
  p99_ms: number;
}

async function load(
  port: number,
  concurrency: number,
  seconds: number,
  maxRequests: number,
): Promise<Result> {
  const socket = net.connect({ host: "127.0.0.1", port, noDelay: true });
  await new Promise((r) => socket.once("connect", r));
  const session = http2.connect(`http://127.0.0.1:${port}`, { createConnection: () => socket });
  session.on("error", () => {});
  await new Promise((r) => session.once("connect", r));
  // Warm-up so JIT and connection setup stay out of the figures.
  for (let i = 0; i < 200; i++) await unary(session);
  const lat = new Float64Array(maxRequests);
  let n = 0;
  let errors = 0;
  const start = performance.now();
  const deadline = start + seconds * 1000;
  const worker = async () => {
    while (n < maxRequests && performance.now() < deadline) {
      const t0 = performance.now();
      try {
        await unary(session);
        lat[n++] = performance.now() - t0;
      } catch {
        errors++;
      }
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  const elapsed = (performance.now() - start) / 1000;
  // Dropped without GOAWAY: a bare Deno 2.9.6 node:http2 server (the backend here) aborts on a
  // GOAWAY after many streams.
  socket.destroy();
  const sorted = lat.subarray(0, n).sort();
  const q = (p: number) => (n === 0 ? NaN : sorted[Math.min(n - 1, Math.floor(p * n))]);
  return { requests: n, errors, rps: n / elapsed, p50_ms: q(0.5), p99_ms: q(0.99) };
}

async function main(): Promise<void> {
  const seconds = Number(args.get("seconds") ?? 4);
  const maxRequests = Number(args.get("max-requests") ?? 200_000);
  const backend = await spawn(["--role=backend"]);
  const proxy = await spawn(["--role=proxy", `--backend-port=${backend.port}`]);
  const out: Record<string, number> = {};
  try {
    for (const c of [1, 32]) {
      const direct = await load(backend.port, c, seconds, maxRequests);
      const cpu0 = cpuMs(proxy.proc.pid);
      const hop = await load(proxy.port, c, seconds, maxRequests);
      // Includes the warm-up requests of the phase.
      const proxyCpuMs = cpuMs(proxy.proc.pid) - cpu0;
      const perThousand = (proxyCpuMs / (hop.requests + 200)) * 1000;
      const fmt = (r: Result) =>
        `${r.rps.toFixed(0)} req/s, p50 ${r.p50_ms.toFixed(3)} ms, p99 ${r.p99_ms.toFixed(3)} ms` +
        (r.errors ? `, ${r.errors} errors` : "");
      console.log(`concurrency ${c}: direct  ${fmt(direct)}`);
      console.log(
        `concurrency ${c}: 1 hop   ${fmt(hop)}; proxy CPU ${perThousand.toFixed(0)} ms per 1000 requests`,
      );
      out[`proxy_cpu_ms_per_1000_req_c${c}`] = Math.round(perThousand);
      out[`proxy_rps_per_core_c${c}`] = Math.round(1_000_000 / perThousand);
      out[`direct_rps_c${c}`] = Math.round(direct.rps);
      out[`hop_rps_c${c}`] = Math.round(hop.rps);
      out[`direct_p50_ms_c${c}`] = round3(direct.p50_ms);
      out[`hop_p50_ms_c${c}`] = round3(hop.p50_ms);
      out[`direct_p99_ms_c${c}`] = round3(direct.p99_ms);
      out[`hop_p99_ms_c${c}`] = round3(hop.p99_ms);
      out[`added_p50_ms_c${c}`] = round3(hop.p50_ms - direct.p50_ms);
      out[`added_p99_ms_c${c}`] = round3(hop.p99_ms - direct.p99_ms);
      out[`hop_to_direct_rps_ratio_c${c}`] = round3(hop.rps / direct.rps);
      out[`errors_c${c}`] = direct.errors + hop.errors;
    }
  } finally {
    for (const [name, ch] of [["proxy", proxy], ["backend", backend]] as const) {
      try {
        ch.proc.kill("SIGTERM");
      } catch {
        console.error(`${name} process had already exited: ${JSON.stringify(await ch.proc.status)}`);
      }
      await ch.proc.status;
    }
  }
  console.log(JSON.stringify(out));
}

/** CPU time (user + system) of a process so far, in ms, from /proc (Linux). */
function cpuMs(pid: number): number {
  const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
  const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return ((Number(f[11]) + Number(f[12])) * 1000) / 100; // utime, stime in clock ticks (USER_HZ 100)
}

function round3(x: number): number {
  return Math.round(x * 1000) / 1000;
}

if (role === "backend") await runBackend();
else if (role === "proxy") await runProxy(Number(args.get("backend-port")));
else await main();
