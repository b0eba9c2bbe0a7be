/**
 * The demo's load generator: a fixed, modest request rate against one demo service, bounded in flight.
 *   MODE=http  GET TARGET?n=<i>            (success: status 200)
 *   MODE=grpc  weft.demo.Echo at TARGET (host:port): Say, and every STREAM_EVERY-th call a Count stream of
 *              STREAM_COUNT replies (success: OK status and every reply received)
 *   MODE=tcp   a new connection to TARGET (host:port) per exchange: one line out, its echo back, close
 * RATE (per second, default 5), MAX_IN_FLIGHT (10: a tick finding that many outstanding is counted as
 * `skipped`, never queued), TIMEOUT_MS (2000), MAX_REQUESTS (0 = no limit) and DURATION_S (0 = no limit) bound it.
 * What the client itself saw is served on METRICS_PORT (9990) `/metrics` (demo_client_requests_total{result},
 * demo_client_latency_ms) and `/ready`; the demo reads the proxies' metrics first and these only as the client's
 * own view.
 */
import * as grpc from "@grpc/grpc-js";
import { Counter, Histogram, Registry } from "prom-client";
import { EchoClient, type EchoReply } from "./echo_proto.ts";
import { onTerm } from "./shutdown.ts";

const mode = Deno.env.get("MODE") ?? "http";
const target = Deno.env.get("TARGET") ?? "";
const rate = Number(Deno.env.get("RATE") ?? "5");
const maxInFlight = Number(Deno.env.get("MAX_IN_FLIGHT") ?? "10");
const timeoutMs = Number(Deno.env.get("TIMEOUT_MS") ?? "2000");
const maxRequests = Number(Deno.env.get("MAX_REQUESTS") ?? "0");
const durationS = Number(Deno.env.get("DURATION_S") ?? "0");
const metricsPort = Number(Deno.env.get("METRICS_PORT") ?? "9990");
const streamEvery = Number(Deno.env.get("STREAM_EVERY") ?? "5");
const streamCount = Number(Deno.env.get("STREAM_COUNT") ?? "5");
const pod = Deno.env.get("POD_NAME") ?? Deno.hostname();

if (!["http", "grpc", "tcp"].includes(mode)) throw new Error(`MODE must be http, grpc or tcp, got "${mode}"`);
if (!target) throw new Error("TARGET is required (a URL for http, host:port for grpc and tcp)");
if (!(rate > 0 && rate <= 100)) throw new Error(`RATE must be in (0, 100] requests per second, got ${rate}`);

const registry = new Registry();
const requests = new Counter({
  name: "demo_client_requests_total",
  help: "Requests the demo client made, by call and result",
  labelNames: ["call", "result"],
  registers: [registry],
});
const latency = new Histogram({
  name: "demo_client_latency_ms",
  help: "Latency the demo client saw for successful requests, milliseconds",
  labelNames: ["call"],
  buckets: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000],
  registers: [registry],
});
let lastError = "";

async function httpCall(i: number): Promise<string> {
  const res = await fetch(`${target}${target.includes("?") ? "&" : "?"}n=${i}`, {
    signal: AbortSignal.timeout(timeoutMs),
  });
  await res.body?.cancel();
  if (res.status !== 200) throw new Error(`status ${res.status}`);
  return "get";
}

let grpcClient: InstanceType<typeof EchoClient> | undefined;
function grpcCall(i: number): Promise<string> {
  grpcClient ??= new EchoClient(target, grpc.credentials.createInsecure());
  const client = grpcClient;
  const deadline = Date.now() + timeoutMs;
  if (streamEvery > 0 && i % streamEvery === 0) {
    return new Promise((resolve, reject) => {
      const got: EchoReply[] = [];
      const call = client.count({ count: streamCount, intervalMs: 10 }, { deadline });
      call.on("data", (r: EchoReply) => got.push(r));
      call.on("error", (e: Error) => reject(e));
      call.on(
        "end",
        () =>
          got.length === streamCount
            ? resolve("count")
            : reject(new Error(`stream ended after ${got.length} of ${streamCount} replies`)),
      );
    });
  }
  return new Promise((resolve, reject) => {
    client.say({ text: `hello ${i}` }, { deadline }, (err, res) => {
      if (err) reject(err);
      else if (res?.text !== `hello ${i}`) reject(new Error(`wrong reply ${JSON.stringify(res)}`));
      else resolve("say");
    });
  });
}

const [tcpHost, tcpPort] = mode === "tcp" ? splitHostPort(target) : ["", 0];
function splitHostPort(hp: string): [string, number] {
  const i = hp.lastIndexOf(":");
  if (i < 0) throw new Error(`TARGET "${hp}" must be host:port`);
  return [hp.slice(0, i), Number(hp.slice(i + 1))];
}

async function tcpCall(i: number): Promise<string> {
  const signal = AbortSignal.timeout(timeoutMs);
  const conn = await Deno.connect({ hostname: tcpHost, port: tcpPort, signal } as Deno.ConnectOptions);
  const onAbort = () => conn.close();
  signal.addEventListener("abort", onAbort);
  try {
    const line = `ping ${i}\n`;
    await conn.write(new TextEncoder().encode(line));
    const buf = new Uint8Array(512);
    let have = 0;
    while (!buf.subarray(0, have).includes(10)) {
      const n = await conn.read(buf.subarray(have));
      if (n === null) throw new Error(`connection closed after ${have} bytes`);
      have += n;
      if (have === buf.length) throw new Error("reply line too long");
    }
    const reply = new TextDecoder().decode(buf.subarray(0, have));
    if (!reply.endsWith(` ${line}`)) throw new Error(`wrong echo ${JSON.stringify(reply)}`);
    return "line";
  } catch (e) {
    throw signal.aborted ? new Error(`timed out after ${timeoutMs} ms`) : e;
  } finally {
    signal.removeEventListener("abort", onAbort);
    try {
      conn.close();
    } catch { /* closed by the timeout */ }
  }
}

const call = mode === "http" ? httpCall : mode === "grpc" ? grpcCall : tcpCall;
let sent = 0;
let inFlight = 0;
let failuresLogged = 0;

function tick(): void {
  if (
    (maxRequests > 0 && sent >= maxRequests) || (durationS > 0 && Date.now() - started > durationS * 1000)
  ) {
    clearInterval(timer);
    console.log(`load ${pod}: done after ${sent} requests`);
    return;
  }
  if (inFlight >= maxInFlight) {
    requests.inc({ call: "any", result: "skipped" });
    return;
  }
  const i = ++sent;
  inFlight++;
  const t0 = performance.now();
  call(i).then(
    (name) => {
      requests.inc({ call: name, result: "success" });
      latency.observe({ call: name }, performance.now() - t0);
    },
    (e: Error) => {
      requests.inc({ call: mode, result: "failure" });
      lastError = e.message;
      // Each failure with its time, so a test can line it up with what the proxies logged.
      if (failuresLogged++ < 100) {
        console.log(
          `load ${pod}: request ${i} sent ${new Date(Date.now() - (performance.now() - t0)).toISOString()} ` +
            `failed after ${Math.round(performance.now() - t0)} ms: ${e.message}`,
        );
      }
    },
  ).finally(() => inFlight--);
}

const started = Date.now();
const timer = setInterval(tick, 1000 / rate);
const summary = setInterval(async () => {
  const m = (await registry.getSingleMetricAsString("demo_client_requests_total")).split("\n")
    .filter((l) => !l.startsWith("#")).join(", ");
  console.log(`load ${pod} -> ${target}: ${m}${lastError ? `; last error: ${lastError}` : ""}`);
}, 30_000);

const stop = new AbortController();
const metrics = Deno.serve(
  {
    port: metricsPort,
    hostname: "0.0.0.0",
    signal: stop.signal,
    onListen: () => console.log(`load ${pod}: ${mode} ${target} at ${rate}/s, metrics on :${metricsPort}`),
  },
  async (req) => {
    const path = new URL(req.url).pathname;
    if (path === "/ready") return new Response("ok\n");
    if (path === "/metrics") {
      return new Response(await registry.metrics(), { headers: { "content-type": registry.contentType } });
    }
    return new Response("not found\n", { status: 404 });
  },
);
onTerm(async () => {
  clearInterval(timer);
  clearInterval(summary);
  // Let the calls end, then leave the gRPC channel open: the process exit closes its connection
  // with a FIN. Closing the channel sends GOAWAY, and a Deno 2.9.6 node:http2 server (the demo's
  // gRPC service, when this client calls it directly as in tests/demo/apps_test.ts) aborts on a
  // GOAWAY it receives (nghttp2 assertion in find_stream_on_goaway_func, denoland/deno#36788), even
  // with no stream open: 4 of 5 runs aborted it; with the FIN, 0 of 6.
  const deadline = Date.now() + timeoutMs;
  while (inFlight > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
  stop.abort();
  await metrics.finished;
});
