/**
 * The "one client floods, everyone else certifies" scenario, shared by hostile_test.ts and the
 * bench: a real identity gRPC server on 127.0.0.1 whose TokenReviews go through
 * KubeTokenReviewer to an HTTP stand-in of the API server (with a latency), well-behaved proxies
 * (each its own ServiceAccount, token, CSR and channel) certifying in turn, and optionally one
 * flooder (a Worker, or a niced process). Returns what each side saw.
 */
import * as grpc from "@grpc/grpc-js";
import { Registry } from "prom-client";
import { IdentityClient } from "../../proto/gen/identity.ts";
import { systemClock } from "../../proto/support/clock.ts";
import type { FloodOptions, FloodResult } from "./certify_flood.ts";
import { serveTokenReviewApi } from "./fake_token_review_api.ts";
import { serveIdentityGrpc } from "./grpc_server.ts";
import { IdentityMetrics } from "./metrics.ts";
import { CertifyService } from "./service.ts";
import { csrFor, identityOf, makeCa, TEST_CERTIFY_CONFIG, testTokenScreen } from "./test_pki.ts";
import { serviceAccountJwt } from "./test_tokens.ts";
import { KubeTokenReviewer } from "./token_review.ts";
import { TokenValidator, type TokenValidatorOptions } from "./token_validator.ts";

export interface ScenarioOptions {
  /** Well-behaved proxies, each certifying `certifiesPerProxy` times one after another. */
  proxies: number;
  certifiesPerProxy: number;
  /**
   * A proxy starts its next Certify this long after the previous one started (or when it ends, if
   * later); 0 sends them back to back. Proxies are staggered evenly over one interval.
   */
  proxyIntervalMs: number;
  /** Concurrent calls of the flooder; 0 runs without a flood. */
  floodConcurrency: number;
  /** Connections the flooder spreads them over. */
  floodConnections: number;
  /**
   * Where the flooder runs: a Worker of this process (its client work competes with the server for
   * CPU at equal priority), or a process under `nice -n 19` (standing in for a flooder on another
   * node). Default "worker".
   */
  floodIn?: "worker" | "niced-process";
  /** Upper bound on the flooder's calls. */
  floodMaxCalls: number;
  /** How long the flood runs before the proxies start. */
  floodLeadMs: number;
  reviewLatencyMs: number;
  validator: Omit<TokenValidatorOptions, "audiences">;
}

export interface ScenarioResult {
  /** Certify latencies of the well-behaved proxies, sorted, ms. */
  goodLatenciesMs: number[];
  /** Refusals the well-behaved proxies got (should be none). */
  goodErrors: string[];
  flood?: FloodResult;
  /** From the flooder's first calls to its stop. */
  floodSeconds: number;
  /**
   * How late a 10 ms timer on the server's event loop fired while the proxies certified, p99, ms:
   * the part of their latency that is CPU contention rather than waiting for a TokenReview.
   */
  eventLoopLagP99Ms: number;
  /** Main-thread CPU per wall second while the proxies certified (1 = a whole core), if known. */
  mainThreadCpuShare?: number;
  /** Reviews the API stand-in answered, and the most at once. */
  apiReviews: number;
  apiMaxInFlight: number;
  metrics: string;
}

const AUDIENCE = "identity.l5d.io";

/**
 * CPU seconds of this process's main thread (the server, the proxies' clients and the API stand-in;
 * not the flooder's Worker), from /proc; undefined where that is not readable.
 */
function mainThreadCpuSeconds(): number | undefined {
  try {
    const stat = Deno.readTextFileSync(`/proc/self/task/${Deno.pid}/stat`);
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(fields[11]) + Number(fields[12])) / 100; // utime, stime in USER_HZ (100)
  } catch {
    return undefined;
  }
}

export function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

export async function runCertifyScenario(opts: ScenarioOptions): Promise<ScenarioResult> {
  const ca = await makeCa();
  const proxies = await Promise.all(Array.from({ length: opts.proxies }, async (_, i) => {
    const sa = `good-${i}`;
    const identity = identityOf(sa, "good");
    return { sa, identity, token: serviceAccountJwt("good", sa), csr: (await csrFor(identity)).der };
  }));
  const known = new Map(proxies.map((p) => [p.token, p.sa]));
  const api = serveTokenReviewApi({
    latencyMs: opts.reviewLatencyMs,
    answer: (token, audiences) => {
      const sa = known.get(token);
      if (!sa || !audiences.includes(AUDIENCE)) {
        return {
          authenticated: false,
          error: "[invalid bearer token, square/go-jose: error in cryptographic primitive]",
        };
      }
      return {
        authenticated: true,
        user: { username: `system:serviceaccount:good:${sa}` },
        audiences: [AUDIENCE],
      };
    },
  });
  const registry = new Registry();
  const metrics = new IdentityMetrics(registry);
  const validator = new TokenValidator(
    new KubeTokenReviewer(api.kc),
    { audiences: [AUDIENCE], ...opts.validator },
    systemClock,
    metrics,
  );
  const service = new CertifyService({
    config: TEST_CERTIFY_CONFIG,
    issuer: () => ca.issuer,
    screenToken: testTokenScreen(AUDIENCE),
    validateToken: (t, client) => validator.validate(t, client),
    clock: systemClock,
    metrics,
  });
  const server = await serveIdentityGrpc({ service, registry, address: "127.0.0.1:0" });

  let flooder: Flooder | undefined;
  let floodBegin = performance.now();
  const goodLatenciesMs: number[] = [];
  const goodErrors: string[] = [];
  try {
    if (opts.floodConcurrency > 0) {
      const start: FloodOptions = {
        port: server.port,
        concurrency: opts.floodConcurrency,
        connections: opts.floodConnections,
        maxCalls: opts.floodMaxCalls,
      };
      flooder = opts.floodIn === "niced-process" ? startProcessFlooder(start) : startWorkerFlooder(start);
      await Promise.race([flooder.started, flooder.done]);
      floodBegin = performance.now();
      await new Promise((r) => setTimeout(r, opts.floodLeadMs));
    }
    const cpu0 = mainThreadCpuSeconds();
    const wall0 = performance.now();
    const lags: number[] = [];
    let expected = performance.now() + 10;
    const lagTimer = setInterval(() => {
      const now = performance.now();
      lags.push(Math.max(0, now - expected));
      expected = now + 10;
    }, 10);
    await Promise.all(proxies.map(async (p, n) => {
      const t0 = performance.now() + (opts.proxyIntervalMs * n) / proxies.length;
      const client = new IdentityClient(`127.0.0.1:${server.port}`, grpc.credentials.createInsecure(), {
        "grpc.use_local_subchannel_pool": 1, // its own connection, as each proxy has
      });
      const token = new TextEncoder().encode(p.token);
      try {
        for (let i = 0; i < opts.certifiesPerProxy; i++) {
          const due = t0 + i * opts.proxyIntervalMs;
          if (opts.proxyIntervalMs > 0 && due > performance.now()) {
            await new Promise((r) => setTimeout(r, due - performance.now()));
          }
          const begin = performance.now();
          const err = await new Promise<grpc.ServiceError | null>((resolve) =>
            client.certify(
              { identity: p.identity, token, certificateSigningRequest: p.csr },
              new grpc.Metadata(),
              { deadline: Date.now() + 30_000 },
              (e) => resolve(e),
            )
          );
          goodLatenciesMs.push(performance.now() - begin);
          if (err) goodErrors.push(`${p.sa}: ${grpc.status[err.code]} ${err.details}`);
        }
      } finally {
        client.close();
      }
    }));
    clearInterval(lagTimer);
    const cpu1 = mainThreadCpuSeconds();
    const mainThreadCpuShare = cpu0 !== undefined && cpu1 !== undefined
      ? (cpu1 - cpu0) / ((performance.now() - wall0) / 1000)
      : undefined;
    lags.sort((a, b) => a - b);
    flooder?.stop();
    const floodSeconds = (performance.now() - floodBegin) / 1000;
    const flood = await flooder?.done;
    goodLatenciesMs.sort((a, b) => a - b);
    return {
      goodLatenciesMs,
      goodErrors,
      flood,
      floodSeconds,
      eventLoopLagP99Ms: lags.length > 0 ? percentile(lags, 99) : 0,
      mainThreadCpuShare,
      apiReviews: api.reviews,
      apiMaxInFlight: api.maxInFlight,
      metrics: await registry.metrics(),
    };
  } finally {
    await flooder?.kill();
    await server.close(1000);
    validator.close();
    await api.close();
  }
}

interface Flooder {
  /** Resolves once the flooder's calls go out. */
  started: Promise<void>;
  /** The flooder's tally, after stop(). */
  done: Promise<FloodResult>;
  stop(): void;
  kill(): Promise<void>;
}

function startWorkerFlooder(start: FloodOptions): Flooder {
  const w = new Worker(new URL("./certify_flood_worker.ts", import.meta.url), { type: "module" });
  let started!: () => void;
  const startedP = new Promise<void>((r) => started = r);
  const done = new Promise<FloodResult>((resolve, reject) => {
    w.onmessage = (e: MessageEvent<FloodResult | "started">) =>
      e.data === "started" ? started() : resolve(e.data);
    w.onerror = (e) => {
      e.preventDefault();
      reject(new Error(`flood worker: ${e.message}`));
    };
  });
  w.postMessage(start);
  return {
    started: startedP,
    done,
    stop: () => w.postMessage("stop"),
    kill: () => Promise.resolve(w.terminate()),
  };
}

function startProcessFlooder(start: FloodOptions): Flooder {
  const main = new URL("./certify_flood_main.ts", import.meta.url).pathname;
  const child = new Deno.Command("nice", {
    args: ["-n", "19", Deno.execPath(), "run", "-A", main, JSON.stringify(start)],
    stdin: "piped",
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const lines = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let buffered = "";
  const nextLine = async (): Promise<string> => {
    while (!buffered.includes("\n")) {
      const { value, done } = await lines.read();
      if (done) throw new Error(`flood process ended: ${buffered}`);
      buffered += value;
    }
    const i = buffered.indexOf("\n");
    const line = buffered.slice(0, i);
    buffered = buffered.slice(i + 1);
    return line;
  };
  const startedP = nextLine().then((l) => {
    if (l !== "started") throw new Error(`flood process said ${l}`);
  });
  const done = startedP.then(nextLine).then((l) => JSON.parse(l) as FloodResult);
  done.catch(() => {});
  return {
    started: startedP,
    done,
    stop: () => void child.stdin.close().catch(() => {}),
    kill: async () => {
      try {
        child.kill("SIGKILL");
      } catch { /* already gone */ }
      await lines.cancel().catch(() => {});
      await child.status;
    },
  };
}
